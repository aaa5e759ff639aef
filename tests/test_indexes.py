"""memory/indexes.py on real Lance + faiss + bm25s: incremental refresh, merges, rewrites, partial vectors."""

from __future__ import annotations

import itertools
import json

import lance
import numpy as np
import pytest

from retrieval_support import add_vectors, chunk_rows, session, unit_vectors

WORDS = [
    "parser",
    "streaming",
    "batch",
    "index",
    "memory",
    "recall",
    "session",
    "decision",
    "latency",
    "ledger",
    "flaky",
    "coupon",
    "fixture",
    "expiry",
    "checkout",
    "cache",
    "vector",
    "lexical",
    "fusion",
    "ENOENT",
    "--no-verify",
    "E0425",
    "src/cli.py",
    "getUserName",
]


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 10)) for _ in range(n)]


def _rows(n: int, start: int = 0, sessions: int = 4) -> list[dict]:
    texts = _texts(n, start)
    return [
        {
            "session_id": f"s{(start + i) % sessions}",
            "turn_uuid": f"t{start + i}",
            "seq": (start + i) // sessions,
            "text": texts[i],
            "block_type": ("text", "tool_use")[i % 2],
            "harness": ("claude_code", "codex")[(start + i) % 2],
        }
        for i in range(n)
    ]


def _mem():
    from funes.memory import Memory

    return Memory.resolve(None)


def _queries(ix, dim=16):
    from funes.memory.tokenize import query_terms

    lex = [ix.lexical(query_terms(q), 10) for q in ("parser", "ENOENT cli.py", "--no-verify flaky", "getUserName")]
    vec = [ix.vector(v, 10) for v in unit_vectors(4, dim, seed=99)]
    return [(r.tolist(), np.round(s, 5).tolist()) for r, s in lex + vec]


def test_refresh_builds_then_is_a_noop(funes_home):
    from funes.memory import indexes

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(200)))
    first = indexes.refresh(mem)
    assert (first["rows"], first["added_rows"], first["rebuilt"]) == (200, 200, ["text"])
    manifest = (funes_home / "memory" / "index" / "manifest.json").read_bytes()
    again = indexes.refresh(mem)
    assert (again["added_rows"], again["added_vectors"], again["rebuilt"]) == (0, 0, [])
    assert (funes_home / "memory" / "index" / "manifest.json").read_bytes() == manifest  # nothing rewritten


def test_incremental_refresh_reads_only_new_rows_and_equals_a_fresh_build(funes_home, monkeypatch):
    from funes.memory import indexes

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(300)))
    add_vectors(mem, range(300), unit_vectors(300, seed=1))
    indexes.refresh(mem)
    read = []
    real_read = indexes._read
    monkeypatch.setattr(indexes, "_read", lambda ds, cols, lo, hi: read.append((lo, hi)) or real_read(ds, cols, lo, hi))
    for step in range(6):  # per-turn sized appends
        start = 300 + 5 * step
        mem.chunks.append(chunk_rows(_rows(5, start)))
        add_vectors(mem, range(start, start + 5), unit_vectors(5, seed=10 + step))
        stats = indexes.refresh(mem)
        assert (stats["added_rows"], stats["added_vectors"]) == (5, 5)
    assert read == [(300 + 5 * s, 305 + 5 * s) for s in range(6)]  # text is read once, only the new rows
    incremental = indexes.load(mem)
    assert incremental.rows == 330 and len(incremental.bm25) > 1
    got = _queries(incremental)
    shutil_index(mem)
    indexes.refresh(mem)
    scratch = indexes.load(mem)
    assert len(scratch.bm25) == 1 and len(scratch.faiss) == 1
    assert got == _queries(scratch)


def shutil_index(mem):
    import shutil

    from funes.memory import indexes

    shutil.rmtree(indexes.index_dir(mem))


def test_segments_stay_logarithmic(funes_home):
    from funes.memory import indexes

    mem = _mem()
    for step in range(40):
        mem.chunks.append(chunk_rows(_rows(3, 3 * step)))
        indexes.refresh(mem)
    man = indexes.read_manifest(indexes.index_dir(mem))
    sizes = [s["end"] - s["start"] for s in man["bm25"]]
    assert sum(sizes) == 120 and len(sizes) <= 7  # log2(40 appends) + 1
    assert all(a > b for a, b in itertools.pairwise(sizes))  # each older segment is bigger than the tail behind it
    dirs = sorted(p.name for p in indexes.index_dir(mem).iterdir() if p.name.startswith("bm25."))
    assert dirs == sorted(s["dir"] for s in man["bm25"])  # merged-away segments are swept


