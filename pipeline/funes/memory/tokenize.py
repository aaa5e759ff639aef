"""BM25 tokens for transcripts: identifiers kept whole and split, prose stemmed; one function for index and query.

It lives in memory/ (not retrieval/) because the index refresh needs it and memory sits below
retrieval in the layer map; retrieval imports it for queries.

Rules (the same text always yields the same tokens, at index time and at query time):

- a raw token is a run of word characters joined by ``- . / : @ \\`` (``src/funes/cli.py``,
  ``os.path.join``, ``user@host``, ``127.0.0.1:8080``), optionally led by one or two dashes when it
  starts a word (``--no-verify``, ``-rf``);
- a plain lowercase word is stemmed (English snowball) unless it is a stopword or one character;
- anything else — a compound, a flag, an ALLCAPS word, a word with digits, camelCase — is kept
  WHOLE and lowercased but never stemmed (``--no-verify``, ``enoent``, ``e0425``,
  ``src/funes/cli.py``), and its parts (split on the joiners, ``_`` and camelCase humps) are added
  as ordinary words, so ``cli.py`` still finds ``src/funes/cli.py`` and ``getUserName`` finds
  ``user name``; an ALLCAPS word also adds its stem (a query typed in lowercase still matches);
- runs of CJK characters become character bigrams (there are no spaces to split on);
- tokens longer than 64 characters (base64, minified blobs) are dropped whole; their short parts stay.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_JOIN = r"[-./:@\\]"
_RAW = re.compile(rf"-{{0,2}}\w+(?:{_JOIN}\w+)*")
_SPLIT = re.compile(rf"(?:{_JOIN}|_)+")
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+|[^\W\d_A-Za-z]+")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
MAX_WHOLE = 64
MAX_PART = 32
MAX_KEPT = 256  # longest whitespace-free piece whose term ids the index remembers (document_ids)

STOPWORDS = frozenset(
    # Lucene's English list (bm25s STOPWORDS_EN) minus "no"/"not", plus question and pronoun words
    # that fill recall queries ("why did we change ...") and would only cost time.
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
        "i",
        "me",
        "my",
        "we",
        "our",
        "us",
        "you",
        "your",
        "he",
        "she",
        "him",
        "her",
        "his",
        "its",
        "what",
        "which",
        "who",
        "whom",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "doing",
        "have",
        "has",
        "had",
        "having",
        "been",
        "being",
        "were",
        "am",
        "can",
        "could",
        "would",
        "should",
        "so",
        "than",
        "too",
        "very",
        "just",
        "about",
        "from",
        "also",
    ]
)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Tokens of one text (with repeats: BM25 counts them)."""
    return list(chain.from_iterable(map(_expand, _RAW.findall(text))))


def tokenize_many(texts) -> list[list[str]]:
    return [tokenize(t or "") for t in texts]


def cjk_runs(text: str) -> list[str]:
    """The runs of Chinese, Japanese or Korean characters in a text."""
    return _CJK.findall(text)


def query_terms(text: str) -> list[str]:
    """Distinct query tokens in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))


# Words a recall question is framed with ("when did we first …", "what turned out to be the real
# reason …", "how did we end up …", "what did the assistant say about …") that say how the question
# is asked, not what it is about; in a transcript they are everywhere, so they only add noise.
# Query-side only: stored text is indexed in full, and a query made only of them keeps them.
SCAFFOLD = frozenset(
    [
        "first",
        "ever",
        "end",
        "ended",
        "turn",
        "turned",
        "exactly",
        "actually",
        "really",
        "suddenly",
        "originally",
        "initially",
        "finally",
        "eventually",
        "reason",
        "real",
        "decide",
        "decided",
        "happen",
        "happened",
        "conversation",
        "assistant",
        "mention",
        "mentioned",
        "talk",
        "talked",
        "discuss",
        "discussed",
        "say",
        "said",
        "tell",
        "told",
        "ask",
        "asked",
        "kept",
        "keep",
    ]
)


def lexical_terms(text: str) -> list[str]:
    """The query terms the lexical leg scores: query_terms without the question's scaffolding."""
    terms = query_terms(text)
    content = [t for t in terms if t not in _scaffold_terms()]
    return content or terms


@lru_cache(maxsize=1)
def _scaffold_terms() -> frozenset[str]:
    return frozenset(t for w in SCAFFOLD for t in _expand(w))


