"""Context lines per chunk (issue 10 item 2): derived from chunk-table columns only, order-independent."""

from __future__ import annotations

import random

from funes.memory import contexts as context


def _row(seq, role, kind, text, tool=None, block=0, split=0, session="s1", workdir="-Users-ann-src-cache-redesign"):
    return {
        "session_id": session,
        "seq": seq,
        "block_idx": block,
        "split_idx": split,
        "role": role,
        "block_type": kind,
        "tool_name": tool,
        "workdir": workdir,
        "repo": "",
        "text": text,
    }


SESSION = [
    _row(0, "user", "text", "<environment_context><cwd>/x</cwd></environment_context>"),
    _row(1, "user", "text", "Plan the   auth refactor: tokens move to the session store"),
    _row(2, "assistant", "text", "Reading the middleware first."),
    _row(
        2, "assistant", "tool_use", '[tool_use Read] {"file_path": "/Users/ann/src/app/auth/middleware.py"}', "Read", 1
    ),
    _row(2, "assistant", "tool_use", "…the rest of a long call", "Read", 1, split=1),
    _row(3, "user", "tool_result", "[tool_result Read] def check(token): ...", "Read"),
    _row(4, "user", "text", "now run the tests"),
    _row(5, "assistant", "tool_use", '[tool_use Bash] {"command": "pytest -q"}', "Bash"),
]


def test_lines_name_project_task_turn_and_tool():
    lines = context.lines(SESSION, context.PARTS)
    assert lines[0] == "project: src cache redesign"  # a harness injection is neither task nor question
    assert lines[1] == "project: src cache redesign"  # the first request itself: nothing to add
    task = "task: Plan the auth refactor: tokens move to the session store"
    assert lines[2] == f"project: src cache redesign | {task}"
    assert lines[3] == f"project: src cache redesign | {task} | tool: Read …/app/auth/middleware.py"
    assert lines[4] == lines[3]  # a later piece of the same call keeps its path
    assert lines[5] == lines[3]  # a result names the file of the call it answers
    assert lines[6] == f"project: src cache redesign | {task}"
    assert lines[7] == f"project: src cache redesign | {task} | asked: now run the tests | tool: Bash"
    # the BM25 documents' lines leave the task out: the turn's own request still names the topic
    asked = "asked: Plan the auth refactor: tokens move to the session store"
    shipped = context.lines(SESSION)
    assert shipped[1] == "project: src cache redesign"
    assert shipped[5] == f"project: src cache redesign | {asked} | tool: Read …/app/auth/middleware.py"
    assert shipped[7] == "project: src cache redesign | asked: now run the tests | tool: Bash"


def test_lines_do_not_depend_on_row_order_or_other_sessions():
    other = [_row(0, "user", "text", "fix the CI migration", session="s2", workdir="C--Users-bo-ci")]
    rows = SESSION + other
    want = context.lines(rows)
    shuffled = list(range(len(rows)))
    random.Random(3).shuffle(shuffled)
    got = context.lines([rows[i] for i in shuffled])
    assert [got[shuffled.index(i)] for i in range(len(rows))] == want
    assert context.lines(SESSION) == want[: len(SESSION)]
    assert want[-1] == "project: ci"


def test_project_prefers_the_repo_and_drops_the_home_prefix():
    assert context.project("-home-USER-projects-spotter", "") == "projects spotter"
    assert context.project("-Users-ann-x", "acme/cache-svc other/mirror") == "cache-svc mirror"
    assert context.project("hermes", "") == "hermes"
    assert context.tool_path('{"path": "README.md"}') == "README.md"
    assert context.tool_path('{"command": "ls"}') is None


# ---- the lexical leg reads the lines: local index (incremental) and remote shards alike ---------

CALL = '[tool_use Read] {"file_path": "/srv/app/billing/invoice_totals.py"}'


def _turns(sid: str, seq0: int, texts: list[tuple[str, str, str | None]]) -> list[dict]:
    return [
        {"session_id": sid, "turn_uuid": f"{sid}-t{seq0 + i}", "seq": seq0 + i, "role": role, "text": text}
        | ({"block_type": kind, "tool_name": "Read"} if kind != "text" else {})
        for i, (role, text, kind) in enumerate(texts)
    ]


FIRST = _turns(
    "s1", 0, [("user", "Plan the zeppelin migration of the billing service", "text"), ("assistant", CALL, "tool_use")]
)
LATER = _turns("s1", 2, [("user", "[tool_result Read] def total(lines): return sum(lines)", "tool_result")])
OTHER = _turns("s2", 0, [("user", "unrelated: the total of the coupon lines", "text")])


def _lexical(mem, query: str) -> list[str]:
    from funes.memory import indexes
    from funes.memory.tokenize import query_terms

    ix = indexes.load(mem)
    rows, _ = ix.lexical(query_terms(query), 5)
    return mem.chunks.take(rows, ["turn_uuid"])["turn_uuid"].to_pylist()


def test_an_incremental_index_finds_a_later_chunk_by_its_sessions_task_and_tool_path():
    from funes.memory import Memory, indexes
    from retrieval_support import chunk_rows, memory_with

    mem = memory_with(FIRST + OTHER)
    mem.chunks.append(chunk_rows(LATER))  # a later turn, appended by a second index run
    indexes.refresh(mem)
    assert _lexical(mem, "zeppelin")[0] == "s1-t0"  # the request itself ranks first ...
    assert "s1-t2" in _lexical(mem, "zeppelin")  # ... and the result stored later carries its task
    assert _lexical(mem, "invoice_totals.py")[:2] == ["s1-t1", "s1-t2"]  # the call's file names its result
    stored = Memory.resolve(None).chunks.scan(["text"])["text"].to_pylist()
    assert "zeppelin" not in stored[-1] and "invoice_totals" not in stored[-1]  # text stays verbatim
    fresh = memory_with([], refresh=False)
    indexes.index_dir(fresh).joinpath(indexes.MANIFEST).unlink()
    indexes.refresh(fresh)  # rebuilt in one pass: the same ranking as the incremental build
    assert _lexical(fresh, "zeppelin") == _lexical(mem, "zeppelin")


def test_a_session_id_with_quotes_is_looked_up_verbatim():
    from funes.memory import indexes
    from retrieval_support import chunk_rows, memory_with

    sid = 'it\'s "odd" \\ id'
    mem = memory_with(_turns(sid, 0, [("user", "Plan the zeppelin migration", "text")]))
    mem.chunks.append(chunk_rows(_turns(sid, 1, [("assistant", "done, see the notes", "text")])))
    indexes.refresh(mem)
    assert _lexical(mem, "zeppelin") == [f"{sid}-t0", f"{sid}-t1"]  # the later row read its turn's request


def test_stored_lines_are_what_stored_documents_put_before_each_text():
    """The refresh tokenises a row's line and text apart (memory/indexes.py); joined, they are its document."""
    import pyarrow as pa

    from retrieval_support import chunk_rows

    table = pa.table(chunk_rows(FIRST + OTHER + LATER))
    later = table.slice(1)  # rows whose lines read earlier rows of their session (the request, the call)
    lines = context.stored_lines(table, later)
    assert [f"{c}\n{t}" for c, t in zip(lines, later["text"].to_pylist())] == context.stored_documents(table, later)
    assert any("asked: Plan the zeppelin" in c and "invoice_totals.py" in c for c in lines)
