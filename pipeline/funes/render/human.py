"""The human view of `funes get` for a terminal: wrapped prose, one-line tool scents, a highlight (unstable)."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable

from funes.render.agent import field, preview, visible
from funes.results import Block, GetResult


def get_human(result: GetResult, width: int = 100, color: bool = False, highlight: str | None = None) -> str:
    """A readable view for a terminal (unstable: never parse it)."""
    dim, rev, off = ("\x1b[2m", "\x1b[7m", "\x1b[0m") if color else ("", "", "")
    mark = _highlighter(highlight, rev, off) if highlight else None
    out = []
    for t in result.turns:
        focus = " ◀" if t.turn_uuid == result.turn_uuid else ""
        out.append(f"{dim}── {field(t.ts[:16].replace('T', ' '))} · {field(t.role)} · seq{t.seq} ──{off}{focus}\n")
        for b in t.blocks:
            # the transcript's own escape sequences never reach the terminal (only ours do)
            body = visible(_human_block(b, width))
            if mark is not None:
                body, hit = mark(body)
                mark = None if hit else mark
            out.append(body + "\n")
        out.append("\n")
    return "".join(out)


def _human_block(block: Block, width: int) -> str:
    text = block.text
    if block.block_type == "tool_use":
        return _scent(text, width)
    if block.block_type == "tool_result":
        body = re.sub(r"^\[tool_result[^\]]*\]\s*", "", text)
        head = preview(body, width - 12)
        return f"  {block.tool_name or 'result'} ⇒ {head}"
    return "\n".join(textwrap.fill(p, width) if p.strip() else p for p in text.split("\n"))


def _scent(text: str, width: int) -> str:
    """`Tool — gist` plus up to 6 payload lines for edits and commands."""
    m = re.match(r"^\[tool_use ([^\]]*)\]\s*(.*)$", text, re.S)
    name, payload = (m.group(1), m.group(2)) if m else ("tool", text)
    try:
        args = json.loads(payload)
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return f"  {name} — {preview(payload, width - len(name) - 5)}"
    gist = next(
        (str(args[k]) for k in ("file_path", "path", "description", "pattern", "url", "query") if args.get(k)), ""
    )
    body = next((str(args[k]) for k in ("command", "cmd", "new_string", "content", "patch") if args.get(k)), "")
    head = f"  {name} — {preview(gist, width - len(name) - 5)}" if gist else f"  {name}"
    lines = body.split("\n")
    shown = [f"    {line[: width - 4]}" for line in lines[:6]]
    if len(lines) > 6:
        shown.append(f"    … {len(lines) - 6} more lines")
    return "\n".join([head, *shown]) if body else head


def _highlighter(highlight: str, on: str, off: str) -> Callable[[str], tuple[str, bool]] | None:
    words = highlight.split()[:6]
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.I)
    if not on:
        on, off = ">>", "<<"

    def mark(body: str) -> tuple[str, bool]:
        m = pattern.search(body)
        if not m:
            return body, False
        return body[: m.start()] + on + m.group() + off + body[m.end() :], True

    return mark
