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
    # the words of a prefix, joined, are a prefix of the whole text's: a long message is not split whole
    head = " ".join(text[: 4 * SNIPPET].split())
    if len(head) >= SNIPPET or len(text) <= 4 * SNIPPET:
        return head[:SNIPPET]
    return " ".join(text.split())[:SNIPPET]


PARTS = ("project", "task", "asked", "tool")
DEFAULT = ("project", "asked", "tool")  # what the BM25 documents carry (chosen on LoCoMo half A + dev set)


def lines(rows: list[dict], parts: tuple[str, ...] = DEFAULT) -> list[str]:
    """Context line per row (input order); `rows` hold COLUMNS and whole sessions; `parts` picks
    what the line says (benchmarks compare subsets)."""
    return column_lines({c: [r[c] for r in rows] for c in COLUMNS}, parts)


def column_lines(cols: dict[str, list], parts: tuple[str, ...] = DEFAULT) -> list[str]:
    """`lines` of rows given as COLUMNS column lists (what an Arrow table gives per column, ~10×
    cheaper than a dict per row)."""
    want = set(parts)
    say_project, say_task, say_asked, say_tool = (p in want for p in PARTS)
    sid, role, kinds, texts, split = (
        cols["session_id"],
        cols["role"],
        cols["block_type"],
        cols["text"],
        cols["split_idx"],
    )
    workdir, repo, tool_name, seq, block_idx = (
        cols["workdir"],
        cols["repo"],
        cols["tool_name"],
        cols["seq"],
        cols["block_idx"],
    )
    keys = list(zip(sid, seq, block_idx, split))
    out = [""] * len(sid)
    # sessions share a checkout: its "project: …" is worked out once per (workdir, repo)
    projects: dict[tuple, str] = {}
    # in key order a session's rows are consecutive, so its state is reset when the session changes
    session: object = object()
    task = asked = None
    paths: dict = {}
    block_paths: dict = {}
    for i in sorted(range(len(sid)), key=keys.__getitem__):
        if sid[i] != session:
            session, task, asked, paths, block_paths = sid[i], None, None, {}, {}
        kind = kinds[i]
        own = role[i] == "user" and kind == "text"
        # markup-led user rows are harness injections (Codex's <environment_context>, command tags)
        if own and split[i] == 0 and not texts[i].lstrip().startswith("<"):
            asked = _snippet(texts[i])
            task = task or asked
        said = []
        if say_project:
            where = (workdir[i], repo[i])
            head = projects.get(where)
            if head is None:
                head = projects[where] = f"project: {project(*where)}"
            said.append(head)
        shown = task if say_task else None
        if shown and not (own and shown == asked):
            said.append(f"task: {shown}")
        if say_asked and asked and not own and asked != shown:
            said.append(f"asked: {asked}")
        if kind in ("tool_use", "tool_result"):
            # always worked out: a call records its path for its results
            name = tool_name[i] or ""
            if kind == "tool_use":
                block = (seq[i], block_idx[i])
                if split[i] == 0:  # the JSON input's head is in the first piece only
                    block_paths[block] = paths[name] = tool_path(texts[i])
                path = block_paths.get(block)
            else:  # a result: the path of the latest call of the same tool
                path = paths.get(name)
            if say_tool:
                said.append((f"tool: {name} {path}" if path else f"tool: {name}").rstrip())
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
    before = earlier_table(source, table)
    # per column, not a dict per row: the two tables' types may differ (an old table's padding)
    cols = {c: before[c].to_pylist() + table[c].to_pylist() for c in COLUMNS}
    got = column_lines(cols)[before.num_rows :]
    return [f"{c}\n{t}" for c, t in zip(got, cols["text"][before.num_rows :])]


def stored_lines(source, table) -> list[str]:
    """The context line of each stored row: `stored_documents` is each line, a newline, the row's text.

    Only a row that `carries_state` has its text read by `lines`; the others reach it with an empty
    one, so a refresh never turns the bulk of the texts (tool output) into Python strings."""
    import pyarrow.compute as pc

    table = padded(table)
    text = pc.if_else(state_mask(table), table["text"], "")
    table = table.set_column(table.schema.get_field_index("text"), "text", text)
    before = earlier_table(source, table)
    # per column, not a dict per row (as `stored_documents`)
    cols = {c: before[c].to_pylist() + table[c].to_pylist() for c in COLUMNS}
    return column_lines(cols)[before.num_rows :]


def earlier_table(source, table):
    """The rows of `source` in the sessions of `table` that a context line reads (`carries_state`).

    One filtered scan, not a read of every earlier row: it may also return rows of `table` itself
    or stored after it, which sort after the rows they could affect (sessions are appended in
    order) or repeat what the batch holds, so the lines are those of the earlier rows alone."""
    import pyarrow as pa
    import pyarrow.compute as pc

    sessions = pc.unique(table["session_id"])
    if not len(sessions):
        return table.slice(0, 0)
    have = set(source.schema.names)
    cols = [c for c in COLUMNS if c in have]
    if isinstance(source, pa.Table):
        got = source.filter(pc.and_(pc.is_in(source["session_id"], sessions), state_mask(source))).select(cols)
    else:
        from funes.memory.lance import quote

        quoted = ", ".join(quote(s) for s in sessions.to_pylist())
        got = source.to_table(columns=cols, filter=f"session_id IN ({quoted}) AND {STATE_FILTER}")
    return padded(got)


def padded(table, columns=COLUMNS):
    """`table` with every one of `columns` it lacks (an old table or shard) added as empty strings."""
    import pyarrow as pa

    for c in columns:
        if c not in table.schema.names:
            table = table.append_column(c, pa.array([""] * table.num_rows, pa.string()))
    return table
