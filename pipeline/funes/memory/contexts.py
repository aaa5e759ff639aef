"""A short deterministic context line per chunk, derived only from chunk-table columns (issue 10 item 2).

What a question names is often not in the chunk itself: the project, what the session was for, what
the user asked in this turn, which file a tool touched. The line says that:

    project: workspaces pi mono | asked: <the user message that opened the turn> | tool: read
    …/coding-agent/README.md

(`task: <the session's first user request>` is also available; on the dev set and LoCoMo it
lost more than it found, so the BM25 documents leave it out: bench/README.md "Windows and contexts".)

It is added to the chunk's BM25 document and to what its vector embeds (`documents`, one string for
both legs: memory/indexes.py and the remote shards' segments build BM25 through it, and every embed
step — `funes index`'s vector tier, the Ray embed job, scrub's re-embed — reads `stored_documents`),
never stored in the chunk's text. A memory's manifest names what its vectors embed (`VECTOR_INPUT`). It needs the
earlier rows of the chunk's session (the first request, the opening message, the tool call a
result answers) and nothing else: rows are appended in session order, so a local memory's table
and a remote's shards laid end to end give every row the same earlier rows and the same line.
Only rows that `carries_state` can change a later row's line, so callers pass just those.
"""

from __future__ import annotations

import re

# what a vector embeds, stamped in a memory's manifest ("vector_input"); vectors of a memory without
# the stamp embedded the bare text, and `funes index` re-embeds them (commands/reembed.py)
VECTOR_INPUT = "context-line-1"
BARE_TEXT = "text"
MIXED = "mixed"  # a published shard whose vectors are partly of each
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


PARTS = ("project", "task", "asked", "tool")
DEFAULT = ("project", "asked", "tool")  # what the BM25 documents carry (chosen on LoCoMo half A + dev set)


def lines(rows: list[dict], parts: tuple[str, ...] = DEFAULT) -> list[str]:
    """Context line per row (input order); `rows` hold COLUMNS and whole sessions; `parts` picks
    what the line says (benchmarks compare subsets)."""
    want = set(parts)
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
        said = [f"project: {project(r['workdir'], r['repo'])}"] if "project" in want else []
        task = s["task"] if "task" in want else None
        if task and not (own and task == s["asked"]):
            said.append(f"task: {task}")
        if "asked" in want and s["asked"] and not own and s["asked"] != task:
            said.append(f"asked: {s['asked']}")
        if kind in ("tool_use", "tool_result"):
            tool = _tool(r, s)  # always run: it records the call's path for its results
            if "tool" in want:
                said.append(f"tool: {tool}".rstrip())
        out[i] = " | ".join(said)
    return out


def carries_state(role: str | None, block_type: str | None) -> bool:
    """Whether a row can change a later row's line: a user message or a tool call."""
    return (role == "user" and block_type == "text") or block_type == "tool_use"


# `carries_state` as a Lance filter and as an Arrow mask, kept beside it so the three cannot drift
STATE_FILTER = "((role = 'user' AND block_type = 'text') OR block_type = 'tool_use')"


def state_mask(table):
    """`carries_state` per row of an Arrow table with `role` and `block_type` columns."""
    import pyarrow.compute as pc

    kind = table["block_type"]
    return pc.or_(pc.and_(pc.equal(table["role"], "user"), pc.equal(kind, "text")), pc.equal(kind, "tool_use"))


def documents(rows: list[dict], earlier: list[dict]) -> list[str]:
    """BM25 documents of `rows` (input order): each one's context line, a newline, its text.
    `earlier` = rows stored before them in their sessions (those that carry state suffice)."""
    got = lines([*earlier, *rows])[len(earlier) :]
    return [f"{c}\n{r['text']}" for c, r in zip(got, rows)]


def stored_documents(source, table) -> list[str]:
    """`documents` of stored rows (`table` holds COLUMNS; a column an old table lacks reads empty):
    what both legs index. `source` is where their sessions' earlier rows are read: the chunk
    table's Lance dataset, or the whole chunk table as Arrow (scrub's rewrite before it is stored)."""
    table = padded(table)
    return documents(table.to_pylist(), earlier(source, table))


def stored_lines(source, table) -> list[str]:
    """The context line of each stored row: `stored_documents` is each line, a newline, the row's text.

    Only a row that `carries_state` has its text read by `lines`; the others reach it with an empty
    one, so a refresh never turns the bulk of the texts (tool output) into Python strings."""
    import pyarrow.compute as pc

    table = padded(table)
    text = pc.if_else(state_mask(table), table["text"], "")
    rows = table.set_column(table.schema.get_field_index("text"), "text", text).to_pylist()
    before = earlier(source, table)
    return lines([*before, *rows])[len(before) :]


def earlier(source, table) -> list[dict]:
    """The rows of `source` in the sessions of `table` that a context line reads (`carries_state`).

    One filtered scan, not a read of every earlier row: it may also return rows of `table` itself
    or stored after it, which sort after the rows they could affect (sessions are appended in
    order) or repeat what the batch holds, so the lines are those of the earlier rows alone."""
    import pyarrow as pa
    import pyarrow.compute as pc

    sessions = pc.unique(table["session_id"])
    if not len(sessions):
        return []
    have = set(source.schema.names)
    cols = [c for c in COLUMNS if c in have]
    if isinstance(source, pa.Table):
        got = source.filter(pc.and_(pc.is_in(source["session_id"], sessions), state_mask(source))).select(cols)
    else:
        from funes.memory.lance import quote

        quoted = ", ".join(quote(s) for s in sessions.to_pylist())
        got = source.to_table(columns=cols, filter=f"session_id IN ({quoted}) AND {STATE_FILTER}")
    return padded(got).to_pylist()


def padded(table, columns=COLUMNS):
    """`table` with every one of `columns` it lacks (an old table or shard) added as empty strings."""
    import pyarrow as pa

    for c in columns:
        if c not in table.schema.names:
            table = table.append_column(c, pa.array([""] * table.num_rows, pa.string()))
    return table


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
