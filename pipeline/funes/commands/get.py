"""`funes get`: the turns around one turn of one session, reassembled from its chunks."""

from __future__ import annotations

from funes.errors import UsageError
from funes.memory import Memory
from funes.results import GetResult
from funes.retrieval.retriever import cached


def get(session_id: str, turn_uuid: str, *, memory: str | None = None, window: int = 3) -> GetResult:
    if not (session_id or "").strip() or not (turn_uuid or "").strip():
        raise UsageError("get needs a session id and a turn id — copy them from a recall hit's `→ get` line")
    if window < 0:
        raise UsageError("--window must be 0 or more")
    return cached(Memory.resolve(memory).require()).get(session_id, turn_uuid, window)
