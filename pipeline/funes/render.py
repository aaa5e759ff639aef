"""Values -> text: the byte-stable agent formats of recall/get/status (AGENTS.md) and the human views.

Agent format rules on top of upstream-spec 5.3/5.4 (AGENTS.md is the contract, tests/golden pins it):
- a neighbour preview is ONE line: whitespace runs (newlines included) collapse to one space, then
  the first 160 characters;
- chunk and block text is verbatim except for one escape: a line that, once its leading
  backslashes are removed, is exactly `---` or starts with `  ~ ` gets one more backslash in
  front. So a line `---` only ever appears as a delimiter, and a reader restores the text by
  removing one backslash from such lines (`unescape`);
- `→ get` arguments are shell-quoted only when they need it (ids and `local` never do), so the
  line pastes as is.
"""

from __future__ import annotations

import json
import re
import shlex
import textwrap
import time
from dataclasses import asdict
from datetime import UTC, datetime

PREVIEW = 160
_RESERVED = re.compile(r"^\\*(?:---$|  ~ )")
_WS = re.compile(r"\s+")


# ---- shared pieces -------------------------------------------------------------------------


def escape(text: str) -> str:
    """Verbatim text with delimiter-looking lines escaped (see the module doc)."""
    if "---" not in text and "  ~ " not in text:
        return text
    return "\n".join("\\" + line if _RESERVED.match(line) else line for line in text.split("\n"))


def unescape(text: str) -> str:
    return "\n".join(line[1:] if line.startswith("\\") and _RESERVED.match(line) else line for line in text.split("\n"))


def preview(text: str, limit: int = PREVIEW) -> str:
    return _WS.sub(" ", text).strip()[:limit]


def get_command(session_id: str, turn_uuid: str, label: str) -> str:
    return f"get {_q(session_id)} {_q(turn_uuid)} --memory {_q(label)}"


def _q(arg: str) -> str:
    return shlex.quote(arg) if arg else "''"


# ---- recall --------------------------------------------------------------------------------


def recall_agent(result) -> str:
    """Upstream-spec 5.3 agent format; `no results` (no trailing newline) when nothing matched."""
    note = f"{result.note}\n" if result.note else ""
    if not result.hits:
        return note + "no results"
    out = [note]
    for h in result.hits:
        out.append(f"[{h.ts}] {h.harness} {h.workdir}/{h.session_id[:8]} {h.block_type}  score={h.score:.3f}\n")
        out.append(f"  → {get_command(h.session_id, h.turn_uuid, result.label)}\n")
        out.append(escape(h.text) + "\n")
        for n in h.neighbors:
            out.append(f"  ~ [{n.role} {n.block_type} seq{n.seq}] {preview(n.text)}\n")
        out.append("---\n")
    return "".join(out)


def recall_json(result) -> str:
    hits = [
        {
            "ts": h.ts,
            "harness": h.harness,
            "workdir": h.workdir,
            "session_id": h.session_id,
            "turn_uuid": h.turn_uuid,
            "block_type": h.block_type,
            "role": h.role,
            "seq": h.seq,
            "score": round(h.score, 6),
            "text": h.text,
            "get": "funes " + get_command(h.session_id, h.turn_uuid, result.label),
            "neighbors": [
                {"role": n.role, "block_type": n.block_type, "seq": n.seq, "preview": preview(n.text)}
                for n in h.neighbors
            ],
        }
        for h in result.hits
    ]
    doc = {
        "memory": result.label,
        "query": result.query,
        "note": result.note,
        "reranker": result.reranker,
        "hits": hits,
    }
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


# ---- get -----------------------------------------------------------------------------------


def get_agent(result) -> str:
    """Upstream-spec 5.4 agent format: one header per turn, blocks joined by a blank line, `---`."""
    out = [f"{result.note}\n" if result.note else ""]
    for t in result.turns:
        out.append(f"[{t.ts}] {t.role} seq{t.seq} turn={t.turn_uuid}\n")
        out.append("\n\n".join(escape(b.text) for b in t.blocks) + "\n---\n")
    return "".join(out)


