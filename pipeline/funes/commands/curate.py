"""`funes curate REMOTE REPO [--include S] [--exclude S]`: name a project memory and decide what it ships."""

from __future__ import annotations

from funes.errors import UsageError
from funes.memory import Memory, curation, spec


def curate(remote: str, project: str | None, include: list[str], exclude: list[str]) -> curation.Partition:
    target = spec.parse(remote)
    if target.repo_id is None or target.revision:
        raise UsageError(f"curate names a Hub memory, not {remote}", "give owner/name, e.g. acme/mem")
    counts = chunks_per_session(Memory.resolve(None).require())
    unknown = [s for s in include + exclude if s not in counts]
    if unknown:
        raise UsageError(f"no session {unknown[0]} in the local memory", "see the sessions `funes curate REMOTE` lists")
    if project is None and curation.load(target.repo_id).project is None:
        raise UsageError(
            f"{target.repo_id} is not a project memory yet", f"name its repository: funes curate {remote} OWNER/REPO"
        )
    lines = [f"include {s} {counts[s]}" for s in include] + [f"exclude {s}" for s in exclude]
    curation.record(target.repo_id, lines, project)
    return curation.partition(curation.load(target.repo_id), counts)


def chunks_per_session(mem: Memory) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sid in mem.chunks.scan(["session_id"]).column("session_id").to_pylist():
        counts[sid] = counts.get(sid, 0) + 1
    return counts
