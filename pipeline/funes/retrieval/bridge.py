"""A cross-lingual bridge for the lexical leg: an English question also looks for the Chinese and
Japanese words a transcript in those languages would use, and a Chinese or Japanese one for the English.

The default embedder reads English only, and BM25 matches tokens, so a question asked in English about
a session written in Chinese found it only through identifiers both happen to share. The bridge adds to
the lexical query, for each word of the question the glossary knows (glossary.tsv: common words of
coding sessions, each with its Simplified Chinese, Traditional Chinese and Japanese forms), that word
in the other scripts: one word however many forms it has, as informative as the word itself
(`bm25.Synonyms`), weighing `WEIGHT` against the question's own words, so a passage that matches the
question itself still ranks first. Deterministic and local: a table, no model.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files

from funes.memory import tokenize
from funes.memory.bm25 import Synonyms

# the bridged words' weight against the question's own (0 = no bridge); chosen on half A of the dev
# set (bench/README.md "A cross-lingual bridge")
WEIGHT = 0.5
_WORD = re.compile(r"[A-Za-z]+")  # one word at a time: "batch-update" looks up both


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, tuple[tuple[str, ...], ...]], tuple[tuple[str, str], ...]]:
    """(English stem -> its renderings as index tokens, (rendering, English stem) pairs)."""
    forward: dict[str, list[tuple[str, ...]]] = {}
    reverse: list[tuple[str, str]] = []
    for line in (files("funes.retrieval") / "glossary.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        word, _, renderings = line.partition("\t")
        stem = tokenize.query_terms(word)
        if len(stem) != 1:
            continue  # a stopword: nothing the lexical leg would look for
        forms = forward.setdefault(stem[0], [])
        for r in renderings.split():
            tokens = tuple(tokenize.query_terms(r))
            if tokens and tokens not in forms:
                forms.append(tokens)
            reverse.append((r, stem[0]))
    return {s: tuple(f) for s, f in forward.items()}, tuple(reverse)


def synonyms(query: str, own: list[str], weight: float) -> list[Synonyms]:
    """The words the bridge adds to a query whose own lexical terms are `own`: each English word's
    renderings, and the English of each rendering its Chinese or Japanese text contains."""
    forward, reverse = _tables()
    stems = dict.fromkeys(s for word in _WORD.findall(query) for s in tokenize.query_terms(word))
    out = [Synonyms(weight, forward[s], (s,)) for s in stems if s in forward]
    runs = tokenize.cjk_runs(query)
    back: dict[str, list[str]] = {}
    for rendering, stem in reverse if runs else ():
        if stem not in own and any(rendering in run for run in runs):
            back.setdefault(stem, []).extend(tokenize.query_terms(rendering))
    out.extend(Synonyms(weight, ((s,),), tuple(dict.fromkeys(r))) for s, r in back.items())
    return out
