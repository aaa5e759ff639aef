"""`funes get`: the turns around one turn of one session, reassembled from its chunks."""

from __future__ import annotations

from funes.commands.reading import answer
from funes.errors import UsageError
from funes.results import GetResult


def get(session_id: str, turn_uuid: str, *, memory: str | None = None, window: int = 3, progress=None) -> GetResult:
    if not (session_id or "").strip() or not (turn_uuid or "").strip():
        raise UsageError("get needs a session id and a turn id — copy them from a recall hit's `→ get` line")
    if window < 0:
        raise UsageError("--window must be 0 or more")
    return answer(memory, lambda r: r.get(session_id, turn_uuid, window), progress)
