"""What the fusion sees, per question: both legs' (rows, scores) and what each row is, for offline tuning.

`quality.py --dump FILE` and `devset_eval.py --dump FILE` write one JSON line per question:
{suite, qid, half, query, legs: {leg: [[row, score], ...]}, rows: {row: [session_id, seq, text_key, gold]}}
where `gold` is 1 when the row is graded a hit on its own (the dev set: right session and evidence
text; the public suites: a gold session) and `text_key` is the distinct-passage key's crc32, so
bench/fusion_tune.py can replay fusion, distinct passages and the grading without the index.
"""

from __future__ import annotations

import json
import zlib


def half(qid) -> str:
    """The fixed half a question belongs to (crc32 of its id): parameters are chosen on A and reported on B."""
    return "AB"[zlib.crc32(str(qid).encode()) & 1]


def legs_of(retriever, query: str, pool: int) -> tuple[dict, list[int]]:
    """The real legs of `retriever.run` for a request of recall's defaults `pool` deep; (legs, union of rows)."""
    from funes.retrieval.retriever import RecallRequest

    ix = retriever.indexes()
    req = RecallRequest(query, k=pool, candidates=pool, neighbors=0)
    legs = retriever.legs(ix, req)
    rows = sorted({int(r) for rows, _ in legs.values() for r in rows})
    return legs, rows


def row_records(retriever, rows: list[int]) -> list[dict]:
    import numpy as np

    if not rows:
        return []
    return retriever.memory.chunks.take(np.array(rows, dtype=np.int64), ["text", "session_id", "seq"]).to_pylist()


def line(suite: str, qid: str, half: str, query: str, legs: dict, rows: list[int], recs: list[dict], gold) -> str:
    """One dump line; `gold(record) -> bool` grades a row alone."""
    from funes.retrieval.distinct import text_key

    return json.dumps(
        {
            "suite": suite,
            "qid": qid,
            "half": half,
            "query": query,
            "legs": {n: [[int(r), round(float(s), 6)] for r, s in zip(rs, ss)] for n, (rs, ss) in legs.items()},
            "rows": {
                str(r): [rec["session_id"], int(rec["seq"]), zlib.crc32(text_key(rec["text"]).encode()), int(gold(rec))]
                for r, rec in zip(rows, recs)
            },
        }
    )
