"""`funes repair`: bring a damaged memory back to its last intact state without deleting anything.

The chunk table goes back to its newest version whose files are all intact (a new Lance commit;
the damaged version and its files stay on disk, unreadable manifests are moved beside the
table); vectors that do not belong to their chunks are re-mapped or set aside; the search
indexes are rebuilt where they do not load. Sessions whose chunks the restored version lacks are
read again by the next `funes index` (the ledger notices it is ahead of the table).
"""

from __future__ import annotations

from funes.errors import MemoryUnreadable
from funes.memory import Memory, State, indexes


def repair(memory: str | None = None) -> list[str]:
    """What was repaired, one line each (empty when nothing was wrong)."""
    mem = Memory.resolve(memory)
    st, msg = mem.state()
    if st not in (State.READY, State.UNREADABLE):
        mem.require()
        return []
    done = []
    with mem.lock():
        why = mem.chunks.damage()
        if why is None and st is State.UNREADABLE:
            why = msg
        if why is not None:
            version = mem.chunks.last_intact_version()
            if version is None:
                raise MemoryUnreadable(mem._damaged(why))
            new = mem.chunks.restore(version)
            done.append(
                f"chunks: {why}; version {version} (the last intact one) restored as version {new} — "
                "run `funes index` to read again the sessions it lacks"
            )
        fixed = mem.repair_vectors()
        if fixed:
            done.append("vectors: " + ", ".join(f"{k} {v}" for k, v in fixed.items()))
        stats = indexes.refresh(mem)
        if stats.get("vectors_fixed"):
            done.append("vectors: " + ", ".join(f"{k} {v}" for k, v in stats["vectors_fixed"].items()))
        if stats.get("damaged"):
            done.append(f"search index: {stats['damaged']}; rebuilt")
    return done
