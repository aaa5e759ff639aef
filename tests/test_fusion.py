"""Fusion functions (retrieval/hybrid.py) and distinct passages (retrieval/distinct.py) on real memories."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_support import FakeEmbedder, memory_with, session


def legs(bm25: list[tuple[int, float]], vector: list[tuple[int, float]]) -> dict:
    def arr(pairs):
        return np.array([r for r, _ in pairs], dtype=np.int64), np.array([s for _, s in pairs], dtype=np.float32)

    return {"bm25": arr(bm25), "vector": arr(vector)}


def test_convex_keeps_a_sure_legs_margin_where_rrf_outvotes_it():
    from funes.retrieval.hybrid import fuse, parse

    # BM25 is sure of row 1 (score 20 vs 2); the vector leg is guessing among near-equal cosines
    both = legs([(1, 20.0), (2, 2.0), (3, 1.9)], [(2, 0.41), (3, 0.40), (1, 0.39)])
    assert fuse(both, 10, parse("rrf"))[0].row == 2  # first in one leg, second in the other
    convex = fuse(both, 10, parse("convex:0.5"))
    assert [f.row for f in convex] == [1, 2, 3]
    # TM2C2: bm25 / max, (cos + 1) / (max cos + 1)
    assert convex[0].normalised == pytest.approx(0.5 * 1.0 + 0.5 * 1.39 / 1.41, rel=1e-5)
    # first in both legs is 1.0 under every fusion
    top = legs([(7, 3.0)], [(7, 0.8)])
    for spec in ("rrf", "wrrf:0.8", "convex:0.3"):
        assert fuse(top, 10, parse(spec))[0].normalised == pytest.approx(1.0)


def test_weights_move_the_order_and_one_leg_alone_still_spans_zero_to_one():
    from funes.retrieval.hybrid import fuse, parse

    split = legs([(1, 5.0), (2, 4.0)], [(2, 0.9), (1, 0.1)])
    assert [f.row for f in fuse(split, 10, parse("convex:0.9"))] == [1, 2]
    assert [f.row for f in fuse(split, 10, parse("convex:0.1"))] == [2, 1]
    assert [f.row for f in fuse(legs([(1, 5.0)], [(2, 0.9)]), 10, parse("wrrf:0.7"))] == [1, 2]
    assert [f.row for f in fuse(legs([(1, 5.0)], [(2, 0.9)]), 10, parse("wrrf:0.3"))] == [2, 1]
    only = {"bm25": legs([(4, 2.0), (5, 1.0)], [])["bm25"]}
    assert [round(f.normalised, 6) for f in fuse(only, 10, parse("convex:0.7"))] == [1.0, 0.5]
    assert fuse({}, 10, parse("convex:0.7")) == []


def test_fusion_ties_are_deterministic_and_specs_are_checked():
    from funes.retrieval.hybrid import DEFAULT, fuse, parse

    tie = legs([(3, 1.0), (1, 1.0)], [(2, 0.5), (4, 0.5)])
    a = [f.row for f in fuse(tie, 10, parse("convex:0.5"))]
    b = [f.row for f in fuse(dict(reversed(list(tie.items()))), 10, parse("convex:0.5"))]
    assert a == b == [2, 3, 1, 4]  # equal scores: best rank in any leg, then row
    assert parse(DEFAULT).spec == DEFAULT
    for bad in ("sum", "convex", "convex:x", "wrrf:1.5", "rrf:0.5"):
        with pytest.raises(ValueError):
            parse(bad)


def test_confidence_aware_fusion_leans_on_the_leg_that_is_sure():
    from funes.retrieval.hybrid import confident_weights, fuse, parse

    # BM25 and the vector leg disagree on the first passage; their confidence decides it
    sure_bm25 = legs([(1, 12.0), (3, 2.0), (4, 1.9), (5, 1.8)], [(2, 0.50), (1, 0.49), (3, 0.48), (4, 0.47)])
    flat_bm25 = legs([(1, 5.0), (3, 4.9), (4, 4.8), (5, 4.7)], [(2, 0.80), (1, 0.49), (3, 0.48), (4, 0.47)])
    base = parse("conf:0.5")
    assert [f.row for f in fuse(sure_bm25, 10, base)] == [f.row for f in fuse(sure_bm25, 10, parse("mm:0.5"))]
    gap = parse("conf:0.5:8:0")
    assert confident_weights(sure_bm25, gap)["bm25"] > 0.9  # first hit 6x its fourth: BM25 is sure
    assert fuse(sure_bm25, 10, gap)[0].row == 1
    cos = parse("conf:0.5:0:20")
    assert confident_weights(flat_bm25, cos)["vector"] > 0.9  # a passage at cosine 0.8: the vector leg is sure
    assert fuse(flat_bm25, 10, cos)[0].row == 2
    # weights always sum to one, so first in both legs is still 1.0 and one leg alone spans [0, 1]
    w = confident_weights(sure_bm25, parse("conf:0.8:4:8"))
    assert sum(w.values()) == pytest.approx(1.0)
    assert fuse(legs([(7, 3.0)], [(7, 0.8)]), 10, parse("conf:0.8:4:8"))[0].normalised == pytest.approx(1.0)
    only = {"bm25": sure_bm25["bm25"]}
    assert fuse(only, 10, parse("conf:0.8:4:8"))[0].normalised == pytest.approx(1.0)
    assert parse("conf:0.8:4:8").spec == "conf:0.8:4:8"
    for bad in ("conf:0.8:4", "conf:0.8:x:1", "conf:1.2:0:0"):
        with pytest.raises(ValueError):
            parse(bad)


def test_lift_and_z_score_keep_both_legs_best_in_the_head_of_the_list():
    from funes.retrieval.hybrid import fuse, parse

    # BM25 (weight 0.8) fills the head; the vector leg's own first row (9) is last of the fused pool
    both = legs([(1, 9.0), (2, 8.9), (3, 8.8), (4, 8.7)], [(9, 0.9), (4, 0.2), (3, 0.19), (2, 0.18)])
    plain = [f.row for f in fuse(both, 10, parse("mm:0.8"))]
    assert plain.index(9) > 1
    lifted = fuse(both, 10, parse("mm:0.8+1"))
    assert [f.row for f in lifted][:2] == [plain[0], 9]
    assert sorted(f.row for f in lifted) == sorted(plain)  # reordered, nothing lost or repeated
    scores = [f.normalised for f in lifted]
    assert scores == sorted(scores, reverse=True) and scores[-1] >= 0.0 and scores[0] <= 1.0
    z = fuse(both, 10, parse("z:0.5"))
    assert z[0].normalised == pytest.approx(1.0) and z[-1].normalised == pytest.approx(0.0)
    assert [f.row for f in fuse(both, 10, parse("z:1"))][:3] == [1, 2, 3]  # BM25 alone decides
    assert fuse(both, 10, parse("z:0"))[0].row == 9  # the vector leg alone decides
    for bad in ("rrf+1", "mm:0.8+x", "wrrf:0.5+2"):
        with pytest.raises(ValueError):
            parse(bad)


def _recall(mem, query, **kw):
    from funes.retrieval.retriever import Retriever

    return Retriever(mem, embedder=FakeEmbedder(), reranker=None).recall(query, neighbors=0, half_life=0, **kw)


def test_the_legs_a_benchmark_replays_are_the_ones_recall_fuses(funes_home):
    from funes.retrieval import hybrid
    from funes.retrieval.retriever import RecallRequest, Retriever

    texts = ["pin the parser version", "parser crashed on ENOENT", "we chose lance", "vector index rebuild", "x"]
    mem = memory_with(session("a", texts) + session("b", [t + " again" for t in texts]))
    r = Retriever(mem, embedder=FakeEmbedder(), reranker=None)
    for spec in ("mm:0.8", "conf:0.8:4:5", "z:0.65+1"):
        req = RecallRequest("parser ENOENT crash", k=6, candidates=6, neighbors=0, half_life=0, fusion=spec)
        replay = hybrid.fuse(r.legs(r.indexes(), req), req.pool, hybrid.parse(spec))
        assert [h.row for h in r.run(req).hits] == [f.row for f in replay][: req.k], spec


def test_copies_of_one_text_answer_once_with_the_best_copy(funes_home):
    out = "error: ENOSPC no space left on device while writing cache"
    rows = session("a", ["start", out, "retry", out, "done"]) + session("b", [out + "  ", "unrelated words"])
    mem = memory_with(rows)
    hits = _recall(mem, "ENOSPC no space left", k=5).hits
    texts = [" ".join(h.text.split()) for h in hits]
    assert texts.count(out) == 1, texts
    all_copies = _recall(mem, "ENOSPC no space left", k=5, distinct=False).hits
    assert [" ".join(h.text.split()) for h in all_copies].count(out) == 3
    assert hits[0].turn_uuid == all_copies[0].turn_uuid  # the kept copy is the best-scoring one


def test_overlapping_splits_of_one_block_are_distinct_evidence(funes_home):
    from funes.ingest.chunk import split

    long = " ".join(f"kafka{i % 7} lag partition{i}" for i in range(400))
    pieces = split(long)
    assert len(pieces) >= 4
    rows = [{"session_id": "s", "turn_uuid": "s-t0", "seq": 0, "split_idx": i, "text": p} for i, p in enumerate(pieces)]
    rows.append({"session_id": "s", "turn_uuid": "s-t1", "seq": 1, "text": pieces[2]})  # a verbatim copy
    mem = memory_with(rows)
    hits = _recall(mem, "kafka1 kafka2 kafka3 lag", k=len(rows)).hits
    assert sorted(h.text for h in hits) == sorted(pieces)  # every split once, the copy dropped
    assert len(_recall(mem, "kafka1 kafka2 kafka3 lag", k=len(rows), distinct=False).hits) == len(rows)


def test_question_framing_does_not_drive_the_lexical_leg(funes_home):
    from funes.memory.tokenize import lexical_terms, query_terms

    q = "When did we first try to get past the pre-commit hook?"
    assert "first" in query_terms(q) and "first" not in lexical_terms(q)
    assert {"pre-commit", "hook"} <= set(lexical_terms(q))
    assert lexical_terms("what happened first") == query_terms("what happened first")  # nothing else left
    assert "first-run" in lexical_terms("the first-run wizard")  # an identifier stays whole
    # a passage that only shares the framing words no longer outranks the one about the question's subject
    # both assistant turns: neither carries the other's words in its context line (memory/contexts.py)
    rows = session(
        "s", ["we first decided, in the end, to say what really happened", "pre-commit hook bypassed"], role="assistant"
    )
    mem = memory_with(rows)
    stripped = _recall(mem, "when did we first decide about the hook", k=1, scaffold=False).hits
    assert [h.text for h in stripped] == ["pre-commit hook bypassed"]
    framed = _recall(mem, "when did we first decide about the hook", k=1).hits  # the default keeps them
    assert framed[0].text.startswith("we first decided")


def test_answers_of_several_memories_merge_into_distinct_passages():
    from funes.results import Hit, RecallResult
    from funes.retrieval.multi import merge

    def hit(cid, text, score):
        return Hit(0, cid, text, "s", "w", "t", "", "text", 0, "claude_code", "user", score)

    local = RecallResult("q", "local", [hit("a", "the fix  was X", 0.9), hit("b", "other", 0.5)])
    remote = RecallResult("q", "hf://d/x", [hit("c", "the fix was X", 0.95), hit("a", "the fix  was X", 0.9)])
    merged = merge([local, remote], k=8)
    assert [(h.id, h.memory) for h in merged.hits] == [("c", "hf://d/x"), ("b", "local")]
