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
from funes.memory import lance as lt

BLOCK_KEY = ("session_id", "turn_uuid", "block_idx")
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


def require_scanners() -> dict[str, str]:
    """Every engine's version, or GateUnavailable naming the one that is missing and the fix."""
    found = scan.engines()
    missing = {k: v for k, v in found.items() if v.startswith("unavailable")}
    if missing:
        name, why = next(iter(missing.items()))
        raise GateUnavailable(
            f"the secret gate cannot run: {name} is {why}; nothing was published",
            "pip install kingfisher-bin detect-secrets (and unset FUNES_KINGFISHER), then run the same command again",
        )
    return found


def _pieces(ds, sessions: list[str]) -> dict[tuple, list[tuple[int, str]]]:
    """Every stored piece of every block of these sessions, keyed by block."""
    out: dict[tuple, list[tuple[int, str]]] = {}
    for lo in range(0, len(sessions), _SESSIONS_PER_QUERY):
        part = sessions[lo : lo + _SESSIONS_PER_QUERY]
        flt = "session_id IN (" + ", ".join(lt.quote(s) for s in part) + ")"
        t = ds.to_table(columns=[*BLOCK_KEY, "split_idx", "text"], filter=flt)
        cols = [t[c].to_pylist() for c in (*BLOCK_KEY, "split_idx", "text")]
        for s, turn, b, split, text in zip(*cols):
            out.setdefault((s, turn, b), []).append((split, text))
    return out


def check(ds, rows: pa.Table, held: Held) -> list[bool]:
    """Per outgoing row (needs the block key columns and id): True when it may leave.
    Scanner failures propagate as FunesError, before anything is uploaded."""
    keys = list(zip(*(rows[c].to_pylist() for c in BLOCK_KEY)))
    if not keys:
        return []
    pieces = _pieces(ds, sorted({k[0] for k in keys}))
    blocks = sorted(set(keys))
    texts = [reconstruct([t for _, t in sorted(dict(pieces.get(k, [])).items())]) for k in blocks]
    try:
        found = scan.find(texts)
    except FunesError as e:
        raise GateUnavailable(f"the secret gate failed ({e.message}); nothing was published", e.hint) from None
    dirty = {k: sorted({f.kind for f in fs}) for k, fs in zip(blocks, found) if fs}
    for k, kinds in dirty.items():
        held.kinds.update(kinds)
        held.sessions.setdefault(k[0], Counter()).update(kinds)
    ids = rows["id"].to_pylist()
    ok = []
    for i, k in enumerate(keys):
        ok.append(k not in dirty)
        if k in dirty:
            held.rows += 1
            held.ids.add(ids[i])
    return ok
