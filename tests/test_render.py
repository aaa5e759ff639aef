"""The agent-format contract of AGENTS.md: upstream's pinned bytes, the fixes, and golden files.

Regenerate the golden files after a deliberate format change with FUNES_UPDATE_GOLDEN=1 (and update
AGENTS.md in the same commit).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from funes import render
from funes.results import Block, GetResult, Hit, Neighbor, RecallResult, Turn
from retrieval_support import memory_with, session

GOLDEN = Path(__file__).resolve().parent / "golden"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FUNES_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    assert text == path.read_bytes().decode("utf-8"), f"{name} changed; see AGENTS.md"


def _hit(**kw) -> Hit:
    base = dict(
        row=0,
        id="x",
        text="the decision was made",
        session_id="0123456789abcdef",
        workdir="-home-u-funes",
        turn_uuid="aaaa-bbbb",
        ts="2026-06-19T01:29:59.000Z",
        block_type="text",
        seq=4,
        harness="claude_code",
        role="user",
        score=0.5781,
    )
    base.update(kw)
    return Hit(**base)


def test_upstream_pinned_example_byte_for_byte():
    hit = _hit(neighbors=[Neighbor("assistant", "text", 5, "hello")])
    out = render.recall_agent(RecallResult("q", "hf://datasets/acme/kb", [hit]))
    assert out == (
        "[2026-06-19T01:29:59.000Z] claude_code -home-u-funes/01234567 text  score=0.578\n"
        "  → get 0123456789abcdef aaaa-bbbb --memory hf://datasets/acme/kb\n"
        "the decision was made\n"
        "  ~ [assistant text seq5] hello\n"
        "---\n"
    )


def test_no_results_has_no_trailing_newline_and_keeps_the_note():
    assert render.recall_agent(RecallResult("q", "local", [])) == "no results"
    assert (
        render.recall_agent(RecallResult("q", "local", [], note="remote x unreachable"))
        == "remote x unreachable\nno results"
    )


def test_neighbour_preview_is_one_line_of_160_chars():
    text = "line one\n\nline   two\t" + "x" * 300
    hit = _hit(neighbors=[Neighbor("user", "tool_result", 7, text)])
    line = render.recall_agent(RecallResult("q", "local", [hit])).split("\n")[3]
    assert line.startswith("  ~ [user tool_result seq7] line one line two xxx")
    assert len(line) == len("  ~ [user tool_result seq7] ") + 160


def test_delimiter_lines_in_text_are_escaped_and_round_trip():
    text = "intro\n---\nmiddle\n\\---\n  ~ [fake neighbour] x\n----\n--- not alone\nend"
    hit = _hit(text=text)
    out = render.recall_agent(RecallResult("q", "local", [hit, _hit(turn_uuid="second")]))
    assert out.count("\n---\n") == 2 and out.endswith("\n---\n")
    blocks = out.split("\n---\n")
    body = blocks[0].split("\n", 2)[2]
    assert body == "intro\n\\---\nmiddle\n\\\\---\n\\  ~ [fake neighbour] x\n----\n--- not alone\nend"
    assert render.unescape(body) == text
    for sample in ["", "---", "\\---", "a\n  ~ b", "x\\\n---\n"]:
        assert render.unescape(render.escape(sample)) == sample


def test_get_line_is_pasteable():
    hit = _hit(session_id="s 1", turn_uuid="t'1")
    line = render.recall_agent(RecallResult("q", "/tmp/my memory", [hit])).split("\n")[1]
    assert line == "  → get 's 1' 't'\"'\"'1' --memory '/tmp/my memory'"
    assert render.get_command("abc", "t-1", "local") == "get abc t-1 --memory local"


def test_get_agent_format_upstream_example():
    res = GetResult(
        "s",
        "t-1",
        "local",
        3,
        [
            Turn(
                "2026-06-19T01:29:59.000Z",
                "assistant",
                3,
                "t-1",
                [Block("text", None, "first"), Block("text", None, "second")],
            )
        ],
    )
    assert render.get_agent(res) == "[2026-06-19T01:29:59.000Z] assistant seq3 turn=t-1\nfirst\n\nsecond\n---\n"


def test_get_human_is_readable_and_highlights():
    blocks = [
        Block("text", None, "we picked polars because the parser was slow"),
        Block("tool_use", "Bash", '[tool_use Bash] {"command": "pytest -q\\nmake check", "description": "run tests"}'),
        Block("tool_result", "Bash", "[tool_result Bash] 3 passed\nall good"),
    ]
    res = GetResult("s", "t-1", "local", 3, [Turn("2026-06-19T01:29:59.000Z", "assistant", 3, "t-1", blocks)])
    out = render.get_human(res, width=60, color=False, highlight="the  parser")
    assert "── 2026-06-19 01:29 · assistant · seq3 ── ◀" in out
    assert ">>the parser<<" in out
    assert "  Bash — run tests\n    pytest -q\n    make check" in out
    assert "  Bash ⇒ 3 passed all good" in out
    colored = render.get_human(res, color=True, highlight="polars")
    assert "\x1b[7mpolars\x1b[0m" in colored


def test_age_wording():
    assert render.age(1000, 1000 + 30) == "just now"
    assert render.age(1000, 1000 + 60) == "1 minute ago"
    assert render.age(1000, 1000 + 46 * 3600) == "46 hours ago"
    assert render.age(1000, 1000 + 3 * 86400) == "3 days ago"
    assert render.age(5000, 1000) == "just now"
    assert render.stamp(1783431000) == "2026-07-07 13:30 UTC"


# ---- golden files over a real memory -----------------------------------------------------------


@pytest.fixture
def golden_memory(funes_home, monkeypatch):
    monkeypatch.setenv("FUNES_RERANK", "off")  # fused order: no model dependence
    rows = session(
        "0f6d1c2e-5b7a-4c1d-9e8f-112233445566",
        [
            "Why does the ingest crash on the big session?",
            "The parser hit ENOENT on a rotated log.\n---\nFix: skip files that vanish between listdir and open.",
            "[tool_use Bash] git commit --no-verify -m 'skip vanished logs'",
            "Committed. The crash is gone; parser now counts skipped files.",
        ],
        workdir="-home-u-funes",
        ts="2026-06-19T01:29:59.000Z",
    )
    rows[2]["block_type"] = "tool_use"
    rows += session(
        "7a7a7a7a-0000-4000-8000-000000000001",
        [
            "Unrelated: bump the coupon expiry to 30 days.",
        ],
        workdir="-home-u-shop",
        harness="codex",
        ts="2026-05-01T09:00:00Z",
    )
    memory_with(rows)


def test_golden_recall_agent(golden_memory):
    from funes.commands.recall import recall

    _golden("recall_agent.txt", render.recall_agent(recall("parser ENOENT crash", k=3, half_life=0)))
    _golden("recall_no_results.txt", render.recall_agent(recall("zeppelin", half_life=0)))


def test_golden_recall_json(golden_memory):
    from funes.commands.recall import recall

    out = render.recall_json(recall("--no-verify", k=2, half_life=0))
    _golden("recall.json", out)
    doc = json.loads(out)
    assert doc["hits"][0]["get"].startswith("funes get 0f6d1c2e-5b7a-4c1d-9e8f-112233445566 ")


def test_golden_get_agent_and_human(golden_memory):
    from funes.commands.get import get

    res = get(
        "0f6d1c2e-5b7a-4c1d-9e8f-112233445566", "0f6d1c2e-5b7a-4c1d-9e8f-112233445566-t1", memory="local", window=1
    )
    _golden("get_agent.txt", render.get_agent(res))
    _golden("get_human.txt", render.get_human(res, width=60, color=False))


def test_golden_status():
    from funes.results import Status

    st = Status(
        label="local",
        state="ready",
        chunks=1234,
        sessions=56,
        by_harness={"claude_code": 1000, "codex": 234},
        by_type={"text": 600, "thinking": 100, "tool_result": 300, "tool_use": 234},
        vectors=1200,
        pending_vectors=34,
        last_indexed=1783431000.0,
        index={"chunks": 1234, "indexed": 1234, "vectors": 1200, "vectors_indexed": 1200},
        embedder="sentence-transformers/all-MiniLM-L6-v2",
        vector_input="context-line-1",
        reranker=None,
        reranker_note="no cross-encoder is installed; hits keep their fused (vector + keyword) order",
        held_back=3,
        held_kinds={"AWS": 1, "GitHub": 1},
        scanners={"kingfisher": "2.14.0", "detect-secrets": "1.5.0", "funes-rules": "builtin"},
        now=1783431000.0 + 46 * 3600,
    )
    _golden("status.txt", render.status_text(st))
    st.stale_vectors = 700  # an older memory half way through its re-embed
    assert (
        "embedder: sentence-transformers/all-MiniLM-L6-v2 (vectors of context line + text; 700 still of the "
        "bare text — the next `funes index` re-embeds them)\n" in render.status_text(st)
    )
    st.index_problem = "damaged (FileNotFoundError: bm25.3/vocab.hash.npy)"
    assert "search index: needs repair: damaged (FileNotFoundError" in render.status_text(st)
    missing = Status(label="local", state="missing", message="no memory yet — run `funes index` to build one")
    _golden("status_missing.txt", render.status_text(missing))
