"""The cross-lingual bridge: English questions reach Chinese and Japanese passages and back, a word in
several forms counts once, and an English memory answers exactly as without it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_support import FakeEmbedder, memory_with, session

CHINESE = [
    "共享 PV 的回收策略应设为 Retain，删除开发机时不能丢失数据",
    "今天先看一下前端的构建速度",
    "把调度器的日志级别调高一点",
]
ENGLISH = [
    "we tuned the CI cache so the frontend builds finish faster",
    "the scheduler reserves quota per queue before any pod exists",
    "lunch break, back in an hour",
]


def _retriever(mem):
    from funes.retrieval.retriever import Retriever

    return Retriever(mem, embedder=FakeEmbedder(), reranker=None)


def _ask(r, query, **kw):
    return r.recall(query, k=3, neighbors=0, half_life=0, legs=("bm25",), **kw).hits


def test_an_english_question_finds_the_chinese_passage(funes_home):
    r = _retriever(memory_with(session("zh", CHINESE) + session("en", ENGLISH)))
    question = "Why must the shared volume keep its data when a dev machine is deleted?"
    assert "zh-t0" not in [h.turn_uuid for h in _ask(r, question, bridge_weight=0)]
    assert _ask(r, question)[0].turn_uuid == "zh-t0"


def test_a_chinese_question_finds_the_english_passage(funes_home):
    r = _retriever(memory_with(session("zh", CHINESE) + session("en", ENGLISH)))
    assert "en-t1" not in [h.turn_uuid for h in _ask(r, "队列配额怎么预留", bridge_weight=0)]
    assert _ask(r, "队列配额怎么预留")[0].turn_uuid == "en-t1"


def test_an_english_memory_answers_as_without_the_bridge(funes_home):
    r = _retriever(memory_with(session("en", ENGLISH)))
    for question in ("which cache made the frontend builds faster", "how is quota reserved per queue"):
        on, off = _ask(r, question), _ask(r, question, bridge_weight=0)
        assert [(h.turn_uuid, h.score) for h in on] == [(h.turn_uuid, h.score) for h in off]


def test_a_word_in_several_forms_counts_once_with_the_idf_of_the_word_itself(tmp_path):
    from funes.memory import bm25

    docs = [["设备", "权限"], ["设备", "設備", "权限"], ["devic", "list"], ["devic", "setup"], ["devic"], ["其他"]]
    bm25.save(bm25.build(docs, 0), tmp_path / "seg")
    segments = [bm25.load(tmp_path / "seg", 0)]
    forms = (("设备",), ("設備",))
    rows, scores = bm25.search(segments, [], 10, synonyms=[bm25.Synonyms(0.5, forms, ("devic",))])
    got = dict(zip(rows.tolist(), scores.tolist()))
    assert set(got) == {0, 1}
    avgdl = sum(map(len, docs)) / len(docs)
    idf = math.log1p((len(docs) - 3 + 0.5) / (3 + 0.5))  # df of "devic" (3), not of 设备 (2)
    for row in (0, 1):
        norm = bm25.K1 * (1 - bm25.B + bm25.B * len(docs[row]) / avgdl)
        assert got[row] == pytest.approx(0.5 * idf / (1 + norm), rel=1e-5)  # one match, however many forms

    # a form of two terms scores their mean; plain terms are scored as before, beside the synonyms
    plain, _ = bm25.search(segments, ["权限"], 10)
    rows, scores = bm25.search(segments, ["权限"], 10, synonyms=[bm25.Synonyms(1.0, (("设备", "absent"),))])
    assert set(rows.tolist()) == set(plain.tolist()) == {0, 1}
    assert np.all(scores > 0)


def test_the_glossary_is_well_formed_and_the_bridge_is_validated(funes_home):
    from funes import cli
    from funes.commands.recall import request
    from funes.errors import UsageError
    from funes.memory import tokenize
    from funes.retrieval import bridge

    forward, reverse = bridge._tables()
    assert len(forward) > 400 and len(reverse) > 1000
    for forms in forward.values():
        assert forms and all(tokenize.cjk_runs("".join(f)) for f in forms)
    assert request("deploy").bridge_weight == bridge.WEIGHT
    assert request("deploy", bridge_weight=0).bridge_weight == 0
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(UsageError, match="--bridge"):
            request("deploy", bridge_weight=bad)
    assert cli.build_parser().parse_args(["recall", "x"]).bridge == bridge.WEIGHT