@lru_cache(maxsize=1 << 18)
def _expand(raw: str) -> tuple[str, ...]:
    if _CJK.search(raw):
        return _cjk(raw)
    low = raw.lower()
    if len(low) < 2:
        return ()
    if raw.isalpha() and (raw.islower() or raw.istitle() or (raw.isupper() and low in STOPWORDS)):
        return () if low in STOPWORDS else (_stem(low),)  # prose
    out = [low] if len(low) <= MAX_WHOLE else []
    if raw.isalpha() and raw.isupper():  # ENOENT, SIGSEGV: whole, plus the stem a lowercase query makes
        stem = _stem(low)
        return tuple(out + [stem]) if stem != low else tuple(out)
    out.extend(_parts(raw.lstrip("-")))
    return tuple(out)


def _parts(core: str) -> list[str]:
    pieces = [p for p in _SPLIT.split(core) if p]
    if len(pieces) == 1 and not _CAMEL.search(core):
        return []  # a single word with digits (E0425, utf8): the whole token already says it
    words: list[str] = []
    for p in pieces:
        if len(p) <= MAX_PART:  # a longer piece is a blob (base64, hash run), not words
            words.extend(_HUMP.findall(p) if _CAMEL.search(p) else [p])
    out = []
    for w in words:
        lw = w.lower()
        if len(lw) < 2 or len(lw) > MAX_PART or lw in STOPWORDS:
            continue
        out.append(_stem(lw) if lw.isalpha() else lw)
    return out


def _cjk(raw: str) -> tuple[str, ...]:
    out: list[str] = []
    pos = 0
    for m in _CJK.finditer(raw):
        out.extend(_expand_plain(raw[pos : m.start()]))
        run = m.group()
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        pos = m.end()
    out.extend(_expand_plain(raw[pos:]))
    return tuple(out)


def _expand_plain(rest: str) -> tuple[str, ...]:
    return tuple(t for r in _RAW.findall(rest) for t in _expand(r))


@lru_cache(maxsize=1 << 18)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


def document_ids(
    lines: list[str], texts, step: int = 4096, numbering: Numbering | None = None
) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """Every token of the documents ``f"{line}\\n{text}"`` as an id, without building them:
    (vocabulary in first-seen order, ids in order, tokens per document).

    Exactly ``tokenize_many`` of the joined strings flattened (tests/test_tokenize_fast.py), and
    much cheaper (bench/refresh_parts.py). No raw token spans whitespace (it is neither a word
    character nor a joiner), so a document's tokens are its line's then its text's, and a text's
    are those of its whitespace-separated pieces in order. Lines repeat over the chunks of a turn
    or a tool call, and texts repeat too (a re-read file, a harness reminder, a session stored
    twice): each DISTINCT line and text is split into pieces by Arrow, each DISTINCT piece is
    tokenised once by the reference `tokenize` (and remembered in `numbering` across the calls
    that share it), and its term ids are gathered for every occurrence with numpy instead of a
    Python list per text. A slice holding a text Arrow cannot hold (a lone surrogate) is tokenised
    text by text. `step` texts at a time bound the arrays of pieces. `texts` is a list (None reads
    as "") or an Arrow string array (its texts never become Python strings). Without `numbering`
    the call uses its own, dropped when it returns.
    """
    import numpy as np

    line_code, line_set = _distinct_codes(lines)
    text_code, text_set = _distinct_codes(texts)
    if len(text_code) != len(line_code):
        raise ValueError(f"{len(line_code)} lines for {len(text_code)} texts")
    numbering = numbering if numbering is not None else Numbering()
    numbering.bound()
    line_ids, line_len = _column_ids(numbering, line_set, step)
    text_ids, text_len = _column_ids(numbering, text_set, step)
    per_line, per_text = line_len[line_code], text_len[text_code]
    line_at = (np.cumsum(line_len) - line_len)[line_code]
    text_at = len(line_ids) + (np.cumsum(text_len) - text_len)[text_code]
    starts = np.stack([line_at, text_at], axis=1).ravel()
    sizes = np.stack([per_line, per_text], axis=1).ravel()
    vocab, ids = numbering.local(np.concatenate([line_ids, text_ids])[_ranges(starts, sizes)])
    return vocab, ids, per_line + per_text


