"""The byte-stable agent formats of recall and get (the AGENTS.md contract; tests/golden pins every byte).

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

from funes.results import GetResult, RecallResult

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


def recall_agent(result: RecallResult) -> str:
    """Upstream-spec 5.3 agent format; `no results` (no trailing newline) when nothing matched."""
    note = f"{result.note}\n" if result.note else ""
    if not result.hits:
        return note + "no results"
    out = [note]
    for h in result.hits:
        out.append(f"[{h.ts}] {h.harness} {h.workdir}/{h.session_id[:8]} {h.block_type}  score={h.score:.3f}\n")
        out.append(f"  → {get_command(h.session_id, h.turn_uuid, h.memory or result.label)}\n")
        out.append(escape(h.text) + "\n")
        for n in h.neighbors:
            out.append(f"  ~ [{n.role} {n.block_type} seq{n.seq}] {preview(n.text)}\n")
        out.append("---\n")
    return "".join(out)


def recall_json(result: RecallResult) -> str:
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
            "get": "funes " + get_command(h.session_id, h.turn_uuid, h.memory or result.label),
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


def get_agent(result: GetResult) -> str:
    """Upstream-spec 5.4 agent format: one header per turn, blocks joined by a blank line, `---`."""
    out = [f"{result.note}\n" if result.note else ""]
    for t in result.turns:
        out.append(f"[{t.ts}] {t.role} seq{t.seq} turn={t.turn_uuid}\n")
        out.append("\n\n".join(escape(b.text) for b in t.blocks) + "\n---\n")
    return "".join(out)
