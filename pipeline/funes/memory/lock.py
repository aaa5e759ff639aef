"""The writer lock of a memory location: one writer at a time, a second one refused, never queued.

The lock file sits beside the memory folder (`paths.lock_file_for`), so the default memory and a
memory named by path are locked the same way. `writer_lock` refuses loudly (LockBusy, for the
commands that write on purpose); `try_writer_lock` answers whether it got the lock, for a caller
whose write is optional (repairing stale indexes) and must not read that from an exception.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from funes.errors import LockBusy

BUSY = "another funes memory operation is in progress; retry in a moment"


@contextmanager
def writer_lock(path: Path) -> Iterator[None]:
    """Exclusive, non-blocking: a second writer fails loudly instead of interleaving appends."""
    with try_writer_lock(path) as held:
        if not held:
            raise LockBusy(
                BUSY, "another funes command holds the memory (an index, or a recall repairing the search index)"
            )
        yield


@contextmanager
def try_writer_lock(path: Path) -> Iterator[bool]:
    """Yields True holding the lock, or False (holding nothing) when another writer has it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        HELD.add(str(path))
        try:
            yield True
        finally:
            HELD.discard(str(path))
    finally:
        os.close(fd)


HELD: set[str] = set()  # lock files this process holds now (a writer asking "is someone writing?")


def held_elsewhere(path: Path) -> bool:
    """Another process holds the writer lock now (False when this process holds it, or when the
    lock cannot even be opened: a read-only memory has no writer)."""
    if str(path) in HELD:
        return False
    try:
        with try_writer_lock(path) as held:
            return not held
    except OSError:
        return False
