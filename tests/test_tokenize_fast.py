"""The column tokeniser (`tokenize.document_ids`, `bm25.build_documents`) yields exactly the reference tokens.

`tokenize.tokenize` stays the one definition of a token (queries use it); the index builds its
segments from the column path, so every token, the vocabulary order and the postings must be
those of `bm25.build(tokenize_many(texts))`, on edge cases, the repo's fixtures and the corpus.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain, pairwise
from pathlib import Path

import numpy as np
import pytest

from funes.memory import bm25, tokenize
from test_redact_corpus import corpus_texts

EDGE = [
    "",
    None,
    "x",
    "Hello world, the streaming parser crashed",
    "getUserName parseHTTPResponse XMLHttpRequest snake_case_name __init__ _private",
    "src/funes/cli.py os.path.join user@host 127.0.0.1:8080 C:\\Users\\me\\file.txt a.b. .hidden",
    "--no-verify -rf --- ---abc -x- a--b --",
    "ENOENT SIGSEGV E0425 utf8 HTTP2 IPv6 ALLCAPS THE AND",
    "3.14159 42 1e10 0x1F v1.2.3-rc.1 2026-12-01T14:00:00Z",
    "日本語のテキスト 中文 한국어 mixed日本english 漢x字",
    "café naïve Über Straße İstanbul ΟΔΟΣ Σίσυφος \u212aelvin ﬁle ǅemal",
    "combining e\u0301 é x\u0308y ²³ ① ٣٤ ߀ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀 zero\u200bwidth joi\u200dner",
    "a" * 65 + " " + "b" * 64 + " x" + "Ab" * 40 + " " + "/".join(["seg"] * 30) + " " + "q1w2" * 20,
    "tabs\tand\nnewlines\r\nand\x00nulls\x1b[31m ansi",
    "lone \ud800 surrogate text",
    "ＡＢＣ full-width ｆｕｌｌ ー長音",
    "spaces\u00a0nbsp\u3000ideo\u2028line\x0bvt\x0cff\x1cfs\x1fus \t\t  a.b -\n-x --\r\nflag a/ /b",
    "x" * 300 + " " + "x" * 300 + " " + "y" * 300 + ".py",  # long pieces, tokenised but not remembered
]


def _token_ids(texts, step: int = 4096, numbering=None):
    """The column tokeniser over `texts` alone (documents with an empty line)."""
    return tokenize.document_ids([""] * len(texts), texts, step, numbering)


def _build_texts(texts, start: int):
    return bm25.build_documents([""] * len(texts), texts, start)


def _flat(texts):
    vocab, ids, lengths = _token_ids(texts)
    inv = list(vocab)
    out, pos = [], 0
    for n in lengths.tolist():
        out.append([inv[i] for i in ids[pos : pos + n]])
        pos += n
    assert pos == len(ids)
    return out, vocab


def _assert_exact(texts) -> None:
    want = tokenize.tokenize_many(texts)
    got, vocab = _flat(texts)
    for t, g, w in zip(texts, got, want):
        assert g == w, t
    assert list(vocab) == list(dict.fromkeys(chain.from_iterable(want)))  # first-seen order


def _fixture_texts() -> list[str]:
    root = Path(__file__).parent / "fixtures"
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".jsonl", ".json", ".md", ".txt"):
            out.extend(p.read_text(errors="replace").splitlines())
    return out


def test_edge_cases_tokenise_exactly_as_the_reference():
    _assert_exact(EDGE)
    for t in EDGE:  # one text at a time too (no neighbour to lean on)
        _assert_exact([t])
    _assert_exact([])


def test_repo_fixtures_tokenise_exactly_as_the_reference():
    texts = _fixture_texts()
    assert len(texts) > 100
    _assert_exact(texts)


def test_corpus_tokenises_exactly_as_the_reference(corpus):
    texts = corpus_texts(corpus)[::16]  # ~1.4 MB across every agent
    assert any(not t.isascii() for t in texts)
    _assert_exact(texts)


def _postings(token_lists) -> dict[str, list[tuple[int, int]]]:
    counts: dict[str, Counter] = {}
    for d, toks in enumerate(token_lists):
        for t in toks:
            counts.setdefault(t, Counter())[d] += 1
    return {t: sorted(c.items()) for t, c in counts.items()}


@pytest.mark.parametrize("start", [0, 17])
def test_segment_from_texts_equals_the_reference_segment(start):
    texts = EDGE + _fixture_texts()[:400]
    tokens = tokenize.tokenize_many(texts)
    ref, got = bm25.build(tokens, start), _build_texts(texts, start)
    assert list(got.vocab.items()) == list(ref.vocab.items())
    for f in ("data", "indices", "indptr", "doclen"):
        a, b = getattr(got, f), getattr(ref, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f
    # and both equal postings counted one token at a time
    want = _postings(tokens)
    for term, tid in got.vocab.items():
        lo, hi = int(got.indptr[tid]), int(got.indptr[tid + 1])
        assert list(zip(got.indices[lo:hi].tolist(), got.data[lo:hi].astype(int).tolist())) == want[term]
    assert got.doclen.tolist() == [len(t) for t in tokens]
    assert got.start == start


def test_scores_are_unchanged(tmp_path):
    texts = [t for t in _fixture_texts() if t][:600]
    tokens = tokenize.tokenize_many(texts)
    halves = [(0, 250), (250, len(texts))]
    ref = [bm25.build(tokens[lo:hi], lo) for lo, hi in halves]
    for i, (lo, hi) in enumerate(halves):
        bm25.save(_build_texts(texts[lo:hi], lo), tmp_path / f"s{i}")
    got = [bm25.load(tmp_path / f"s{i}", lo) for i, (lo, _) in enumerate(halves)]
    for q in ("session tool", "claude code assistant", "error file path", "uuid message"):
        terms = tokenize.query_terms(q)
        r_rows, r_scores = bm25.search(ref, terms, 50)
        g_rows, g_scores = bm25.search(got, terms, 50)
        assert len(r_rows) and r_rows.tolist() == g_rows.tolist() and r_scores.tolist() == g_scores.tolist()


def test_empty_input_builds_an_empty_segment():
    seg = _build_texts([], 5)
    assert seg.n == 0 and len(seg.vocab) == 0 and seg.indptr.tolist() == [0]
    seg = _build_texts(["", None], 0)
    assert seg.n == 2 and seg.doclen.tolist() == [0.0, 0.0]


def test_merged_segments_equal_one_segment_built_at_once(tmp_path):
    texts = EDGE + _fixture_texts()[:500]
    whole = bm25.build(tokenize.tokenize_many(texts), 0)
    cuts = [0, 7, 200, len(texts)]
    for i, (lo, hi) in enumerate(pairwise(cuts)):
        bm25.save(_build_texts(texts[lo:hi], lo), tmp_path / f"s{i}")
    merged = bm25.merge([bm25.load(tmp_path / f"s{i}", lo) for i, lo in enumerate(cuts[:-1])])
    assert list(merged.vocab.items()) == list(whole.vocab.items())
    for f in ("data", "indices", "indptr", "doclen"):
        a, b = getattr(merged, f), getattr(whole, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f


def test_a_merge_keeps_terms_arrow_cannot_hold():
    # the tokeniser never yields one (a surrogate is not a word character), but a segment may hold any str
    parts = [bm25.build([["a\ud800", "b"], ["b"]], 0), bm25.build([["c", "a\ud800"]], 2)]
    whole = bm25.build([["a\ud800", "b"], ["b"], ["c", "a\ud800"]], 0)
    merged = bm25.merge(parts)
    assert list(merged.vocab.items()) == list(whole.vocab.items())
    assert np.array_equal(merged.indptr, whole.indptr) and np.array_equal(merged.indices, whole.indices)
    assert np.array_equal(merged.data, whole.data)


def test_slices_continue_one_numbering():
    texts = EDGE + _fixture_texts()[:300]
    whole = _token_ids(texts, step=10**9)
    for step in (1, 3, 64):
        vocab, ids, lengths = _token_ids(texts, step=step)
        assert list(vocab.items()) == list(whole[0].items())
        assert ids.tolist() == whole[1].tolist() and lengths.tolist() == whole[2].tolist()


LINES = [
    "",
    "project: funes | asked: why did the parser crash | tool: read …/memory/tokenize.py",
    "project: funes",
    "tool: Bash --no-verify-",
    "project: 日本語 | asked: 漢字の-",
    "asked: --flag getUserName ENOENT",
]


def _joined(lines, texts):
    return [f"{c}\n{t or ''}" for c, t in zip(lines, texts)]


def _assert_documents(lines, texts) -> None:
    import pyarrow as pa

    want = _token_ids(_joined(lines, texts))
    for given in (texts, pa.array([t or "" for t in texts], pa.string())):
        vocab, ids, lengths = tokenize.document_ids(lines, given, step=7)
        assert list(vocab.items()) == list(want[0].items())
        assert ids.dtype == want[1].dtype and ids.tolist() == want[1].tolist()
        assert lengths.dtype == want[2].dtype and lengths.tolist() == want[2].tolist()


def test_documents_tokenise_as_their_joined_line_and_text():
    texts = [t for t in EDGE if t is None or "\ud800" not in t] + _fixture_texts()[:300]
    lines = [LINES[(i * 7) % len(LINES)] for i in range(len(texts))]  # repeats, as a turn's chunks have
    _assert_documents(lines, texts)
    again = texts[::3] + texts  # texts repeated too, under other lines and the same ones
    _assert_documents([LINES[i % len(LINES)] for i in range(len(again))], again)
    _assert_documents([], [])
    _assert_documents(["", ""], ["", "-x"])  # an empty line: the text's own tokens, a dash flag included
    tokens = tokenize.tokenize_many(_joined(lines, texts))
    seg = bm25.build_documents(lines, texts, 9)
    ref = bm25.build(tokens, 9)
    assert list(seg.vocab.items()) == list(ref.vocab.items())
    for f in ("data", "indices", "indptr", "doclen"):
        a, b = getattr(seg, f), getattr(ref, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f


def test_corpus_documents_tokenise_as_joined(corpus):
    texts = corpus_texts(corpus)[::64]
    lines = [texts[(i * 31) % len(texts)][:120] for i in range(len(texts))]  # real words, non-ASCII too
    lines = [" ".join(c.split()) for c in lines]  # a context line is one line
    _assert_documents(lines, texts)


def test_lines_and_texts_must_pair_up():
    with pytest.raises(ValueError):
        tokenize.document_ids(["a"], ["x", "y"])


def test_results_do_not_depend_on_earlier_calls(monkeypatch):
    # the pieces' term ids are shared by the calls given one numbering; no call may see another's
    a, b = EDGE + _fixture_texts()[:200], _fixture_texts()[200:500]
    first_b = _token_ids(b)
    shared = tokenize.Numbering()
    _token_ids(a, numbering=shared)
    again_b = _token_ids(b, numbering=shared)
    shared.clear()
    monkeypatch.setattr(shared, "MAX_PIECES", 0)  # cleared before every call: the same answers
    _token_ids(a, numbering=shared)
    cleared_b = _token_ids(b, numbering=shared)
    for got in (again_b, cleared_b):
        assert list(got[0].items()) == list(first_b[0].items())
        assert got[1].tolist() == first_b[1].tolist() and got[2].tolist() == first_b[2].tolist()
    _assert_exact(b)


def test_a_numbering_is_bounded_on_terms_too(monkeypatch):
    # blob pieces (> MAX_KEPT) are never remembered, but their terms are numbered: they count
    blobs = ["/".join(f"p{i}x{j}" for j in range(60)) * 2 for i in range(200)]
    assert all(len(b) > tokenize.MAX_KEPT for b in blobs)
    shared = tokenize.Numbering()
    monkeypatch.setattr(shared, "MAX_TERMS", 1000)
    _token_ids(blobs, numbering=shared)
    assert set(shared.pieces) <= {""} and len(shared.terms) > 1000  # the empty line alone
    want = _token_ids(blobs[:5])
    got = _token_ids(blobs[:5], numbering=shared)  # cleared first, the same answer
    assert len(shared.terms) <= 1000
    assert list(got[0].items()) == list(want[0].items()) and got[1].tolist() == want[1].tolist()


def test_a_call_without_a_numbering_keeps_nothing():
    import gc

    import funes.memory.tokenize as mod

    _token_ids(EDGE)
    gc.collect()
    assert not any(isinstance(o, mod.Numbering) for o in gc.get_objects())
