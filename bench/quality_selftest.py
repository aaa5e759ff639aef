"""Toy checks of the quality benchmark's scoring, loaders and writers (run: python bench/quality_selftest.py).

Kept in bench/ (not tests/): it is part of the benchmark, not of funes's test suite.
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality_data import Session, Turn, lme_date, locomo_date
from quality_score import aggregate, score_question
from quality_writers import write_haystack


def test_scoring() -> None:
    turn_map = {("a", 0): "a#0", ("a", 1): "a#1", ("b", 0): "b#0", ("c", 0): "c#0", ("c", 2): "c#3"}
    hits = [("a", 0), ("a", 1), ("b", 0), ("a", 0), ("c", 2), ("c", 0)]
    # session ranking a, b, c: gold c is rank 3
    m = score_question(hits, {"c"}, {"c#3", "b#9"}, turn_map)
    assert m == {"hit@1": 0.0, "hit@5": 1.0, "hit@10": 1.0, "mrr": 1 / 3, "turn_r@5": 0.5, "turn_r@10": 0.5}, m
    # gold first
    m = score_question(hits, {"a", "c"}, set(), turn_map)
    assert m == {"hit@1": 1.0, "hit@5": 1.0, "hit@10": 1.0, "mrr": 1.0}, m
    # turn ranking a#0, a#1, b#0, c#3, c#0 (duplicate a#0 dropped): c#0 is 5th distinct turn
    m = score_question(hits, {"z"}, {"c#0"}, turn_map)
    assert m["mrr"] == 0.0 and m["hit@10"] == 0.0 and m["turn_r@5"] == 1.0, m
    m = score_question([("x", i) for i in range(5)] + [("c", 0)], {"c"}, {"c#0"}, turn_map)
    assert m["turn_r@5"] == 0.0 and m["turn_r@10"] == 1.0 and m["hit@1"] == 0.0 and m["hit@5"] == 1.0, m
    # 11 distinct sessions before gold: not in hit@10, but MRR counts it
    m = score_question([(f"s{i}", 0) for i in range(10)] + [("c", 0)], {"c"}, set(), turn_map)
    assert m["hit@10"] == 0.0 and abs(m["mrr"] - 1 / 11) < 1e-12
    assert score_question([], {"c"}, {"c#0"}, turn_map)["turn_r@10"] == 0.0
    agg = aggregate([{"hit@1": 1.0, "turn_r@5": 0.5}, {"hit@1": 0.0}])
    assert agg == {"hit@1": 50.0, "turn_r@5": 50.0, "n": 2}, agg


def test_dates() -> None:
    assert locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert locomo_date("10:37 am on 27 June, 2023").hour == 10
    assert lme_date("2023/05/30 (Tue) 23:40") == datetime(2023, 5, 30, 23, 40, tzinfo=UTC)


def test_writers() -> None:
    d = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    sessions = [
        Session(
            "s-claude",
            d,
            [
                Turn("user", "hi", "s-claude#0"),
                Turn("assistant", "  ", "s-claude#1"),
                Turn("assistant", "hello", "s-claude#2"),
            ],
        ),
        Session("s-codex", d, [Turn("user", "q", "s-codex#0"), Turn("assistant", "a", "s-codex#1")]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        turn_map, counts = write_haystack(home, sessions, "/home/bench/toy")
        assert counts == {"claude_code": 1, "codex": 1}
        assert turn_map[("s-claude", 1)] == "s-claude#2"  # the blank turn is not written
        claude = home / ".claude/projects/-home-bench-toy/s-claude.jsonl"
        recs = [json.loads(x) for x in claude.read_text().splitlines()]
        assert [r["type"] for r in recs] == ["user", "assistant"]
        assert recs[1]["parentUuid"] == recs[0]["uuid"] and recs[0]["parentUuid"] is None
        assert recs[1]["timestamp"] == "2023-05-08T13:56:20.000Z"
        codex = next((home / ".codex/sessions/2023/05/08").glob("rollout-*-s-codex.jsonl"))
        recs = [json.loads(x) for x in codex.read_text().splitlines()]
        assert recs[0]["type"] == "session_meta" and recs[0]["payload"]["id"] == "s-codex"
        assert recs[2]["payload"]["content"][0]["type"] == "output_text"
        # the real parsers read them back with the expected ids and seqs
        from funes.traces import Unit  # noqa: F401
        from funes.traces import claude as cl
        from funes.traces import codex as cx

        try:
            fc = cl.read(cl.units(home / ".claude/projects")[0]).frame
            fx = cx.read(cx.units(home / ".codex/sessions")[0]).frame
        except Exception as e:
            print(f"  (parser round trip skipped: {type(e).__name__}: {e})")
            return
        assert set(fc["session_id"]) == {"s-claude"} and fc["seq"].to_list() == [0, 1]
        assert set(fx["session_id"]) == {"s-codex"} and fx["seq"].to_list() == [0, 1]
        assert fc["workdir"][0] == "-home-bench-toy" and fx["ts"][1] == "2023-05-08T13:56:20.000Z"


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print(f"ok {name}")
