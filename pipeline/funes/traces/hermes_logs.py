"""Older Hermes per-session logs (~/.hermes/sessions/<id>.jsonl, session_<id>.json) -> the turns frame.

Upstream reads only state.db; these logs hold sessions from before it (or never copied into it).
`<id>.jsonl` is one OpenAI-chat message per line (`session_meta` lines may recur and are
skipped); `session_<id>.json` is one object with `session_id`, `session_start` and `messages[]`.
A session is enumerated once: not at all if the state.db beside it holds that session id (the
database wins), and from the .jsonl when both log forms exist (it carries per-message
timestamps; the .json snapshot does not). turn_uuid is `<session>-<seq>` (logs have no message
ids), workdir the same literal `hermes` fallback as state.db sessions, ts the message's own
timestamp (naive local ISO, as recorded) else the log's `session_start`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from pathlib import Path

from funes.errors import SourceError
from funes.traces import Parsed, Unit
from funes.traces.frame import Turn, backfill_tool_names, build_frame, parsed
from funes.traces.hermes import FALLBACK_WORKDIR, HARNESS, message_blocks, rfc3339
from funes.traces.jsonl import INVALID_UTF8, MALFORMED, file_units, read_bytes, read_records

NOT_TRANSCRIPT = "not a transcript"


def session_id_of(path: Path) -> str:
    """The session id a log file's name carries (`session_<id>.json` or `<id>.jsonl`)."""
    stem = path.stem
    return stem[len("session_") :] if path.suffix == ".json" and stem.startswith("session_") else stem


def is_log(path: Path) -> bool:
    # request_dump_*.json and other files in sessions/ are API dumps, not transcripts
    return path.suffix == ".jsonl" or (path.suffix == ".json" and path.stem.startswith("session_"))


def log_files(folder: Path, known: Collection[str] = ()) -> list[Path]:
    """One file per session id not in `known`; .jsonl preferred over session_<id>.json."""
    chosen: dict[str, Path] = {}
    for p in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not is_log(p) or p.is_symlink() or not p.is_file():
            continue
        sid = session_id_of(p)
        if sid not in known and (sid not in chosen or p.suffix == ".jsonl"):
            chosen[sid] = p
    return sorted(chosen.values())


def units(root: Path, limit: int | None = None, known: Collection[str] = ()) -> list[Unit]:
    return file_units(log_files(root, known), HARNESS, limit)


def read(unit: Unit) -> Parsed:
    if unit.path.suffix == ".json":
        return read_json_log(unit.path)
    records, skipped = read_records(unit.path)
    return build(session_id_of(unit.path), records, "", unit.path, skipped)


def read_json_log(path: Path) -> Parsed:
    skipped: Counter = Counter()
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        skipped[INVALID_UTF8] += 1
        text = data.decode("utf-8", errors="replace")
    try:
        log = json.loads(text)
    except ValueError:
        skipped[MALFORMED] += 1
        return build(session_id_of(path), [], "", path, skipped)
    if not isinstance(log, dict) or not isinstance(log.get("messages"), list):
        skipped[NOT_TRANSCRIPT] += 1
        return build(session_id_of(path), [], "", path, skipped)
    sid, start = log.get("session_id"), log.get("session_start")
    sid = sid if isinstance(sid, str) else session_id_of(path)
    start = start if isinstance(start, str) else ""
    return build(sid, [m for m in log["messages"] if isinstance(m, dict)], start, path, skipped)


def build(session_id: str, messages: list[dict], default_ts: str, path: Path, skipped: Counter) -> Parsed:
    turns = []
    for m in messages:
        blocks = message_blocks(m)  # None for session_meta / system lines
        if blocks is not None:
            turns.append(Turn("", m["role"], timestamp(m.get("timestamp"), default_ts), blocks))
    backfill_tool_names(turns)  # log tool lines carry only tool_call_id
    return parsed(build_frame(session_id, FALLBACK_WORKDIR, turns, str(path), HARNESS), skipped)


def timestamp(value: object, default: str) -> str:
    if isinstance(value, str):
        return value
    return rfc3339(value) or default


def sniff_json_log(path: Path) -> bool:
    """True when a .json file is a hermes session log (an object with a `messages` list)."""
    try:
        log = json.loads(read_bytes(path).decode("utf-8", errors="replace"))
    except (SourceError, ValueError):
        return False
    return isinstance(log, dict) and isinstance(log.get("messages"), list)
