"""A short deterministic context line per chunk, derived only from chunk-table columns (issue 10 item 2).

What a question names is often not in the chunk itself: the project, what the session was for, what
the user asked in this turn, which file a tool touched. The line says that:

    project: workspaces pi mono | task: <session's first user request> | asked: <the turn's user
    message> | tool: read …/coding-agent/README.md

It is an input to the legs (prefixed to the embedding input, added to the BM25 document), never
stored in the chunk's text. It needs the rows of the chunk's whole session before it (the first
request, the opening message, the tool call a result answers), so callers pass whole sessions; the
result depends on nothing else, so a local memory and one rebuilt from published shards derive
the same lines.
"""

from __future__ import annotations

import re

COLUMNS = ["session_id", "seq", "block_idx", "split_idx", "role", "block_type", "tool_name", "workdir", "repo", "text"]
SNIPPET = 120  # chars of a user message kept: the words that name the topic come first
_PATH = re.compile(r'"(?:file_path|filePath|path|notebook_path|file|filename)"\s*:\s*"([^"\n]{1,400})"')
_HOME = {"Users", "home", "root"}


def project(workdir: str | None, repo: str | None) -> str:
    """The checkout's name: the repo's when known, else the munged cwd without its home prefix."""
    if repo:
        return " ".join(r.rsplit("/", 1)[-1] for r in repo.split())
    parts = [p for p in (workdir or "").split("-") if p]
    if len(parts) > 1 and len(parts[0]) == 1:  # a drive letter: C:\Users\…
        parts = parts[1:]
    if len(parts) > 2 and parts[0] in _HOME:  # /Users/<name>/…: the user's name says nothing of the project
        parts = parts[2:]
    return " ".join(parts)


def tool_path(text: str) -> str | None:
    """The file a tool call names (its JSON input's path field), shortened to its last three parts."""
    m = _PATH.search(text)
    if not m:
        return None
    parts = [p for p in re.split(r"[\\/]", m.group(1)) if p]
    return ("…/" if len(parts) > 3 else "") + "/".join(parts[-3:]) if parts else None


def _snippet(text: str) -> str:
    return " ".join(text.split())[:SNIPPET]


def lines(rows: list[dict]) -> list[str]:
    """Context line per row (input order); `rows` hold COLUMNS and whole sessions."""
    order = sorted(range(len(rows)), key=lambda i: _key(rows[i]))
    out = [""] * len(rows)
    state: dict[str, dict] = {}
    for i in order:
        r = rows[i]
        s = state.setdefault(r["session_id"], {"task": None, "asked": None, "paths": {}, "block": {}})
        kind = r["block_type"]
        if r["role"] == "user" and kind == "text":
            # markup-led user rows are harness injections (Codex's <environment_context>, command tags)
            if r["split_idx"] == 0 and not r["text"].lstrip().startswith("<"):
                s["asked"] = _snippet(r["text"])
                s["task"] = s["task"] or s["asked"]
            own = True
        else:
            own = False
        parts = [f"project: {project(r['workdir'], r['repo'])}"]
        if s["task"] and not (own and s["task"] == s["asked"]):
            parts.append(f"task: {s['task']}")
        if s["asked"] and not own and s["asked"] != s["task"]:
            parts.append(f"asked: {s['asked']}")
        if kind in ("tool_use", "tool_result"):
            parts.append(f"tool: {_tool(r, s)}".rstrip())
        out[i] = " | ".join(parts)
    return out


def _tool(r: dict, s: dict) -> str:
    name = r["tool_name"] or ""
    block = (r["seq"], r["block_idx"])
    if r["block_type"] == "tool_use":
        if r["split_idx"] == 0:  # the JSON input's head is in the first piece only
            s["block"][block] = tool_path(r["text"])
            s["paths"][name] = s["block"][block]
        path = s["block"].get(block)
    else:  # a result: the path of the latest call of the same tool
        path = s["paths"].get(name)
    return f"{name} {path}" if path else name


def _key(r: dict) -> tuple:
    return (r["session_id"], r["seq"], r["block_idx"], r["split_idx"])
