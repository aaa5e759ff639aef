"""Which texts of a batch can hold a finding of the in-process engines at all, decided by polars
over the whole batch column (Rust regex, all cores): the others are never handed to them.

Every finding the funes rules and detect-secrets plugins report lies inside one text and starts
with a match of a regex that module names as necessary (`NECESSARY`: its token shapes, the
window-opening keyword conditions, the detect-secrets plugin patterns...). A text matching none
of their Rust supersets (`superset.py`) cannot yield a finding, so skipping it changes nothing;
`FUNES_SCAN_EXACT=1` turns the gate off to compare. When a pattern has no translation, or polars
cannot take a text, every text (or that one) is a candidate.
"""

from __future__ import annotations

import functools
import os
import re

from funes.scan import bare, detectsecrets, manifests, rules, windows
from funes.scan.superset import FOLD_CHAR, FOLD_PATTERN, rust_superset
from funes.scan.views import B64RUN

# Rust's lazy DFA gives up on one alternation of every pattern (~130 of them, some with large
# counted repeats): they run as groups of a few, each its own polars expression (4 measured
# cheapest on both the day-zero texts and the real corpus, bench/README.md)
_GROUP = 4


def exact() -> bool:
    """True when every text must be scanned (`FUNES_SCAN_EXACT=1`): the reference the gate is
    compared against."""
    return os.environ.get("FUNES_SCAN_EXACT", "") not in ("", "0")


def necessary() -> list[tuple[re.Pattern | str, bool]]:
    """(pattern, on the lowered text) pairs: every finding's text matches one of them."""
    raw = rules.NECESSARY + bare.NECESSARY + manifests.NECESSARY + detectsecrets.necessary()
    return [(p, False) for p in raw] + [(p, True) for p in windows.NECESSARY_LOWERED]


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[str, ...] | None:
    out = []
    for p, lowered in necessary():
        # a lowered text's preimages: the pattern under (?i) over the raw text
        rx = rust_superset(p, ignorecase=lowered, folded=True)
        if rx is None:
            return None
        out.append(rx)
    groups = tuple("|".join(f"(?:{p})" for p in out[i : i + _GROUP]) for i in range(0, len(out), _GROUP))
    try:
        _contains(["probe"], groups, False)
    except Exception:  # a pattern Rust's regex syntax refuses: no gate, never a wrong one
        return None
    return groups


def _contains(texts: list[str], groups, fold: bool) -> list[bool]:
    import polars as pl

    if not texts:
        return []
    series = pl.Series(texts, dtype=pl.String)
    frame = pl.DataFrame({"t": series.str.replace_all(FOLD_PATTERN, FOLD_CHAR) if fold else series})
    hit = frame.select(pl.any_horizontal(pl.col("t").str.contains(g) for g in groups).alias("hit"))
    return hit["hit"].to_list()


def candidates(texts: list[str]) -> list[bool]:
    """Per text: True unless it provably holds no in-process finding."""
    if exact() or not texts:
        return [True] * len(texts)
    return _matching(texts, _patterns())


def may_hold_b64(texts: list[str]) -> list[bool]:
    """Per text: True unless it provably holds no base64 run (`views.B64RUN`), so no decoded view."""
    if exact() or not texts:
        return [True] * len(texts)
    return _matching(texts, _b64())


@functools.lru_cache(maxsize=1)
def _b64() -> tuple[str, ...] | None:
    rx = rust_superset(B64RUN, folded=True)
    return None if rx is None else (rx,)


def _matching(texts: list[str], groups) -> list[bool]:
    if groups is None:
        return [True] * len(texts)
    # the patterns are ASCII-only: a non-ASCII text is folded first (each such character -> DEL)
    is_ascii = [t.isascii() for t in texts]
    plain = iter(_contains([t for t, a in zip(texts, is_ascii) if a], groups, False))
    other = iter(_folded_candidates([t for t, a in zip(texts, is_ascii) if not a], groups))
    return [next(plain) if a else next(other) for a in is_ascii]


def _folded_candidates(texts: list[str], groups) -> list[bool]:
    try:
        return _contains(texts, groups, True)
    except UnicodeEncodeError:  # a lone surrogate: polars takes UTF-8 only; those texts are scanned
        ok = [_utf8(t) for t in texts]
        hits = _contains([t if o else "" for t, o in zip(texts, ok)], groups, True)
        return [h or not o for h, o in zip(hits, ok)]


def _utf8(t: str) -> bool:
    try:
        t.encode()
        return True
    except UnicodeEncodeError:
        return False
