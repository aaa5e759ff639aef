"""Codex CLI rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) -> the turns frame.

Enveloped rollouts (`{timestamp, type, payload}` lines) follow upstream-spec 1.4 exactly, so chunk
ids match upstream's. Added over upstream, which indexes nothing from them: legacy rollouts
(Aug-Sep 2025) have a bare header line `{id, timestamp, instructions, git?}` and then bare items
(`{"type":"message",...}`, `function_call`, ...) between `{"record_type":"state"}` lines. Their
items are read like response_item payloads; session_id is the header id; each turn's ts is the
header timestamp (items carry none); reasoning falls back to the plaintext `reasoning_text`
content when the summary is empty (legacy items have no ciphertext). When no session_meta cwd
exists, the `<cwd>` of the first `<environment_context>` message names the workdir.
"""

from __future__ import annotations

import re
from pathlib import Path

from funes.traces import Parsed, Unit
from funes.traces.frame import (
    Block,
    Turn,
    backfill_tool_names,
    blank,
    build_rows,
    compact_json,
    munge_workdir,
    parsed,
    str_or_none,
    text_blocks,
)
from funes.traces.jsonl import fallback_workdir, file_units, read_bytes, records_of, walk_jsonl

HARNESS = "codex"
_TEXT_PARTS = ("input_text", "output_text")  # a message content part that is prose
_ENVELOPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_ENV_CWD = re.compile(r"<environment_context>.*?<cwd>(.*?)</cwd>", re.S)


def units(root: Path, limit: int | None = None) -> list[Unit]:
    return file_units(walk_jsonl(root), HARNESS, limit)


def read(unit: Unit) -> Parsed:
    data = read_bytes(unit.path)
    records, skipped = records_of(data)
    meta, header = session_meta(records), legacy_header(records)
    session_id = str_or_none(meta.get("id")) or str_or_none(header.get("id")) or unit.path.stem
    turns = []
    for record in records:
        item = item_of(record, str_or_none(header.get("timestamp")) or "")
        turn = item_turn(*item) if item else None
        if turn is not None:
            turns.append(turn)
    backfill_tool_names(turns)
    wd = munge_workdir(meta.get("cwd")) or env_workdir(records) or fallback_workdir(unit.path)
    return parsed(build_rows(session_id, wd, turns, str(unit.path), HARNESS, data), skipped)


def session_meta(records: list[dict]) -> dict:
    for r in records:
        if r.get("type") == "session_meta" and isinstance(r.get("payload"), dict):
            return r["payload"]
    return {}


def legacy_header(records: list[dict]) -> dict:
    """The pre-session_meta header: the first line, untyped, with a string id."""
    if records and "type" not in records[0] and isinstance(records[0].get("id"), str):
        return records[0]
    return {}


def item_of(record: dict, header_ts: str) -> tuple[dict, str, bool] | None:
    """(payload, ts, legacy) for a response item in either layout; None for everything else."""
    kind = record.get("type")
    if kind == "response_item":
        payload = record.get("payload")
        return (payload, str_or_none(record.get("timestamp")) or "", False) if isinstance(payload, dict) else None
    if isinstance(kind, str) and kind not in _ENVELOPES and "payload" not in record:
        return record, str_or_none(record.get("timestamp")) or header_ts, True
    return None


def item_turn(item: dict, ts: str, legacy: bool) -> Turn | None:
    kind = item.get("type")
    if kind == "message":
        return Turn("", str_or_none(item.get("role")) or "", ts, text_blocks(item.get("content"), _TEXT_PARTS))
    if kind == "reasoning":
        return Turn("", "assistant", ts, reasoning_blocks(item, legacy))
    if kind in ("function_call", "custom_tool_call"):
        return Turn("", "assistant", ts, [call_block(item)])
    if kind in ("function_call_output", "custom_tool_call_output"):
        text = output_text(item.get("output"))
        blocks = [] if blank(text) else [Block("tool_result", text, None, str_or_none(item.get("call_id")))]
        return Turn("", "tool", ts, blocks)
    return None  # tool_schema, local_shell_call, web_search_call, ...: not indexed (as upstream)


def reasoning_blocks(item: dict, legacy: bool) -> list[Block]:
    """Summary text only: encrypted_content is ciphertext and never leaks into the memory."""
    text = _joined(item.get("summary"), "summary_text")
    if legacy and blank(text):
        text = _joined(item.get("content"), "reasoning_text")
    return [] if blank(text) else [Block("thinking", text)]


def _joined(parts: object, kind: str) -> str:
    if not isinstance(parts, list):
        return ""
    texts = (p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == kind)
    return "\n".join(t for t in texts if isinstance(t, str))


def call_block(item: dict) -> Block:
    """Arguments verbatim (not re-serialised); custom tools carry `input` instead."""
    text = next((v for v in (item.get("arguments"), item.get("input")) if isinstance(v, str)), "{}")
    return Block("tool_use", text, str_or_none(item.get("name")), str_or_none(item.get("call_id")))


def output_text(output: object) -> str:
    if output is None:
        return ""
    return output if isinstance(output, str) else compact_json(output)


def env_workdir(records: list[dict]) -> str | None:
    """The cwd inside the first <environment_context> message (legacy rollouts have no session_meta)."""
    for r in records:
        item = r.get("payload") if r.get("type") == "response_item" else r
        if isinstance(item, dict) and item.get("type") == "message":
            found = _ENV_CWD.search("\n".join(b.text for b in text_blocks(item.get("content"), _TEXT_PARTS)))
            if found:
                return munge_workdir(found.group(1))
    return None
