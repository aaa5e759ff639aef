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


def _rows(fused) -> list[int]:
    return [f.row for f in fused]


def _monotone(fused) -> bool:
    scores = [f.normalised for f in fused]
    return scores == sorted(scores, reverse=True) and scores[-1] >= 0.0 and scores[0] <= 1.0 + 1e-9


def test_reserved_slots_hold_each_legs_first_sessions_in_the_head():
    from funes.retrieval.hybrid import fuse, parse

    # BM25 (0.8) fills the head with sessions a, b, c; the vector leg's sessions x and y only show
    # up at the tail of the plain fused list, their rows 20/21 (x) and 30 (y)
    both = legs(
        [(1, 9.0), (2, 8.9), (3, 8.8), (4, 8.7), (5, 8.6), (6, 8.5)],
        [(20, 0.9), (21, 0.89), (30, 0.88), (4, 0.2), (5, 0.19)],
    )
    groups = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c", 20: "x", 21: "x", 30: "y"}
    plain = fuse(both, 20, parse("mm:0.8"), groups)
    assert _rows(plain)[:4] == [1, 2, 3, 4] and _rows(plain).index(20) >= 4
    held = fuse(both, 20, parse("mm:0.8@2:4"), groups)
    # each leg's first two sessions: BM25's a (row 1) and b (row 3), the vector leg's x (20) and y (30);
    # the three missing from the fused head take its last places, interleaved by leg rank (b's 3
    # after x's 20: both are second in their legs' order, BM25 first); the rows they pushed out
    # follow in fused order; nothing lost, nothing repeated
    assert _rows(held)[:4] == [1, 20, 3, 30]
    assert sorted(_rows(held)) == sorted(_rows(plain)) and len(set(_rows(held))) == len(held)
    assert _rows(held)[4:] == [r for r in _rows(plain) if r not in (1, 20, 3, 30)]
    assert _monotone(held)
    # a session already in the head keeps its place and costs no slot: BM25's a and b are there
    assert _rows(fuse(both, 20, parse("mm:0.8@1:4"), groups))[:4] == [1, 2, 3, 20]
    # without sessions each row is its own: the vector leg's two first rows 20 and 21
    assert _rows(fuse(both, 20, parse("mm:0.8@2:4")))[:4] == [1, 2, 20, 21]
    # the fused first row stays first however many rows are owed, and k cuts the list
    crowded = fuse(both, 3, parse("mm:0.8@3:3"), groups)
    assert len(crowded) == 3 and crowded[0].row == 1 and set(_rows(crowded)[1:]) <= {20, 30, 3}
    # when the legs agree nothing moves
    same = legs([(1, 3.0), (2, 2.0), (3, 1.0)], [(1, 0.9), (2, 0.8), (3, 0.7)])
    assert _rows(fuse(same, 10, parse("z:0.5@2:2"))) == _rows(fuse(same, 10, parse("z:0.5"))) == [1, 2, 3]


