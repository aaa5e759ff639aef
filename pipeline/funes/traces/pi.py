"""pi sessions (~/.pi/agent/sessions/<dir>/<file>.jsonl) -> the turns frame.

As upstream-spec 1.5 for v3 tree sessions (entries carry 8-hex `id`/`parentId`). Changed from
upstream: older linear sessions (no `version`, entries without `id`) would all share turn_uuid ""
upstream; here each turn gets `<session>-<seq>` and its parent is the previous retained turn.
A user message whose `content` is a plain string becomes a text block (upstream drops it), and a
`bashExecution` message (a command the user ran with `!`) becomes a user turn holding the
command as a `bash` tool_use and its output as the tool_result, instead of being dropped.
Compaction summaries and control entries stay skipped (derived or not conversation).
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

HARNESS = "pi"


def units(root: Path, limit: int | None = None) -> list[Unit]:
    return file_units(walk_jsonl(root), HARNESS, limit)


def read(unit: Unit) -> Parsed:
    data = read_bytes(unit.path)
    records, skipped = records_of(data)
    turns = [t for t in (entry_turn(r) for r in records) if t is not None]
    link_linear(turns, unit.path.stem)
    backfill_tool_names(turns)  # toolResult names are inline; this only fills the rare gap
    frame = build_rows(unit.path.stem, workdir(records, unit.path), turns, str(unit.path), HARNESS, data)
    return parsed(frame, skipped)


def workdir(records: list[dict], path: Path) -> str:
    header = next((r for r in records if r.get("type") == "session"), {})
    return munge_workdir(header.get("cwd")) or fallback_workdir(path)


def entry_turn(entry: dict) -> Turn | None:
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict):
        return None
    role = message.get("role")
    blocks = role_blocks(role, message)
    if blocks is None:
        return None
    parent = entry.get("parentId")
    return Turn(
        turn_uuid=str_or_none(entry.get("id")) or "",
        role={"toolResult": "tool", "bashExecution": "user"}.get(str(role), str(role)),  # role_blocks knew it
        ts=timestamp(entry.get("timestamp")),
        blocks=blocks,
        parent_uuid=parent if isinstance(parent, str) else None,
    )


def role_blocks(role: object, message: dict) -> list[Block] | None:
    if role == "user":
        return text_blocks(message.get("content"))
    if role == "assistant":
        return assistant_blocks(message.get("content"))
    if role == "toolResult":
        text = flatten(message.get("content"))
        name, call = str_or_none(message.get("toolName")), str_or_none(message.get("toolCallId"))
        return [] if blank(text) else [Block("tool_result", text, name, call)]
    if role == "bashExecution":
        return bash_blocks(message)
    return None


def assistant_blocks(content: object) -> list[Block]:
    blocks = []
    for e in content if isinstance(content, list) else []:
        kind = e.get("type") if isinstance(e, dict) else None
        if kind == "thinking" and not blank(e.get("thinking")):
            blocks.append(Block("thinking", e["thinking"]))
        elif kind == "text" and not blank(e.get("text")):  # pi often emits whitespace-only text
            blocks.append(Block("text", e["text"]))
        elif kind == "toolCall":
            args = compact_json(e.get("arguments", {}))
            blocks.append(Block("tool_use", args, str_or_none(e.get("name")), str_or_none(e.get("id"))))
    return blocks


def bash_blocks(message: dict) -> list[Block]:
    command, output = message.get("command"), message.get("output")
    if blank(command):
        return []
    blocks = [Block("tool_use", compact_json({"command": command}), "bash")]
    if isinstance(output, str) and not blank(output):
        blocks.append(Block("tool_result", output, "bash"))
    return blocks


def link_linear(turns: list[Turn], session_id: str) -> None:
    """Linear (pre-v3) sessions have no ids: number the retained turns and chain each to the last."""
    kept = [t for t in turns if t.blocks]
    if any(t.turn_uuid for t in kept):
        return
    for seq, t in enumerate(kept):
        t.turn_uuid = f"{session_id}-{seq}"
        t.parent_uuid = f"{session_id}-{seq - 1}" if seq else None


def timestamp(value: object) -> str:
    """A string as-is; a JSON number stringified (pi once wrote epoch millis); else ""."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ""