def get_human(result, width: int = 100, color: bool = False, highlight: str | None = None) -> str:
    """A readable view for a terminal (unstable: never parse it)."""
    dim, rev, off = ("\x1b[2m", "\x1b[7m", "\x1b[0m") if color else ("", "", "")
    mark = _highlighter(highlight, rev, off) if highlight else None
    out = []
    for t in result.turns:
        focus = " ◀" if t.turn_uuid == result.turn_uuid else ""
        out.append(f"{dim}── {t.ts[:16].replace('T', ' ')} · {t.role} · seq{t.seq} ──{off}{focus}\n")
        for b in t.blocks:
            body = _human_block(b, width)
            if mark is not None:
                body, hit = mark(body)
                mark = None if hit else mark
            out.append(body + "\n")
        out.append("\n")
    return "".join(out)


def _human_block(block, width: int) -> str:
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


def _highlighter(highlight: str, on: str, off: str):
    words = highlight.split()[:6]
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.I)
    if not on:
        on, off = ">>", "<<"

    def mark(body: str):
        m = pattern.search(body)
        if not m:
            return body, False
        return body[: m.start()] + on + m.group() + off + body[m.end() :], True

    return mark


# ---- status --------------------------------------------------------------------------------


def status_text(st) -> str:
    lines = [f"memory: {st.label}"]
    if st.state != "ready":
        return "\n".join(lines + [st.message] + _last_hook(st)) + "\n"
    lines += [f"chunks: {st.chunks}", f"sessions: {st.sessions}"]
    if st.by_harness:
        lines.append("agents: " + ", ".join(f"{k} {v}" for k, v in st.by_harness.items()))
    if st.by_type:
        lines.append("block types: " + ", ".join(f"{k} {v}" for k, v in st.by_type.items()))
    if st.pending_vectors:
        lines.append(
            f"waiting for vectors: {st.pending_vectors} chunk{'s' if st.pending_vectors != 1 else ''} "
            "(found by keyword until `funes index` embeds them)"
        )
    else:
        lines.append("waiting for vectors: 0")
    if st.last_indexed is not None:
        lines.append(f"last indexed: {stamp(st.last_indexed)} ({age(st.last_indexed, st.now)})")
    lines.append("search index: " + _freshness(st.index))
    lines.append(f"embedder: {st.embedder}")
    if st.reranker:
        lines.append(f"reranker: {st.reranker}" + (f" ({st.reranker_note})" if st.reranker_note else ""))
    else:
        lines.append(f"reranker: none — {st.reranker_note}")
    return "\n".join(lines + _last_hook(st)) + "\n"


def _last_hook(st) -> list[str]:
    run = getattr(st, "last_hook", None)
    if not run:
        return []
    what = run.get("result", "?")
    if what == "ok":
        what = f"ok, {run.get('turns', 0)} turns read, +{run.get('chunks_added', 0)} chunks"
    when = f"{stamp(run['ts'])} ({age(run['ts'], st.now)})" if isinstance(run.get("ts"), int | float) else "?"
    return [f"last hook run: {when} — {run.get('events', 0)} events from {run.get('sessions', 0)} sessions: {what}"]


def _freshness(ix: dict) -> str:
    if not ix or not ix.get("built", True):
        return "not built yet — the next `funes index` (or recall) builds it"
    text, vec = (ix["indexed"], ix["chunks"]), (ix["vectors_indexed"], ix["vectors"])
    if text[0] >= text[1] and vec[0] >= vec[1]:
        return f"up to date ({text[1]} chunks, {vec[1]} vectors)"
    return (
        f"{text[0]} of {text[1]} chunks, {vec[0]} of {vec[1]} vectors indexed — "
        "the rest become searchable at the next `funes index` (or recall)"
    )


def status_json(st) -> str:
    return json.dumps(asdict(st), ensure_ascii=False, indent=1) + "\n"


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def age(epoch: float, now: float | None = None) -> str:
    """Upstream-spec 5.5: just now / N minute(s) / N hour(s) (< 48 h) / N day(s) ago."""
    minutes = int(max((now if now is not None else time.time()) - epoch, 0) // 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        n, unit = minutes, "minute"
    elif minutes < 2880:
        n, unit = minutes // 60, "hour"
    else:
        n, unit = minutes // 1440, "day"
    return f"{n} {unit}{'' if n == 1 else 's'} ago"
