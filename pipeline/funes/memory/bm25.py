"""BM25 segments: term-frequency postings of one contiguous chunk-row range, scored with global statistics.

A segment is a bm25s index directory (``data/indices/indptr.csc.index.npy``, ``vocab.index.json``,
``params.index.json``) whose ``data`` holds the raw term frequency of each (term, document)
posting rather than a precomputed score, plus ``doclen.npy`` (tokens per document). Precomputed
bm25s scores bake in the segment's own IDF and average length, which would make a 5-row delta
segment score on a different scale from the base; keeping tf lets `search` score every segment
with the statistics of the WHOLE memory (N, document frequency summed over segments, average
length), so any split into segments ranks exactly like one index built from scratch.

Reading skips the bm25s import (it pulls scipy, ~0.5 s on a cold CLI): the arrays are opened with
``np.load(mmap_mode="r")``, which is what ``bm25s.BM25.load(..., mmap=True)`` does. Parsing the
JSON vocabulary is skipped too (~0.3 s per 75k terms): ``vocab.hash.npy`` holds the sorted 64-bit
blake2b hashes of the terms and ``vocab.ids.npy`` their ids, so a query term is a binary search in
a memory map. The JSON stays the source of truth (merges read it; bm25s can load the directory).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from funes.memory.tokenize import Numbering

K1 = 1.2
B = 0.75
_FILES = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")


@lru_cache(maxsize=1 << 18)  # a run saves each term again in every merge of its segments
def term_hash(term: str) -> int:
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


class HashVocab:
    """term -> id over memory-mapped sorted hashes (what a reader needs, without parsing JSON)."""

    def __init__(self, hashes: np.ndarray, ids: np.ndarray, folder: Path):
        self.hashes, self.ids, self.folder = hashes, ids, folder

    def get(self, term: str) -> int | None:
        h = np.uint64(term_hash(term))
        i = int(np.searchsorted(self.hashes, h))
        return int(self.ids[i]) if i < len(self.hashes) and self.hashes[i] == h else None

    def __len__(self) -> int:
        return len(self.hashes)

    def items(self):
        return json.loads((self.folder / "vocab.index.json").read_text(encoding="utf-8")).items()


@dataclass
class Segment:
    start: int  # first chunk row covered
    vocab: dict[str, int] | HashVocab
    data: np.ndarray  # float32 term frequencies, CSC by term
    indices: np.ndarray  # int32 local document of each posting
    indptr: np.ndarray  # int64, len(vocab)+1
    doclen: np.ndarray  # float32 tokens per document

    @property
    def n(self) -> int:
        return len(self.doclen)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        tid = self.vocab.get(term)
        if tid is None:
            return None
        lo, hi = int(self.indptr[tid]), int(self.indptr[tid + 1])
        return self.indices[lo:hi], self.data[lo:hi]


def build(token_lists: list[list[str]], start: int) -> Segment:
    """Postings of documents `start`, `start+1`, ... (one token list each)."""
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    flat = list(chain.from_iterable(token_lists))
    vocab = {t: i for i, t in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    return build_ids(vocab, ids, lengths, start)


def build_documents(lines: list[str], texts, start: int, numbering: Numbering | None = None) -> Segment:
    """`build(tokenize_many(f"{line}\\n{text}" ...), start)`, the same segment (vocabulary order
    included), without joining the documents (memory/contexts.py); `texts` may be the Arrow column
    read from the chunk table. `numbering`: the piece cache the calls of one refresh share."""
    from funes.memory.tokenize import document_ids

    return build_ids(*document_ids(lines, texts, numbering=numbering), start)


def build_ids(vocab: dict[str, int], ids: np.ndarray, lengths: np.ndarray, start: int) -> Segment:
    """Postings from every token of the documents as a term id, in document order (`lengths` each)."""
    n = len(lengths)
    docs = np.repeat(np.arange(n, dtype=np.int32), lengths)
    # a counting sort by term (scipy's COO -> CSR, duplicates summed): the documents of each term
    # stay in order because the tokens come in document order; ~3x cheaper than np.unique on keys
    from scipy.sparse import coo_matrix

    m = coo_matrix((np.ones(len(ids), np.float32), (ids, docs)), shape=(len(vocab), max(n, 1))).tocsr()
    indptr = m.indptr.astype(np.int64)
    return Segment(
        start, vocab, m.data.astype(np.float32), m.indices.astype(np.int32), indptr, lengths.astype(np.float32)
    )


def merge(segments: list[Segment]) -> Segment:
    """One segment equal to building the adjacent `segments` together (no re-tokenising)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    items = [list(s.vocab.items()) for s in segments]
    every = [t for its in items for t, _ in its]
    # a term's id is its first-seen place over the segments' vocabularies in order: a dictionary
    # encoding of their terms, in that order, numbers them so
    try:
        enc = pc.dictionary_encode(pa.array(every, pa.string()))
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        vocab = {t: i for i, t in enumerate(enc.dictionary.to_pylist())}
    except UnicodeEncodeError:  # a term Arrow cannot hold (a lone surrogate): the same numbering in Python
        vocab = {}
        codes = np.fromiter((vocab.setdefault(t, len(vocab)) for t in every), dtype=np.int64, count=len(every))
    gmaps, at = [], 0
    for its in items:
        gmap = np.empty(len(its), dtype=np.int64)
        gmap[np.fromiter((tid for _, tid in its), dtype=np.int64, count=len(its))] = codes[at : at + len(its)]
        gmaps.append(gmap)
        at += len(its)
    data, indices, indptr = _concat_postings(segments, gmaps, len(vocab))
    doclen = np.concatenate([np.asarray(s.doclen) for s in segments]).astype(np.float32)
    return Segment(segments[0].start, vocab, data, indices, indptr, doclen)


