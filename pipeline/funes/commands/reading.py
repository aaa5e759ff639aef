"""How a read command (recall, get) reaches its memory: resolve, refuse, repair, reuse the warm Retriever.

A local memory: its state is asked, stale indexes are repaired when the command wants it (the
one write a read may make: rows a crashed or older indexer stored but never indexed), and the
process's Retriever answers. A remote this process has read before: the head lookup (a network
round trip) runs on a thread while the work runs on the snapshot of the last commit seen; when
the head turns out to have moved, the work runs again on the new commit. A warm call so costs the
longer of the two rather than their sum, and never answers from a stale commit.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from funes.errors import FunesError
from funes.memory import Memory, indexes
from funes.memory.remote import RemoteMemory
from funes.retrieval.retriever import Retriever, cached, last_remote

T = TypeVar("T")


def answer(
    spec: str | None, work: Callable[[Retriever], T], progress=None, repair: bool = False, wait: float = 0.0
) -> T:
    """`work(retriever)` on the memory's current state (its refusal raised when it is not readable);
    `repair` lets a local memory's stale indexes be rebuilt first, waiting up to `wait` s for a busy writer."""
    memory: Memory | RemoteMemory = Memory.open(spec)
    last = last_remote(memory) if isinstance(memory, RemoteMemory) else None
    if last is None:
        memory = memory.require()
        if repair and not memory.remote:
            indexes.refresh_if_stale(memory, wait=wait)
        return work(cached(memory, progress))
    with ThreadPoolExecutor(1) as pool:
        fresh = pool.submit(_require, memory)
        try:
            guess: T | None = work(last)
        except FunesError:
            guess = None  # decided below, on the fresh state
        memory = fresh.result()
    if guess is not None and memory.key == last.memory.key:
        return guess
    return work(cached(memory, progress))


def _require(memory: Memory | RemoteMemory) -> Memory | RemoteMemory:
    return memory.require()


def memory_list(memory: str | None) -> list[str | None]:
    """`local,acme/mem` -> each memory once, in the order named (None = the default local memory)."""
    specs = [s.strip() for s in (memory or "").split(",") if s.strip()]
    return list(dict.fromkeys(specs)) or [None]
