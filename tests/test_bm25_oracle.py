"""BM25 oracle: funes scores its own segments; on a small corpus they must equal `bm25s` (Lucene, same k1/b).

funes re-implemented BM25 scoring so that segments built at different times score with the whole
memory's statistics; `bm25s` is the reference it replaced. Both are fed the same token lists
(funes's own tokenizer), so any difference is in the scoring.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from funes.memory import bm25
from funes.memory.tokenize import query_terms, tokenize_many
from retrieval_support import memory_with, session

DOCS = [
    "the streaming parser crashed on a rotated log file",
    "we moved off the streaming parser because it buffered everything",
    "parser parser parser: three tests for the parser",
    "unrelated text about lunch and coffee",
    "log rotation renames the file while the parser reads it",
    "a very long document " + "filler words " * 40 + "that mentions the parser once",
    "Kingfisher redacts the GitHub token before the chunk is stored",
    "the token budget of the cross-encoder is 256 word pieces",
]
QUERIES = ["streaming parser log", "parser", "token", "rotated file", "lunch coffee parser", "nothing matches xyzzy"]


def _oracle(tokens: list[list[str]], query: list[str]) -> np.ndarray:
    bm25s = pytest.importorskip("bm25s")
    ref = bm25s.BM25(method="lucene", k1=bm25.K1, b=bm25.B)
    ref.index(tokens, show_progress=False)
    return np.asarray(ref.get_scores(query), dtype=np.float64)


def _scores(rows: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n)
    out[rows] = scores
    return out


@pytest.mark.parametrize("cuts", [(), (3,), (1, 2, 5, 7)], ids=["one segment", "two", "five"])
@pytest.mark.parametrize("query", QUERIES)
def test_segment_scores_equal_bm25s(tmp_path, cuts, query):
    tokens = tokenize_many(DOCS)
    bounds = [0, *cuts, len(DOCS)]
    segments = []
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        bm25.save(bm25.build(tokens[lo:hi], lo), tmp_path / f"seg{i}")
        segments.append(bm25.load(tmp_path / f"seg{i}", lo))  # the memory-mapped read path recall uses
    terms = query_terms(query)
    want = _oracle(tokens, terms)
    rows, scores = bm25.search(segments, terms, len(DOCS))
    np.testing.assert_allclose(_scores(rows, scores, len(DOCS)), want, rtol=1e-5, atol=1e-6)
    assert set(rows.tolist()) == set(np.flatnonzero(want > 0).tolist())
    assert list(scores) == sorted(scores, reverse=True)


def test_the_memorys_lexical_leg_equals_bm25s(funes_home):
    """The same through a real memory: Lance rows, indexes.refresh, the loaded Indexes; a document
    is the chunk's context line + its text (memory/contexts.py)."""
    from funes.memory import contexts, indexes

    mem = memory_with(session("s", DOCS))
    ix = indexes.load(mem)
    cols = mem.chunks.scan(contexts.COLUMNS).to_pydict()
    tokens = tokenize_many([f"{c}\n{t}" for c, t in zip(contexts.column_lines(cols), cols["text"])])
    for query in QUERIES:
        terms = query_terms(query)
        rows, scores = ix.lexical(terms, len(DOCS))
        np.testing.assert_allclose(_scores(rows, scores, len(DOCS)), _oracle(tokens, terms), rtol=1e-5, atol=1e-6)
    assert mem.chunks.count() == len(DOCS)
