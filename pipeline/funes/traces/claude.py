"""Claude Code transcripts (~/.claude/projects/<munged-cwd>/<session>.jsonl) -> the turns frame.

As upstream-spec 1.3: session_id is the file stem (subagents: `agent-<id>`), only `user` and
`assistant` records count, Claude tool results keep role `user`. Changed from upstream: a record
with no `uuid` (or one repeating an earlier uuid) gets `<session>-<seq>` instead of colliding on
"" (upstream would store only the first such turn); a file with no retained turn is counted as
"no turns" so the index report can say why it produced nothing.
"""

from __future__ import annotations

from pathlib import Path

from funes.traces import Parsed, Unit
from funes.traces.frame import (
    Block,
    Turn,
    backfill_tool_names,
    blank,
    build_rows,
    compact_json,
    flatten,
    munge_workdir,
    parsed,
    str_or_none,
    text_blocks,
)
from funes.traces.jsonl import fallback_workdir, file_units, read_bytes, records_of, walk_jsonl

HARNESS = "claude_code"


def units(root: Path, limit: int | None = None) -> list[Unit]:
    return file_units(walk_jsonl(root), HARNESS, limit)


def read(unit: Unit) -> Parsed:
    data = read_bytes(unit.path)
    records, skipped = records_of(data)
    turns = [t for t in (record_turn(r) for r in records) if t is not None]
    backfill_tool_names(turns)
    frame = build_rows(unit.path.stem, workdir(records, unit.path), turns, str(unit.path), HARNESS, data)
    return parsed(frame, skipped)


def workdir(records: list[dict], path: Path) -> str:
    """The first record's cwd that munges to something, else the path fallback."""
    for r in records:
        munged = munge_workdir(r.get("cwd"))
        if munged:
            return munged
    return fallback_workdir(path)


def record_turn(record: dict) -> Turn | None:
    kind = record.get("type")
    if kind not in ("user", "assistant"):
        return None  # summary, system, progress, file-history-snapshot, attachment, ...
    message = record.get("message")
    message = message if isinstance(message, dict) else {}
    role = message.get("role")
    uuid, parent, ts = record.get("uuid"), record.get("parentUuid"), record.get("timestamp")
    return Turn(
        turn_uuid=uuid if isinstance(uuid, str) else "",
        role=role if isinstance(role, str) else kind,
        ts=ts if isinstance(ts, str) else "",
        blocks=content_blocks(message.get("content")),
        parent_uuid=parent if isinstance(parent, str) else None,
    )


def content_blocks(content: object) -> list[Block]:
    if not isinstance(content, list):
        return text_blocks(content)  # a string is one text block; anything else none
    blocks = (element_block(e) for e in content if isinstance(e, dict))
    return [b for b in blocks if b is not None]


def element_block(e: dict) -> Block | None:
    kind = e.get("type")
    if kind == "text":
        return None if blank(e.get("text")) else Block("text", e["text"])
    if kind == "thinking":
        return None if blank(e.get("thinking")) else Block("thinking", e["thinking"])
    if kind == "tool_use":
        return Block("tool_use", compact_json(e.get("input", {})), str_or_none(e.get("name")), str_or_none(e.get("id")))
    if kind == "tool_result":
        text = flatten(e.get("content"))
        return None if blank(text) else Block("tool_result", text, None, str_or_none(e.get("tool_use_id")))
    return None  # image, redacted_thinking, server tool blocks: nothing to recall by text