def _distinct_codes(texts):
    """(code of each text, the distinct texts in first-seen order): a list, or an Arrow array (None = "")."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if isinstance(texts, pa.Array):
        enc = pc.dictionary_encode(pc.fill_null(texts.cast(pa.large_string()), ""))
        return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary
    seen: dict[str, int] = {}
    code = np.fromiter((seen.setdefault(t or "", len(seen)) for t in texts), dtype=np.int64, count=len(texts))
    return code, list(seen)


class Numbering:
    """Term ids shared by the `document_ids` calls given it, and each whitespace-free piece's ids.

    A refresh's batches meet mostly pieces met before; tokenising and numbering each one again per
    batch was most of a batch's cost. One refresh owns one (memory/indexes.py `_index_text`), or
    one index run's store passes share one (`indexes.shared_pieces`), so what it holds is
    released when the refresh or the run ends: a long-lived server (MCP, serve) keeps nothing
    between them. A call's result is renumbered to its own first-seen order
    (`local`), so nothing outside sees these ids. Cleared between calls past `MAX_PIECES` pieces
    or `MAX_TERMS` terms (a blob's pieces are not remembered but its terms are numbered), so one
    refresh's memory stays bounded too.
    """

    MAX_PIECES = 1 << 19
    MAX_TERMS = 1 << 19

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.ids: dict[str, int] = {}
        self.terms: list[str] = []
        self.pieces: dict[str, tuple[int, ...]] = {}

    def bound(self) -> None:
        if len(self.pieces) > self.MAX_PIECES or len(self.terms) > self.MAX_TERMS:
            self.clear()

    def of(self, text: str) -> tuple[int, ...]:
        """The term ids of `tokenize(text)`, new terms numbered on."""
        ids, every = self.ids, self.terms
        out = []
        for t in tokenize(text):
            g = ids.get(t)
            if g is None:
                g = ids[t] = len(every)
                every.append(t)
            out.append(g)
        return tuple(out)

    def local(self, ids: np.ndarray) -> tuple[dict[str, int], np.ndarray]:
        """(vocabulary, ids) numbered by first place in `ids`, as one call's own numbering would be."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        enc = pc.dictionary_encode(pa.array(ids, pa.int32()))  # distinct ids in first-seen order
        terms = self.terms
        order = enc.dictionary.to_numpy(zero_copy_only=False).tolist()
        return {terms[g]: i for i, g in enumerate(order)}, enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)


def _column_ids(numbering: Numbering, texts, step: int):
    """(ids, tokens per text) of `texts` a slice at a time, in `numbering`."""
    import numpy as np

    parts = [_slice_ids(numbering, part) for part in _slices(texts, step)]
    if not parts:
        return np.empty(0, np.int32), np.empty(0, np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _slices(texts, step: int):
    """Per `step` texts: an Arrow string array, or a list when one of them Arrow cannot hold."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if isinstance(texts, pa.Array):
        col = pc.fill_null(texts.cast(pa.large_string()), "")
        for i in range(0, len(col), step):
            yield col.slice(i, step)
        return
    for i in range(0, len(texts), step):
        part = [t or "" for t in texts[i : i + step]]
        try:
            yield pa.array(part, pa.large_string())
        except UnicodeEncodeError:  # a lone surrogate
            yield part


def _slice_ids(numbering: Numbering, texts) -> tuple[np.ndarray, np.ndarray]:
    """(ids, tokens per text) of one slice, in `numbering`."""
    import numpy as np
    import pyarrow.compute as pc

    if isinstance(texts, list):  # the rare slice Arrow cannot hold: text by text
        runs = [numbering.of(t) for t in texts]
        lens = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
        return np.fromiter(chain.from_iterable(runs), dtype=np.int32, count=int(lens.sum())), lens
    n = len(texts)
    split = pc.ascii_split_whitespace(texts)
    counts = np.diff(split.offsets.to_numpy()).astype(np.int64)  # pieces per text
    enc = pc.dictionary_encode(split.flatten())  # distinct pieces in first-seen order
    codes = enc.indices.to_numpy(zero_copy_only=False)
    distinct = enc.dictionary.to_pylist()
    known = numbering.pieces
    terms: list = list(map(known.get, distinct))  # one C-level pass; a piece met before costs no more Python
    if None in terms:
        for j, piece in enumerate(distinct):
            if terms[j] is None:
                terms[j] = numbering.of(piece)
                if len(piece) <= MAX_KEPT:  # a blob (base64, minified code) is seldom met twice
                    known[piece] = terms[j]
    lens = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
    term_of = np.fromiter(chain.from_iterable(terms), dtype=np.int32, count=int(lens.sum()))
    per = lens[codes]  # terms of each piece occurrence
    ids = term_of[_ranges(np.cumsum(lens)[codes] - per, per)]
    doc_of = np.repeat(np.arange(n, dtype=np.int32), counts)
    return ids, np.bincount(doc_of, weights=per, minlength=n).astype(np.int64)


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The positions start, start+1, ... of each (start, size), concatenated."""
    import numpy as np

    total = int(sizes.sum(dtype=np.int64))
    out_start = np.cumsum(sizes, dtype=np.int64) - sizes
    return np.repeat(starts - out_start, sizes) + np.arange(total, dtype=np.int64)