def _concat_postings(segments: list[Segment], gmaps: list[np.ndarray], terms: int):
    """CSC postings of adjacent segments as one: each term's documents segment by segment, each in
    order (what a counting sort of all the (term, document) pairs gives), every posting copied once
    to its place instead of sorted."""
    sizes = [np.diff(np.asarray(s.indptr)) for s in segments]
    total = np.zeros(terms, dtype=np.int64)
    for g, n in zip(gmaps, sizes):
        total += np.bincount(g, weights=n, minlength=terms).astype(np.int64)
    indptr = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(total, out=indptr[1:])
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    filled = indptr[:-1].copy()  # where each term's next segment's postings go
    offset = 0
    for s, g, n in zip(segments, gmaps, sizes):
        src = np.asarray(s.indptr)[:-1]
        dest = _spread(filled[g] - src, n)
        data[dest] = np.asarray(s.data)
        indices[dest] = np.asarray(s.indices) + offset
        filled[g] += n
        offset += s.n
    return data, indices, indptr


def _spread(shift: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Position + its term's `shift`, for every posting of a segment (terms' blocks in id order)."""
    return np.repeat(shift, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)


def save(seg: Segment, folder: Path) -> None:
    """Write a bm25s-layout index directory (bm25s.BM25.load can open it too)."""
    import bm25s

    bm = bm25s.BM25(k1=K1, b=B, method="lucene")
    bm.scores = {"data": seg.data, "indices": seg.indices, "indptr": seg.indptr, "num_docs": seg.n}
    bm.vocab_dict = seg.vocab
    bm.nonoccurrence_array = None
    bm.save(str(folder), show_progress=False)
    np.save(folder / "doclen.npy", seg.doclen)
    items = list(seg.vocab.items())
    hashes = np.fromiter((term_hash(t) for t, _ in items), dtype=np.uint64, count=len(items))
    ids = np.fromiter((i for _, i in items), dtype=np.int64, count=len(items))
    order = np.argsort(hashes, kind="stable")
    np.save(folder / "vocab.hash.npy", hashes[order])
    np.save(folder / "vocab.ids.npy", ids[order])


def load(folder: Path, start: int) -> Segment:
    data, indices, indptr = (np.load(folder / f, mmap_mode="r") for f in _FILES)
    vocab = HashVocab(
        np.load(folder / "vocab.hash.npy", mmap_mode="r"), np.load(folder / "vocab.ids.npy", mmap_mode="r"), folder
    )
    doclen = np.load(folder / "doclen.npy", mmap_mode="r")
    return Segment(start, vocab, data, indices, indptr, doclen)


class Synonyms(NamedTuple):
    """One word of the query in other forms (other scripts, other languages), scored as one word.

    A document scores the best form's mean term score, times `weight`. Every form shares one idf, from
    the largest document frequency among the forms' and the `source` word's own terms (as Lucene's
    synonym query does): how informative a word is does not change with the language it is written in,
    and a rendering that is rare only because few documents are in its language must not outweigh the
    word the question used.
    """

    weight: float
    forms: tuple[tuple[str, ...], ...]
    source: tuple[str, ...] = ()


def search(
    segments: list[Segment],
    terms: list[str],
    limit: int,
    allowed: np.ndarray | None = None,
    synonyms: Sequence[Synonyms] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """Top `limit` chunk rows for the query terms (Lucene BM25 over the union of segments).

    `allowed` is a boolean mask over chunk rows (filters); rows beyond it are excluded. `synonyms`
    adds words given in several forms. Returns (rows, scores) best first, ties broken by row; only rows
    matching at least one term.
    """
    every = list(dict.fromkeys([*terms, *(t for s in synonyms for t in (*s.source, *chain(*s.forms)))]))
    if not segments or not every or limit <= 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    n_docs = sum(s.n for s in segments)
    avgdl = max(float(sum(float(np.sum(s.doclen, dtype=np.float64)) for s in segments)) / max(n_docs, 1), 1e-9)
    hits = {t: [s.postings(t) for s in segments] for t in every}
    # document frequency over the whole memory, once per term (not once per segment and term)
    dfs = {t: sum(len(q[0]) for q in hits[t] if q is not None) for t in hits}
    idfs = {t: _idf(n_docs, dfs[t]) for t in terms}  # the synonyms' forms share one idf each (below)
    shared = [_idf(n_docs, max(dfs[t] for t in (*s.source, *chain(*s.forms)))) for s in synonyms]
    rows_out, scores_out = [], []
    for i, seg in enumerate(segments):
        scores = None
        for t in terms:
            p = hits[t][i]
            if p is None or not len(p[0]):
                continue
            idf = idfs[t]
            docs, tf = p
            norm = _length_norm(seg, docs, avgdl)
            w = (idf * tf / (tf + norm)).astype(np.float32)
            part = np.bincount(docs, weights=w, minlength=seg.n)
            scores = part if scores is None else scores + part
        saturated: dict[str, np.ndarray | None] = {}  # tf / (tf + norm) per document, once per term
        for syn, idf in zip(synonyms, shared, strict=True):
            got = _best([[_saturation(hits[t][i], seg, avgdl, saturated, t) for t in form] for form in syn.forms])
            if got is not None:
                got = (syn.weight * idf) * got
                scores = got if scores is None else scores + got
        if scores is None:
            continue
        local = np.flatnonzero(scores > 0)
        rows = local + seg.start
        if allowed is not None:
            ok = rows < len(allowed)
            ok[ok] = allowed[rows[ok]]
            local, rows = local[ok], rows[ok]
        rows_out.append(rows)
        scores_out.append(scores[local].astype(np.float32))
    if not rows_out:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    rows, scores = np.concatenate(rows_out), np.concatenate(scores_out)
    return top(rows, scores, limit)


def _saturation(p, seg: Segment, avgdl: float, cache: dict, term: str) -> np.ndarray | None:
    if term not in cache:
        if p is None or not len(p[0]):
            cache[term] = None
        else:
            docs, tf = p
            cache[term] = np.bincount(docs, weights=tf / (tf + _length_norm(seg, docs, avgdl)), minlength=seg.n)
    return cache[term]


def _length_norm(seg: Segment, docs: np.ndarray, avgdl: float) -> np.ndarray:
    """BM25's k1 x (1 - b + b x doclen / avgdl) for these documents of the segment."""
    return K1 * (1 - B + B * np.asarray(seg.doclen)[docs] / avgdl)


def _best(forms: list[list[np.ndarray | None]]) -> np.ndarray | None:
    """Per document, the best form's mean over its terms (None: no form matches anywhere)."""
    best = None
    for parts in forms:
        got = [p for p in parts if p is not None]
        if got:
            mean = sum(got[1:], got[0]) / len(parts)
            best = mean if best is None else np.maximum(best, mean)
    return best


def _idf(n_docs: int, df: int) -> np.float64:
    """Lucene's BM25 idf: log(1 + (N - df + 0.5) / (df + 0.5)), in float64 (the weights are summed from it)."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def top(rows: np.ndarray, scores: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Best `limit` by score descending, ties by row ascending (deterministic)."""
    if len(rows) > limit:
        cut = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = scores >= cut
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:limit]
    return rows[order].astype(np.int64), scores[order]
