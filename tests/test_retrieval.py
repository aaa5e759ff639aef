"""Retrieval: tokenizer, fusion, recency, rerank, filters, partial memories, neighbours, get windows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_support import (
    ExplodingEmbedder,
    FakeEmbedder,
    FakeReranker,
    chunk_rows,
    memory_with,
    session,
    unit_vectors,
)

# ---- tokenizer -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, must",
    [
        ("git commit --no-verify", ["--no-verify", "no", "verifi"]),
        ("ENOENT: no such file", ["enoent", "file"]),
        ("error[E0425]: cannot find value", ["e0425", "error"]),
        ("see src/funes/cli.py", ["src/funes/cli.py", "cli", "py", "src"]),
        ("os.path.join(a)", ["os.path.join", "path", "join"]),
        ("snake_case_name", ["snake_case_name", "snake", "case", "name"]),
        ("getUserName HTTPServer", ["getusername", "get", "user", "name", "httpserver", "http", "server"]),
        ("Running the failing tests", ["run", "fail", "test"]),
        ("这是测试", ["这是", "是测", "测试"]),
    ],
)
def test_tokenizer_keeps_identifiers_and_stems_prose(text, must):
    from funes.memory.tokenize import tokenize

    toks = tokenize(text)
    for t in must:
        assert t in toks, (t, toks)


def test_tokenizer_drops_noise_and_is_symmetric():
    from funes.memory.tokenize import query_terms, tokenize

    assert tokenize("the and of why did we") == []
    assert tokenize("aGVsbG8gd29ybGQgdGhpcyBpcyBhIHZlcnkgbG9uZyBiYXNlNjQgc3RyaW5nIHRoYXQgZ29lcyBvbg==") == []
    assert query_terms("ENOENT enoent") == ["enoent"]  # the lowercase query meets the ALLCAPS doc
    assert set(query_terms("EACCES")) >= {"eacces"} and "eacc" in tokenize("eacces")
    doc = "npm ERR! ENOENT: open '/home/u/app/package.json' --no-verify E0425"
    assert set(query_terms(doc)) <= set(tokenize(doc))


# ---- fusion, recency, rerank ---------------------------------------------------------------


def test_rrf_sums_legs_and_breaks_ties_deterministically():
    from funes.retrieval.hybrid import rrf

    fused = rrf({"vector": np.array([5, 7, 9]), "bm25": np.array([7, 11])}, limit=10)
    assert [f.row for f in fused][:1] == [7]  # in both legs
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 60)
    # 5 (vector rank 0) and 11 (bm25 rank 1) vs 9 (vector rank 2): equal scores break by best rank, then row
    tie = rrf({"a": np.array([3, 1]), "b": np.array([2, 4])}, limit=10)
    assert [f.row for f in tie] == [2, 3, 1, 4]
    assert [f.row for f in rrf({"b": np.array([2, 4]), "a": np.array([3, 1])}, limit=10)] == [2, 3, 1, 4]
    assert fused[0].normalised == pytest.approx((1 / 61 + 1 / 60) * 30)


def test_recency_halves_per_half_life_with_a_floor():
    from funes.retrieval.rerank import recency

    now = 1_800_000_000.0
    ts = np.array([now, now - 30 * 86400, now - 60 * 86400, now + 86400, math.nan])
    assert recency(ts, 30, 0.0, now).tolist() == pytest.approx([1, 0.5, 0.25, 1, 1])
    assert recency(ts, 30, 0.9, now).tolist() == pytest.approx([1, 0.95, 0.925, 1, 1])
    assert recency(ts, 0, 0.0, now).tolist() == [1, 1, 1, 1, 1]
    assert recency(ts, -5, 0.0, now).tolist() == [1, 1, 1, 1, 1]


def test_rerank_truncates_and_batches():
    from funes.retrieval.rerank import RERANK_CHARS, relevance, truncate

    model = FakeReranker()
    passages = ["parser " * 400, "nothing", "parser here"] * 15
    rel = relevance(model, "parser", passages, batch=32)
    assert len(rel) == 45 and [len(b) for b in model.seen] == [32, 13]
    assert max(len(p) for b in model.seen for p in b) <= RERANK_CHARS
    assert rel[0] > 0.2 and rel[1] < 0.2
    assert truncate("short") == "short"


# ---- the Retriever on real memories ---------------------------------------------------------


def _retriever(mem, **kw):
    from funes.retrieval.retriever import Retriever

    kw.setdefault("embedder", FakeEmbedder())
    kw.setdefault("reranker", None)
    return Retriever(mem, **kw)


def test_day_zero_memory_answers_lexically_without_loading_the_embedder(funes_home):
    mem = memory_with(session("s1", ["we chose polars for the parser", "unrelated chatter", "more chatter"]))
    res = _retriever(mem, embedder=ExplodingEmbedder()).recall("why polars", half_life=0)
    assert [h.turn_uuid for h in res.hits][:1] == ["s1-t0"]
    assert "embed" not in res.timings and res.hits[0].ranks == {"bm25": 0}


def test_partly_embedded_memory_is_hybrid_where_vectors_exist(funes_home):
    vecs = unit_vectors(4, seed=7)
    rows = session("s1", ["alpha topic", "beta topic", "gamma zebra", "delta topic"])
    mem = memory_with(rows, vectors={0: vecs[0], 1: vecs[1]})  # rows 2, 3 not embedded yet
    r = _retriever(mem, embedder=FakeEmbedder({"zebra": vecs[1]}))
    res = r.recall("zebra", k=4, half_life=0, neighbors=0)
    by_turn = {h.turn_uuid: h for h in res.hits}
    assert by_turn["s1-t2"].ranks == {"bm25": 0}  # found by keyword although it has no vector
    assert by_turn["s1-t1"].ranks == {"vector": 0}
    assert res.hits[0].turn_uuid in ("s1-t1", "s1-t2")


def test_filters_type_and_harness(funes_home):
    rows = session("a", ["deploy script fails", "deploy rollback"], harness="codex", block_type="tool_use") + session(
        "b", ["deploy notes", "deploy again"], harness="claude_code"
    )
    mem = memory_with(rows)
    r = _retriever(mem)
    assert {h.harness for h in r.recall("deploy", harness="claude_code", half_life=0).hits} == {"claude_code"}
    assert {h.block_type for h in r.recall("deploy", block_type="tool_use", half_life=0).hits} == {"tool_use"}
    assert r.recall("deploy", block_type="tool_use", harness="claude_code", half_life=0).hits == []


def test_the_recall_command_validates_and_spells_facets(funes_home):
    from funes.commands.recall import request
    from funes.errors import UsageError

    args = (8, 30, 0.0, 0.98, 1)
    req = request("  deploy \n it ", *args, "tool_use", "Claude")
    assert (req.query, req.block_type, req.harness) == ("deploy it", "tool_use", "claude_code")
    with pytest.raises(UsageError, match="unknown harness"):
        request("deploy", *args, None, "cursor")
    with pytest.raises(UsageError, match='unknown block type "image"'):
        request("deploy", *args, "image", None)
    with pytest.raises(UsageError, match="empty query"):
        request(" \t", *args, None, None)
    with pytest.raises(UsageError, match="at least 1"):
        request("deploy", 0, 30, 0.0, 0.98, 1, None, None)


def test_the_priors_are_validated_and_the_cli_defaults_are_the_library_s(funes_home):
    from funes import cli
    from funes.commands.recall import request
    from funes.errors import UsageError
    from funes.retrieval.rerank import THINKING_PRIOR, TOOL_PRIOR

    args = (8, 30, 0.0, 0.98, 1, None, None)
    assert request("deploy", *args).tool_prior == TOOL_PRIOR
    assert request("deploy", *args, tool_prior=1.0).tool_prior == 1.0
    for bad in (0.0, -1.0, 1.5, math.nan):
        with pytest.raises(UsageError, match="--tool-prior"):
            request("deploy", *args, tool_prior=bad)
        with pytest.raises(UsageError, match="--thinking-prior"):
            request("deploy", *args, tool_prior=0.5, thinking_prior=bad)
    with pytest.raises(TypeError, match="tool_weight"):
        request("deploy", tool_weight=0.5)
    parsed = cli.build_parser().parse_args(["recall", "x"])
    assert (parsed.tool_prior, parsed.thinking_prior) == (TOOL_PRIOR, THINKING_PRIOR)


def test_reranker_orders_the_pool_and_recency_breaks_near_ties(funes_home):
    old, new = "2025-01-01T00:00:00Z", "2026-06-01T00:00:00Z"
    rows = [
        {"session_id": "s", "turn_uuid": "t0", "seq": 0, "text": "kafka consumer lag fix (old)", "ts": old},
        {"session_id": "s", "turn_uuid": "t1", "seq": 1, "text": "kafka consumer", "ts": new},
        {"session_id": "s", "turn_uuid": "t2", "seq": 2, "text": "kafka consumer lag fix", "ts": new},
    ]
    mem = memory_with(rows)
    r = _retriever(mem, reranker=FakeReranker())
    now = 1_781_000_000.0  # 2026-06-09
    res = r.recall("kafka consumer lag fix", neighbors=0, now=now)
    assert [h.turn_uuid for h in res.hits] == ["t2", "t0", "t1"]  # equal relevance: the newer wins; old beats weak
    assert res.reranker == "test/fake-cross-encoder"
    flat = r.recall("kafka consumer lag fix", neighbors=0, half_life=0, now=now)
    assert flat.hits[0].score == pytest.approx(flat.hits[1].score)
    pure = r.recall("kafka consumer lag fix", neighbors=0, recency_floor=0.0, half_life=1, now=now)
    assert pure.hits[-1].turn_uuid == "t0"  # the original's pure decay buries the old right answer


def test_tool_blocks_weigh_the_tool_prior_against_prose(funes_home):
    said = "pgbouncer pool size raised to 40 after the load test showed queued clients"
    rows = session("s", ["pgbouncer pool size 40", said, "pgbouncer restarted after the config reload, nothing else"])
    rows[0]["block_type"], rows[0]["role"] = "tool_result", "user"
    r = _retriever(memory_with(rows))

    def ask(prior):
        hits = r.recall("pgbouncer pool size", k=2, neighbors=0, half_life=0, distinct=False, tool_prior=prior).hits
        return {h.block_type: h for h in hits}

    even, lean = ask(1.0), ask(0.5)
    assert set(even) == set(lean) == {"tool_result", "text"}
    assert even["tool_result"].score > even["text"].score  # the tool output is first on relevance alone
    assert lean["tool_result"].score == pytest.approx(0.5 * even["tool_result"].score)
    assert lean["tool_result"].relevance == pytest.approx(even["tool_result"].relevance)  # the prior is not relevance
    assert lean["text"].score == pytest.approx(even["text"].score)
    assert next(h.block_type for h in r.recall("pgbouncer pool size", k=2, half_life=0, tool_prior=0.5).hits) == "text"


def test_thinking_weighs_the_thinking_prior_and_the_output_cues_leave_it(funes_home):
    rows = session("s", ["the retry budget error: use jitter", "use jitter for the retry budget", "unrelated"])
    rows[0]["block_type"], rows[0]["role"] = "thinking", "assistant"
    r = _retriever(memory_with(rows))
    for query in ("retry budget jitter", "retry budget jitter error"):  # the second names output
        hits = {h.block_type: h for h in r.recall(query, k=2, neighbors=0, half_life=0, thinking_prior=0.5).hits}
        assert hits["thinking"].score == pytest.approx(0.5 * hits["thinking"].relevance)
        assert hits["text"].score == pytest.approx(hits["text"].relevance)


def test_a_question_that_names_tool_output_weighs_tool_blocks_as_prose(funes_home):
    from funes.retrieval.rerank import asks_for_output

    assert asks_for_output("What error did pytest print?") and asks_for_output("what did the LOG say")
    assert not asks_for_output("why did we drop the erroneous parser") and not asks_for_output("how do logins work")
    said = "the pgbouncer timeout error went away after the pool size was raised to 40 for the workers"
    rows = session("s", ["pgbouncer timeout error: pool size 40", said, "pgbouncer restarted, nothing else"])
    rows[0]["block_type"], rows[0]["role"] = "tool_result", "user"
    r = _retriever(memory_with(rows))
    ask = dict(k=1, neighbors=0, half_life=0, tool_prior=0.2)
    assert r.recall("pgbouncer timeout pool size", **ask).hits[0].block_type == "text"
    named = r.recall("pgbouncer timeout error pool size", **ask).hits[0]
    assert named.block_type == "tool_result" and named.score == pytest.approx(named.relevance)
    assert r.recall("pgbouncer timeout error pool size", output_cues=False, **ask).hits[0].block_type == "text"


def test_the_kind_prior_weighs_tool_blocks_and_thinking_and_leaves_text():
    from funes.retrieval.rerank import kind_prior

    kinds = ["text", "tool_use", "thinking", "tool_result"]
    assert kind_prior(np.array([0, 1, 2, 3, 1]), kinds, 0.5, 0.8).tolist() == [1, 0.5, 0.8, 0.5, 0.5]
    assert kind_prior(np.array([0, 1, 2]), kinds, 1.0, 1.0).tolist() == [1, 1, 1]
    assert kind_prior(np.array([0, 2]), ["text", "tool_use", "thinking"], 0.5, 1.0).tolist() == [1, 1]
    assert kind_prior(np.array([], dtype=np.uint16), kinds, 0.5, 0.8).tolist() == []


def test_neighbours_come_from_other_turns_within_the_window(funes_home):
    rows = session("s", ["zero", "one", "the needle here", "three", "four"])
    rows.append({"session_id": "s", "turn_uuid": "s-t2", "seq": 2, "block_idx": 1, "text": "same turn, other block"})
    rows += session("other", ["needle elsewhere"])
    mem = memory_with(rows)
    hit = _retriever(mem).recall("needle here", k=1, neighbors=1, half_life=0).hits[0]
    assert hit.turn_uuid == "s-t2"
    assert [(n.seq, n.text) for n in hit.neighbors] == [(1, "one"), (3, "three")]
    wide = _retriever(mem).recall("needle here", k=1, neighbors=2, half_life=0).hits[0]
    assert [n.seq for n in wide.neighbors] == [0, 1, 3, 4]
    assert _retriever(mem).recall("needle here", k=1, neighbors=0, half_life=0).hits[0].neighbors == []


def test_get_stitches_split_blocks_and_honours_the_window(funes_home):
    from funes.ingest.chunk import split

    long = " ".join(f"word{i}" for i in range(900))  # > 1200 chars: several overlapping pieces
    pieces = split(long)
    assert len(pieces) > 2
    rows = session("s", ["first", "second", "third", "fourth", "fifth"])
    rows += [
        {"session_id": "s", "turn_uuid": "s-t2", "seq": 2, "block_idx": 1, "split_idx": i, "text": p}
        for i, p in enumerate(pieces)
    ]
    mem = memory_with(rows)
    r = _retriever(mem)
    got = r.get("s", "s-t2", window=1)
    assert [t.seq for t in got.turns] == [1, 2, 3]
    assert [b.text for b in got.turns[1].blocks] == ["third", long]
    assert [t.seq for t in r.get("s", "s-t2", window=0).turns] == [2]
    assert len(r.get("s", "s-t0", window=3).turns) == 4
    from funes.errors import FunesError

    with pytest.raises(FunesError, match="turn nope not found in session s"):
        r.get("s", "nope")
    with pytest.raises(FunesError, match="not found in session ghost"):
        r.get("ghost", "s-t2")


def test_unindexed_rows_are_healed_by_the_recall_command(funes_home, monkeypatch):
    """Rows a crashed indexer stored but never indexed: the recall command refreshes, the retriever never writes."""
    from funes.commands.recall import recall
    from funes.memory import indexes

    monkeypatch.setenv("FUNES_RERANK", "off")
    mem = memory_with(session("s", ["original text"]))
    assert recall("original", half_life=0).hits
    mem.chunks.append(chunk_rows(session("late", ["appended later marmalade"])))
    before = indexes.manifest_stamp(indexes.index_dir(mem))
    assert _retriever(mem).recall("marmalade", half_life=0).hits == []  # a read: nothing indexed
    assert indexes.manifest_stamp(indexes.index_dir(mem)) == before
    assert [h.session_id for h in recall("marmalade", half_life=0).hits] == ["late"]
    assert indexes.refresh_if_stale(mem) is False  # now current: a stat, nothing written


def test_stale_indexes_wait_for_a_busy_writer(funes_home, monkeypatch):
    from funes.commands import recall as recall_cmd
    from funes.commands.recall import recall
    from funes.memory import indexes

    monkeypatch.setenv("FUNES_RERANK", "off")
    monkeypatch.setattr(recall_cmd, "WAIT_S", 0.0)
    mem = memory_with(session("s", ["original text"]))
    mem.chunks.append(chunk_rows(session("late", ["appended later marmalade"])))
    with mem.lock():  # an indexer is mid-run: recall answers from the indexes it has, and says so
        assert indexes.refresh_if_stale(mem) is False
        res = recall("marmalade", half_life=0)
        assert (
            res.hits == []
            and res.note == "note: search index covers 1 of 2 chunks (being built); the rest are not searchable yet"
        )
        assert [h.session_id for h in recall("original", half_life=0).hits] == ["s"]
    assert indexes.refresh_if_stale(mem) is True


def test_warm_retriever_sees_refreshes(funes_home):
    from funes.memory import indexes

    mem = memory_with(session("s", ["first"]))
    r = _retriever(mem)
    assert r.recall("quokka", half_life=0).hits == []
    mem.chunks.append(chunk_rows(session("q", ["a quokka appears"])))
    assert r.recall("quokka", half_life=0).hits == []  # not refreshed: invisible
    indexes.refresh(mem)
    assert [h.session_id for h in r.recall("quokka", half_life=0).hits] == ["q"]


def test_legs_are_a_parameter(funes_home):
    vecs = unit_vectors(3, seed=5)
    mem = memory_with(session("s", ["alpha words", "beta words", "gamma words"]), vectors=dict(enumerate(vecs)))
    r = _retriever(mem, embedder=FakeEmbedder({"beta": vecs[2]}))
    both = r.recall("beta", half_life=0, k=3)
    assert both.hits[0].ranks.keys() <= {"vector", "bm25"} and len(both.hits) == 3
    lexical = r.recall("beta", half_life=0, k=3, legs=("bm25",))
    assert [h.turn_uuid for h in lexical.hits] == ["s-t1"] and set(lexical.hits[0].ranks) == {"bm25"}
    vector = r.recall("beta", half_life=0, k=1, legs=("vector",))
    assert [h.turn_uuid for h in vector.hits] == ["s-t2"] and set(vector.hits[0].ranks) == {"vector"}


def test_vector_leg_is_exact_over_embedded_rows(funes_home):
    vecs = unit_vectors(40, seed=11)
    rows = session("s", [f"filler {i}" for i in range(40)])
    mem = memory_with(rows, vectors=dict(enumerate(vecs)))
    q = vecs[17] + 0.01 * unit_vectors(1, seed=1)[0]
    r = _retriever(mem, embedder=FakeEmbedder({"find it": q / np.linalg.norm(q)}))
    assert r.recall("find it", k=1, half_life=0).hits[0].turn_uuid == "s-t17"