def test_merge_start_is_a_binary_counter():
    from funes.memory.indexes import merge_start

    assert merge_start([100]) == 0
    assert merge_start([100, 10]) == 1  # nothing to merge
    assert merge_start([100, 10, 10]) == 1  # the two tens merge
    assert merge_start([100, 20, 10]) == 2
    assert merge_start([40, 20, 10, 10]) == 0  # carry all the way


def test_rewritten_table_is_rebuilt(funes_home):
    from funes.memory import indexes
    from funes.memory.tokenize import query_terms

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(50)))
    add_vectors(mem, range(50), unit_vectors(50))
    indexes.refresh(mem)
    # scrub-like rewrite: same table path, fewer and different rows
    table = chunk_rows(session("fresh", ["a brand new zanzibar passage", "another zanzibar"]))
    lance.write_dataset(table, str(mem.path / "chunks.lance"), mode="overwrite")
    stats = indexes.refresh(mem)
    assert "text" in stats["rebuilt"] and stats["rows"] == 2
    ix = indexes.load(mem)
    assert sorted(ix.lexical(query_terms("zanzibar"), 5)[0].tolist()) == [0, 1]
    assert ix.lexical(query_terms("parser"), 5)[0].tolist() == []
    assert ix.facets.sessions() == ["fresh"]


def test_rewrite_with_more_rows_is_caught_by_probes(funes_home):
    from funes.memory import indexes

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(20)))
    indexes.refresh(mem)
    lance.write_dataset(chunk_rows(_rows(30, start=1000)), str(mem.path / "chunks.lance"), mode="overwrite")
    stats = indexes.refresh(mem)
    assert "text" in stats["rebuilt"] and stats["rows"] == 30


def test_partial_vectors_and_late_backfill(funes_home):
    from funes.memory import indexes

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(100)))
    vecs = unit_vectors(100, seed=3)
    add_vectors(mem, range(0, 100, 2), vecs[::2])  # half embedded
    stats = indexes.refresh(mem)
    assert (stats["rows"], stats["vector_rows"]) == (100, 50)
    ix = indexes.load(mem)
    rows, _ = ix.vector(vecs[1], 100)
    assert set(rows.tolist()) <= set(range(0, 100, 2))
    add_vectors(mem, range(1, 100, 2), vecs[1::2])  # backfill
    assert indexes.refresh(mem)["added_vectors"] == 50
    ix = indexes.load(mem)
    assert ix.vector(vecs[1], 1)[0].tolist() == [1]
    fresh = indexes.freshness(mem)
    assert (fresh["indexed"], fresh["chunks"], fresh["vectors_indexed"], fresh["vectors"]) == (100, 100, 100, 100)


def test_filters_from_facets(funes_home):
    from funes.memory import indexes
    from funes.memory.tokenize import query_terms

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(80)))
    indexes.refresh(mem)
    ix = indexes.load(mem)
    allowed = ix.facets.mask(block_type="tool_use", harness="codex")
    rows, _ = ix.lexical(query_terms("parser fixture cache"), 50, allowed)
    assert len(rows) and all(allowed[r] for r in rows)
    assert not ix.facets.mask(block_type="no_such_type").any()
    assert ix.facets.mask() is None


def test_ivf_segment_above_threshold(funes_home, monkeypatch):
    from funes.memory import indexes, vecindex

    monkeypatch.setattr(vecindex, "IVF_MIN", 400)
    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(600)))
    vecs = unit_vectors(600, seed=5)
    add_vectors(mem, range(600), vecs)
    indexes.refresh(mem)
    man = indexes.read_manifest(indexes.index_dir(mem))
    assert [s["kind"] for s in man["faiss"]] == ["ivf"] and man["faiss"][0]["nprobe"] >= 16
    ix = indexes.load(mem)
    hits = sum(ix.vector(vecs[i], 1)[0].tolist() == [i] for i in range(0, 600, 20))
    assert hits >= 28  # a stored vector finds itself (IVF is approximate: allow a miss or two)
    allowed = np.zeros(600, dtype=bool)
    allowed[::3] = True
    rows, _ = ix.vector(vecs[7], 10, allowed)
    assert len(rows) and all(r % 3 == 0 for r in rows)


