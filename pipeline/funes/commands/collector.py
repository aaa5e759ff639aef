"""Keep Python's cyclic garbage collector from walking an index run's heap again and again.

A day-zero round allocates millions of containers (parsed records, column lists, chunk rows)
that live until their flush, and almost none of them form cycles (a 3,000-session run leaves
~800 cyclic objects). At the default threshold (a young collection every 700 net allocations)
the collector ran ~1,900 young and 7 full collections in a 9,000-session text pass, each full one
walking every imported module's objects too: ~1.1 CPU-s of ~17 (bench/README.md, "Issue 13: the
parent's own CPU"). During the run the imports are frozen out of the collector's sight and young
collections come every `YOUNG` allocations; both are put back when the run ends, however it ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# net container allocations between young collections during an index run (default 700): at
# 10,000 the same pass ran 111 young and no full collection (0.27 CPU-s); 20,000 bought nothing more
YOUNG = 10_000


@contextmanager
def bulk() -> Iterator[None]:
    """An index run's collector settings, restored on the way out (a server or the hook worker
    that indexes goes on with its own)."""
    old = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0  # a host's own freeze is its own to undo
    if freeze:
        gc.freeze()
    gc.set_threshold(max(YOUNG, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()