def test_combmnz_rank_biased_and_session_agreement_fusions():
    from funes.retrieval.hybrid import fuse, parse

    both = legs([(1, 9.0), (2, 5.0), (3, 1.0)], [(4, 0.9), (2, 0.8), (5, 0.1)])
    groups = {1: "a", 2: "b", 3: "c", 4: "d", 5: "a"}
    # CombMNZ: row 2, found by both legs, keeps its sum; the rows one leg found are halved
    mnz = fuse(both, 10, parse("mnz:0.5"))
    mm = {f.row: f.normalised for f in fuse(both, 10, parse("mm:0.5"))}
    assert {f.row: round(f.normalised, 6) for f in mnz} == {
        r: round(v * (1.0 if r == 2 else 0.5), 6) for r, v in mm.items()
    }
    assert mnz[0].row == 2 and _monotone(mnz)
    # one leg alone (the other returned nothing: a --no-embed memory) still spans [0, 1]
    for empty in (legs([(1, 9.0), (2, 5.0), (3, 1.0)], []), legs([], [(4, 0.9), (5, 0.1)])):
        for spec in ("mnz:0.8", "mm:0.8"):
            got = fuse(empty, 10, parse(spec))
            assert got[0].normalised == pytest.approx(1.0) and got[-1].normalised == pytest.approx(0.0), spec
    # rank-biased: only ranks count; P close to 1 behaves like a vote, P small like the weightier leg alone
    rbf = fuse(both, 10, parse("rbf:0.5:0.9"))
    assert rbf[0].row == 2 and rbf[0].normalised == pytest.approx(0.5 * 0.9 + 0.5 * 0.9)
    assert _rows(fuse(both, 10, parse("rbf:0.8:0.1"))) == [1, 4, 2, 3, 5]  # 0.8, 0.2, 0.1, ...: ranks, not scores
    assert fuse(legs([(7, 3.0)], [(7, 0.8)]), 10, parse("rbf:0.8:0.5"))[0].normalised == pytest.approx(1.0)
    # agreement: session a is first for BM25 (row 1) and in the vector leg's first 3 sessions (row 5),
    # so every row of a is lifted, row 5 above rows it trailed; b (row 2) is in both legs' first 3 too
    agree = fuse(both, 10, parse("agree:0.8:3:1"), groups)
    assert _rows(agree)[:3] == [1, 2, 5] and _monotone(agree)
    assert _rows(fuse(both, 10, parse("agree:0.8:1:1"), groups))[0] == 1  # M = 1: a is first only for BM25
    assert _rows(fuse(both, 10, parse("agree:0.8:3:0"), groups)) == _rows(fuse(both, 10, parse("mm:0.8")))
    assert fuse(legs([(7, 3.0)], [(7, 0.8)]), 10, parse("agree:0.8:2:0.5"), {7: "s"})[0].normalised == pytest.approx(
        1.0
    )
    for spec in ("mnz:0.7", "rbf:0.8:0.9", "agree:0.8:3:0.25", "mm:0.7@3:8", "conf:0.8:4:5@1:3"):
        assert parse(spec).spec == spec
    for bad in (
        "rbf:0.8",
        "rbf:0.8:1.5",
        "agree:0.8:3",
        "agree:0.8:0:1",
        "mm:0.8@3",
        "mm:0.8@0:5",
        "mm:0.8@3:1",
        "rrf@1:3",
        "wrrf:0.5@1:3",
        "mm:0.8+1@1:3",
        "mnz:0.8:1",
        "mm:0.8@",
        "mm:0.8+",
        "rrf@",
    ):
        with pytest.raises(ValueError):
            parse(bad)
    with pytest.raises(ValueError, match="'x' is not a number"):
        parse("agree:0.8:3:x")
    with pytest.raises(ValueError, match="BM25's weight"):
        parse("agree:w:3:1")


def _recall(mem, query, **kw):
    from funes.retrieval.retriever import Retriever

    return Retriever(mem, embedder=FakeEmbedder(), reranker=None).recall(query, neighbors=0, half_life=0, **kw)


def test_the_legs_a_benchmark_replays_are_the_ones_recall_fuses(funes_home):
    from funes.retrieval import hybrid
    from funes.retrieval.retriever import RecallRequest, Retriever

    texts = ["pin the parser version", "parser crashed on ENOENT", "we chose lance", "vector index rebuild", "x"]
    mem = memory_with(session("a", texts) + session("b", [t + " again" for t in texts]))
    r = Retriever(mem, embedder=FakeEmbedder(), reranker=None)
    for spec in ("mm:0.8", "conf:0.8:4:5", "z:0.65+1", "mm:0.7@3:8", "agree:0.8:3:0.1"):
        req = RecallRequest("parser ENOENT crash", k=6, candidates=6, neighbors=0, half_life=0, fusion=spec)
        ix = r.indexes()
        replay = hybrid.fuse(r.legs(ix, req), req.pool, hybrid.parse(spec), ix.facets.session)
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