def test_crashed_refresh_tail_is_cut_back(funes_home):
    from funes.memory import facets, indexes

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(10)))
    indexes.refresh(mem)
    man = indexes.read_manifest(indexes.index_dir(mem))
    fdir = indexes.index_dir(mem) / f"facets.{man['generation']}"
    with open(fdir / "seq.bin", "ab") as f:  # a refresh killed after appending facets, before its manifest
        f.write(np.arange(7, dtype=np.int64).tobytes())
    mem.chunks.append(chunk_rows(_rows(5, start=10)))
    indexes.refresh(mem)
    assert (fdir / "seq.bin").stat().st_size == 15 * 8
    ix = indexes.load(mem)
    assert np.asarray(ix.facets.seq).tolist() == [r["seq"] for r in _rows(10) + _rows(5, start=10)]
    assert facets.epoch("2026-06-19T01:29:59.000Z") == pytest.approx(1781832599.0)
    assert facets.epoch("1781832599000") == pytest.approx(1781832599.0)
    assert np.isnan(facets.epoch("yesterday")) and np.isnan(facets.epoch(""))


def test_manifest_records_model_and_rows(funes_home):
    from funes.memory import indexes

    mem = _mem()
    mem.chunks.append(chunk_rows(_rows(30)))
    add_vectors(mem, range(30), unit_vectors(30))
    indexes.refresh(mem)
    man = json.loads((indexes.index_dir(mem) / "manifest.json").read_text())
    assert man["vectors"]["model"] == mem.manifest()["embedding_model"] and man["vectors"]["dim"] == 16
    assert man["chunks"]["rows"] == 30 and man["chunks"]["version"] == mem.chunks.version()
    assert man["bm25"][0]["start"] == 0 and man["bm25"][0]["end"] == 30


def test_facets_code_each_row_as_a_row_by_row_pass_would(tmp_path):
    """facets.append codes each distinct value once; the files hold what coding every row gives."""
    import math

    import pyarrow as pa

    from funes.memory import facets

    def table(rows):
        return pa.table(
            {k: [r[i] for r in rows] for i, k in enumerate(["session_id", "seq", "block_type", "harness", "ts"])}
        )

    first = [
        ("s2", 0, "text", "codex", "2026-01-02T03:04:05Z"),
        ("s1", 1, None, None, None),
        ("s2", 2, "tool_use", "codex", ""),
    ]
    later = [
        ("s3", 0, "", "pi", "1700000000000"),
        ("s1", None, "text", "claude_code", "2026-01-02T03:04:05Z"),
        ("s3", 1, "tool_result", "pi", "bad"),
    ]
    meta = facets.append(tmp_path, 0, {}, table(first))
    meta = facets.append(tmp_path, len(first), meta, table(later))
    got = facets.load(tmp_path, len(first) + len(later), meta)
    rows = first + later
    sessions = list(dict.fromkeys(r[0] for r in rows))
    kinds = list(dict.fromkeys(r[2] or "" for r in rows))
    harnesses = list(dict.fromkeys(r[3] or "" for r in rows))
    assert facets.read_sessions(tmp_path, meta["sessions"]) == sessions == ["s2", "s1", "s3"]
    assert meta["block_types"] == kinds and meta["harnesses"] == harnesses
    assert got.session.tolist() == [sessions.index(r[0]) for r in rows]
    assert got.seq.tolist() == [r[1] or 0 for r in rows]
    assert got.block_type.tolist() == [kinds.index(r[2] or "") for r in rows]
    assert got.harness.tolist() == [harnesses.index(r[3] or "") for r in rows]
    want = [facets.epoch(r[4]) for r in rows]
    assert [(math.isnan(a), a if not math.isnan(a) else 0) for a in got.ts.tolist()] == [
        (math.isnan(b), b if not math.isnan(b) else 0) for b in want
    ]
    assert want[3] == 1700000000.0 and math.isnan(want[5])
