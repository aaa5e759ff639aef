"""`funes get`: the turns around one turn of one session, reassembled from its chunks."""

from __future__ import annotations

from funes.commands.reading import answer, memory_list
from funes.errors import FunesError, UsageError
from funes.results import GetResult


def get(session_id: str, turn_uuid: str, *, memory: str | None = None, window: int = 3, progress=None) -> GetResult:
    if not (session_id or "").strip() or not (turn_uuid or "").strip():
        raise UsageError("get needs a session id and a turn id — copy them from a recall hit's `→ get` line")
    if window < 0:
        raise UsageError("--window must be 0 or more")
    specs = memory_list(memory)
    for i, spec in enumerate(specs):  # a list (`local,acme/mem`): the first memory that holds the turn
        try:
            return answer(spec, lambda r: r.get(session_id, turn_uuid, window), progress)
        except FunesError:
            if i == len(specs) - 1:
                raise
    raise AssertionError("memory_list is never empty")
