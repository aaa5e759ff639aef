"""The context lines worked out over column lists (`contexts.column_lines`, what the index reads)
are exactly those of the row-by-row definition they replaced, kept here as the oracle."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from funes.commands import prepare
from funes.ingest import blocks, run
from funes.memory import contexts
from funes.traces import source

FIXTURES = Path(__file__).parent / "fixtures"


def _reference(rows: list[dict], parts: tuple[str, ...]) -> list[str]:
    """contexts.lines as it was (c49450b): a dict of state per session, a dict per row."""
    want = set(parts)
    order = sorted(
        range(len(rows)), key=lambda i: (lambda r: (r["session_id"], r["seq"], r["block_idx"], r["split_idx"]))(rows[i])
    )
    out = [""] * len(rows)
    state: dict[str, dict] = {}
    for i in order:
        r = rows[i]
        s = state.setdefault(r["session_id"], {"task": None, "asked": None, "paths": {}, "block": {}})
        kind = r["block_type"]
        if r["role"] == "user" and kind == "text":
            if r["split_idx"] == 0 and not r["text"].lstrip().startswith("<"):
                s["asked"] = " ".join(r["text"].split())[: contexts.SNIPPET]
                s["task"] = s["task"] or s["asked"]
            own = True
        else:
            own = False
        said = [f"project: {contexts.project(r['workdir'], r['repo'])}"] if "project" in want else []
        task = s["task"] if "task" in want else None
        if task and not (own and task == s["asked"]):
            said.append(f"task: {task}")
        if "asked" in want and s["asked"] and not own and s["asked"] != task:
            said.append(f"asked: {s['asked']}")
        if kind in ("tool_use", "tool_result"):
            name = r["tool_name"] or ""
            block = (r["seq"], r["block_idx"])
            if kind == "tool_use":
                if r["split_idx"] == 0:
                    s["block"][block] = contexts.tool_path(r["text"])
                    s["paths"][name] = s["block"][block]
                path = s["block"].get(block)
            else:
                path = s["paths"].get(name)
            if "tool" in want:
                said.append(f"tool: {f'{name} {path}' if path else name}".rstrip())
        out[i] = " | ".join(said)
    return out


def _fixture_rows(roots=tuple(FIXTURES / a for a in ("claude", "codex", "pi")), every: int = 1) -> list[dict]:
    parts = []
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != "MANIFEST.md")[::every]:
            for src in source.resolve(path):
                for unit in src.units():
                    got, _ = prepare.read_unit(src, unit, ("text", "tool_use", "tool_result"), True)
                    if got is not None:
                        parts.append(got)
    chunks, _ = run.chunk_blocks(blocks.concat(parts), lambda t, c: (t, [[] for _ in t]))
    return chunks.select(contexts.COLUMNS).to_pylist()


def _edge_rows() -> list[dict]:
    """Long and whitespace-heavy questions, markup, paths with odd ends, tools without names."""
    base = {"workdir": "-Users-ann-src-app", "repo": "", "tool_name": None, "split_idx": 0}
    long_q = "  why\tdoes   the\n\n build " + "word " * 200 + "\u2003end"
    spaced = " " * 700 + "late question " * 20
    question = {**base, "session_id": "s1", "seq": 0, "block_idx": 0, "role": "user", "block_type": "text"}
    read = {
        **base,
        "session_id": "s1",
        "seq": 1,
        "block_idx": 0,
        "role": "assistant",
        "block_type": "tool_use",
        "tool_name": "read",
    }
    rows = [
        {**question, "text": long_q},
        {**question, "text": long_q[400:], "split_idx": 1},  # the second split of one block
        {**read, "text": '[tool_use read] {"file_path":"/a/b/c/d/e.py  "}'},
        {**read, "text": "more", "split_idx": 1},
        {
            **base,
            "session_id": "s1",
            "seq": 2,
            "block_idx": 0,
            "role": "user",
            "block_type": "tool_result",
            "tool_name": "read",
            "text": "x",
        },
        {
            **base,
            "session_id": "s1",
            "seq": 2,
            "block_idx": 1,
            "role": "user",
            "block_type": "tool_result",
            "tool_name": None,
            "text": "y",
        },
        {
            **base,
            "session_id": "s1",
            "seq": 3,
            "block_idx": 0,
            "role": "user",
            "block_type": "text",
            "text": "<environment_context>x</environment_context>",
        },
        {**base, "session_id": "s1", "seq": 4, "block_idx": 0, "role": "assistant", "block_type": "text", "text": "ok"},
        {
            **base,
            "session_id": "s0",
            "seq": 0,
            "block_idx": 0,
            "role": "user",
            "block_type": "text",
            "text": spaced,
            "repo": "acme/app bob/fork",
        },
        {
            **base,
            "session_id": "s0",
            "seq": 1,
            "block_idx": 0,
            "role": "assistant",
            "block_type": "tool_use",
            "tool_name": "",
            "text": "{}",
        },
        {
            **base,
            "session_id": "s0",
            "seq": 1,
            "block_idx": 1,
            "role": "tool",
            "block_type": "tool_result",
            "tool_name": "",
            "text": "z",
        },
        {
            **base,
            "session_id": "s0",
            "seq": 2,
            "block_idx": 0,
            "role": "user",
            "block_type": "text",
            "text": "short one",
            "workdir": "C--Users-x-proj",
        },
        {**base, "session_id": "s0", "seq": 3, "block_idx": 0, "role": "assistant", "block_type": "text", "text": "a"},
    ]
    return rows


def _all_parts():
    for n in range(len(contexts.PARTS) + 1):
        yield from itertools.combinations(contexts.PARTS, n)


def test_column_lines_equal_the_row_definition():
    fixture = _fixture_rows()
    assert len(fixture) > 30
    rng = random.Random(7)
    shuffled = fixture + _edge_rows()
    rng.shuffle(shuffled)  # input order is not key order: lines come back in input order
    for rows in (fixture, _edge_rows(), shuffled):
        for parts in _all_parts():
            assert contexts.lines(rows, parts) == _reference(rows, parts), parts


def test_stored_documents_equal_the_row_definition():
    import pyarrow as pa

    rows = _fixture_rows() + _edge_rows()
    table = pa.Table.from_pylist(rows)
    for source_table, batch in ((table, table), (table, table.slice(len(rows) // 2)), (table, table.slice(0, 0))):
        earlier = contexts.earlier_table(source_table, batch).to_pylist()
        want = [
            f"{c}\n{r['text']}"
            for c, r in zip(
                _reference([*earlier, *batch.to_pylist()], contexts.DEFAULT)[len(earlier) :], batch.to_pylist()
            )
        ]
        assert contexts.stored_documents(source_table, batch) == want


def test_column_lines_equal_the_row_definition_on_the_corpus(corpus):
    rows = _fixture_rows((corpus / "claude", corpus / "codex", corpus / "pi"), every=4)
    assert len(rows) > 1000
    for parts in (contexts.DEFAULT, contexts.PARTS):
        assert contexts.lines(rows, parts) == _reference(rows, parts)
