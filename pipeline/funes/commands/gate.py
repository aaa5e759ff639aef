"""The egress gate: which outgoing chunk rows hold a secret, judged on whole reassembled blocks.

Always on, fail closed: every engine funes uses must be available (else nothing leaves), each
outgoing block is rebuilt from *all* of its pieces in the local memory (a secret split across two
chunks is whole again) and scanned by every engine; every outgoing row of a block with a finding
is held back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

from funes import scan
from funes.errors import FunesError
from funes.ingest.chunk import reconstruct
from funes.memory.atomic import read_json, write_json
from funes.scan import detectsecrets, kingfisher

BLOCK_KEY = ("session_id", "turn_uuid", "block_idx")
PROVENANCE = ("workdir", "source_path", "repo", "tool_name")  # other text that leaves with each row
_SESSIONS_PER_QUERY = 256


class GateUnavailable(FunesError):
    """A scanner the gate needs is missing or broken: nothing may be published."""


@dataclass
class Held:
    rows: int = 0
    kinds: Counter = field(default_factory=Counter)  # kind -> blocks (each distinct kind once per block)
    sessions: dict[str, Counter] = field(default_factory=dict)  # session -> kinds
    ids: set[str] = field(default_factory=set)

    def summary(self) -> str:
        return ", ".join(f"{k}×{n}" for k, n in sorted(self.kinds.items()))


def require_scanners() -> None:
    """GateUnavailable naming the engine that is missing and the fix, unless all three can run
    (the funes rules are built in; a broken Kingfisher binary is caught when it runs)."""
    path, why = kingfisher.binary()
    missing = None if path else ("kingfisher", why)
    if missing is None and not detectsecrets.available():
        missing = ("detect-secrets", "not installed")
    if missing:
        raise GateUnavailable(
            f"the secret gate cannot run: {missing[0]} is unavailable ({missing[1]}); nothing was published",
            "pip install kingfisher-bin detect-secrets (and unset FUNES_KINGFISHER), then run the same command again",
        )


def _pieces(chunks, sessions: list[str]) -> dict[tuple, list[tuple[int, str]]]:
    """Every stored piece of every block of these sessions, keyed by block."""
    out: dict[tuple, list[tuple[int, str]]] = {}
    for lo in range(0, len(sessions), _SESSIONS_PER_QUERY):
        t = chunks.sessions_rows(sessions[lo : lo + _SESSIONS_PER_QUERY], [*BLOCK_KEY, "split_idx", "text"])
        cols = [t[c].to_pylist() for c in (*BLOCK_KEY, "split_idx", "text")]
        for s, turn, b, split, text in zip(*cols):
            out.setdefault((s, turn, b), []).append((split, text))
    return out


def check(chunks, rows: pa.Table, held: Held) -> list[bool]:
    """Per outgoing row (needs the block key columns and id; the provenance columns when present):
    True when it may leave. Scanner failures raise GateUnavailable, before anything is uploaded."""
    keys = list(zip(*(rows[c].to_pylist() for c in BLOCK_KEY)))
    if not keys:
        return []
    pieces = _pieces(chunks, sorted({k[0] for k in keys}))
    blocks = sorted(set(keys))
    texts = [reconstruct([t for _, t in sorted(dict(pieces.get(k, [])).items())]) for k in blocks]
    meta = {c: rows[c].to_pylist() for c in PROVENANCE if c in rows.column_names}
    values = sorted({v for col in meta.values() for v in col if v})
    try:
        found = scan.find(texts + values)  # one call: one Kingfisher run per window
    except FunesError as e:
        raise GateUnavailable(f"the secret gate failed ({e.message}); nothing was published", e.hint) from None
    dirty = {k: {f.kind for f in fs} for k, fs in zip(blocks, found) if fs}
    dirty_values = {v: {f.kind for f in fs} for v, fs in zip(values, found[len(blocks) :]) if fs}
    ids, ok, tallied = rows["id"].to_pylist(), [], set()
    for i, k in enumerate(keys):
        kinds = set(dirty.get(k, ())).union(*(dirty_values.get(col[i], ()) for col in meta.values()))
        ok.append(not kinds)
        if kinds:
            held.rows += 1
            held.ids.add(ids[i])
            if k not in tallied:  # each distinct kind counted once per block
                tallied.add(k)
                held.kinds.update(kinds)
                held.sessions.setdefault(k[0], Counter()).update(kinds)
    return ok


CACHE = "gate.json"
_STEP = 4096


def holdback(mem) -> tuple[int, dict[str, int]]:
    """(rows a publish would hold back, kinds by block) over the whole local memory. Cached in
    memory/gate.json and extended over the rows appended since: rows are append-only, so a
    position once scanned never changes (scrub, the one rewrite, drops the cache)."""
    n = mem.chunks.count()
    cached = read_json(mem.path / CACHE)
    if not isinstance(cached, dict) or not 0 <= int(cached.get("rows", -1)) <= n:
        cached = {"rows": 0, "ids": [], "kinds": {}}
    if cached["rows"] < n:
        require_scanners()
        found = Held(kinds=Counter(cached["kinds"]), ids=set(cached["ids"]))
        for lo in range(cached["rows"], n, _STEP):
            part = mem.chunks.take(range(lo, min(lo + _STEP, n)), [*BLOCK_KEY, *PROVENANCE, "id"])
            check(mem.chunks, part, found)
        cached = {"rows": n, "ids": sorted(found.ids), "kinds": dict(sorted(found.kinds.items()))}
        write_json(mem.path / CACHE, cached)
    return len(cached["ids"]), cached["kinds"]


def forget(mem) -> None:
    """Drop the cache (scrub rewrote rows)."""
    (mem.path / CACHE).unlink(missing_ok=True)
