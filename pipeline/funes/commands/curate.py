"""`funes curate REMOTE REPO [--include S] [--exclude S]`: name a project memory and decide what it ships.

With no decision flags on a terminal, `review` walks the sessions that wait (undecided, or grown since
review) one at a time; each answer is appended to the decisions file as it is given, so quitting midway
keeps every earlier answer.
"""

from __future__ import annotations

from collections.abc import Callable

from funes.errors import UsageError
from funes.memory import Memory, curation, spec
from funes.render.curation import PROMPT, session_preview
from funes.results import Reviewed, SessionView

_ANSWERS = {"i": "include", "include": "include", "e": "exclude", "exclude": "exclude", "s": "skip", "skip": "skip"}
_QUIT = {"q", "quit"}
# user-role text the harness wrote, not the person: command wrappers, reminders, skill and resume preambles
_SCAFFOLD = ("<", "Base directory for this skill", "This session is being continued from a previous conversation")


def curate(remote: str, project: str | None, include: list[str], exclude: list[str]) -> curation.Partition:
    repo_id = _repo_id(remote)
    counts = chunks_per_session(Memory.resolve(None).require())
    unknown = [s for s in include + exclude if s not in counts]
    if unknown:
        raise UsageError(f"no session {unknown[0]} in the local memory", "see the sessions `funes curate REMOTE` lists")
    _require_project(remote, repo_id, project)
    lines = [f"include {s} {counts[s]}" for s in include] + [f"exclude {s}" for s in exclude]
    curation.record(repo_id, lines, project)
    return curation.partition(curation.load(repo_id), counts)


def waiting(remote: str) -> list[str]:
    """Sessions waiting for review, oldest first (by their first timestamp)."""
    mem = Memory.resolve(None).require()
    p = curation.partition(curation.load(_repo_id(remote)), chunks_per_session(mem))
    return _by_start(mem, p.undecided | p.grown)


def review(remote: str, project: str | None, ask: Callable[[str], str | None], say: Callable[[str], None]) -> Reviewed:
    """Ask include / exclude / skip / quit per waiting session; `ask` returns None at end of input."""
    repo_id = _repo_id(remote)
    mem = Memory.resolve(None).require()
    _require_project(remote, repo_id, project)
    if project is not None:
        curation.record(repo_id, [], project)
    counts = chunks_per_session(mem)
    decisions = curation.load(repo_id)
    p = curation.partition(decisions, counts)
    order = _by_start(mem, p.undecided | p.grown)
    done = Reviewed(total=len(order))
    for n, sid in enumerate(order, 1):
        say(session_preview(_view(mem, sid, sid in p.grown), n, len(order)))
        answer = _answer(ask, say)
        if answer is None:
            done.left = len(order) - n + 1
            break
        if answer == "skip":
            done.skipped += 1
            continue
        # the size the person saw is the size they approved: later growth waits for another review
        curation.record(repo_id, [f"include {sid} {counts[sid]}" if answer == "include" else f"exclude {sid}"])
        if answer == "include":
            done.included += 1
        else:
            done.excluded += 1
    return done


def _answer(ask: Callable[[str], str | None], say: Callable[[str], None]) -> str | None:
    while True:
        raw = ask(PROMPT)
        if raw is None or raw.strip().lower() in _QUIT:
            return None
        got = _ANSWERS.get(raw.strip().lower())
        if got is not None:
            return got
        say("  answer i (include), e (exclude), s (skip) or q (quit)\n")


def _repo_id(remote: str) -> str:
    target = spec.parse(remote)
    if target.repo_id is None or target.revision:
        raise UsageError(f"curate names a Hub memory, not {remote}", "give owner/name, e.g. acme/mem")
    return target.repo_id


def _require_project(remote: str, repo_id: str, project: str | None) -> None:
    if project is None and curation.load(repo_id).project is None:
        raise UsageError(
            f"{repo_id} is not a project memory yet", f"name its repository: funes curate {remote} OWNER/REPO"
        )


def chunks_per_session(mem: Memory) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sid in mem.chunks.scan(["session_id"]).column("session_id").to_pylist():
        counts[sid] = counts.get(sid, 0) + 1
    return counts


def _by_start(mem: Memory, sessions: set[str]) -> list[str]:
    t = mem.chunks.scan(["session_id", "ts"])
    first: dict[str, str] = {}
    for sid, ts in zip(t.column("session_id").to_pylist(), t.column("ts").to_pylist(), strict=True):
        if sid in sessions and ts and (sid not in first or ts < first[sid]):
            first[sid] = ts
    return sorted(sessions, key=lambda s: (first.get(s, ""), s))


def _view(mem: Memory, sid: str, grown: bool) -> SessionView:
    cols = ["turn_uuid", "seq", "ts", "role", "block_type", "block_idx", "split_idx", "text", "harness", "workdir"]
    rows = sorted(
        mem.chunks.session_rows(sid, cols).to_pylist(), key=lambda r: (r["seq"], r["block_idx"], r["split_idx"])
    )
    user: dict[str, list[str]] = {}
    for r in rows:
        if r["role"] == "user" and r["block_type"] == "text" and not (r["text"] or "").lstrip().startswith(_SCAFFOLD):
            user.setdefault(r["turn_uuid"], []).append(r["text"] or "")
    first = rows[0] if rows else {}
    return SessionView(
        session_id=sid,
        harness=first.get("harness") or "",
        workdir=first.get("workdir") or "",
        started=min((r["ts"] for r in rows if r["ts"]), default=""),
        turns=len({r["turn_uuid"] for r in rows}),
        user_turns=["".join(parts) for parts in user.values()],
        grown=grown,
    )
