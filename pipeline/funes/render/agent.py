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
NEIGHBOR_LINES = 40  # neighbour lines per hit: a huge adjacent turn must not flood an agent's context
_RESERVED = re.compile(r"^\\*(?:---$|  ~ |  → )")
_WS = re.compile(r"\s+")
# every control character but \n and \t, and every other character a reader may split lines on
# (str.splitlines: \r \v \f \x1c-\x1e \x85 U+2028 U+2029): printed as `\u{hex}`; a literal
# backslash run before `u{` in the text gets one more backslash, so the escape is reversible
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]|" + r"\\+u\{")
_ESCAPED = re.compile(r"(\\+)u\{(?:([0-9a-f]{1,6})\})?")


# ---- shared pieces -------------------------------------------------------------------------


def visible(text: str) -> str:
    r"""`text` with every control character and line separator but \n and \t as `\u{hex}`."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: "\\" + m.group() if len(m.group()) > 1 else f"\\u{{{ord(m.group()):x}}}", text)


def _unvisible(m: re.Match) -> str:
    slashes, code = m.group(1), m.group(2)
    if len(slashes) == 1:
        return chr(int(code, 16)) if code else m.group()
    return slashes[1:] + "u{" + (code + "}" if code else "")


def field(text: object) -> str:
    """A header field: one line, nothing a terminal or a line reader would act on."""
    return visible(str(text if text is not None else "")).replace("\n", "\\u{a}").replace("\t", "\\u{9}")


def escape(text: str) -> str:
    """Verbatim text with control characters made visible and delimiter-looking lines escaped
    (see the module doc)."""
    text = visible(text)
    if "---" not in text and "  ~ " not in text and "  → " not in text:
        return text
    return "\n".join("\\" + line if _RESERVED.match(line) else line for line in text.split("\n"))


def unescape(text: str) -> str:
    lines = "\n".join(
        line[1:] if line.startswith("\\") and _RESERVED.match(line) else line for line in text.split("\n")
    )
    return _ESCAPED.sub(_unvisible, lines)


def preview(text: str, limit: int = PREVIEW) -> str:
    return visible(_WS.sub(" ", text).strip()[:limit])


def get_command(session_id: str, turn_uuid: str, label: str) -> str:
    return f"get {_q(field(session_id))} {_q(field(turn_uuid))} --memory {_q(field(label))}"


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
        head = f"{field(h.harness)} {field(h.workdir)}/{field(h.session_id[:8])} {field(h.block_type)}"
        out.append(f"[{field(h.ts)}] {head}  score={h.score:.3f}\n")
        out.append(f"  → {get_command(h.session_id, h.turn_uuid, h.memory or result.label)}\n")
        out.append(escape(h.text) + "\n")
        for n in h.neighbors[:NEIGHBOR_LINES]:
            out.append(f"  ~ [{field(n.role)} {field(n.block_type)} seq{n.seq}] {preview(n.text)}\n")
        if len(h.neighbors) > NEIGHBOR_LINES:
            out.append(f"  ~ … {len(h.neighbors) - NEIGHBOR_LINES} more neighbour chunks (funes get shows them)\n")
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
        out.append(f"[{field(t.ts)}] {field(t.role)} seq{t.seq} turn={field(t.turn_uuid)}\n")
        out.append("\n\n".join(escape(b.text) for b in t.blocks) + "\n---\n")
    return "".join(out)
