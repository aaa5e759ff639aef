"""Which texts of a batch can hold a finding of the in-process engines at all, decided by polars
over the whole batch column (Rust regex, all cores): the others are never handed to them.

Every finding the funes rules and detect-secrets plugins report lies inside one text and starts
with a match of a regex that module names as necessary (`NECESSARY`: its token shapes, the
window-opening keyword conditions, the detect-secrets plugin patterns...). A text matching none
of their Rust supersets (`superset.py`) cannot yield a finding, so skipping it changes nothing;
`FUNES_SCAN_EXACT=1` turns the gate off to compare. When a pattern has no translation, or polars
cannot take a text, every text (or that one) is a candidate. `pick` also says which texts can
hold a finding of `bare` (~3 % of the candidates on day zero: one of its patterns matched), so
that its whole-text scans can run over those only (scan/__init__.py: when they are a small part).
"""

from __future__ import annotations

import functools
import os
import re

from funes.scan import bare, detectsecrets, manifests, rules, windows
from funes.scan.superset import FOLD_CHAR, FOLD_PATTERN, rust_superset
from funes.scan.views import B64RUN

# Rust's lazy DFA gives up on one alternation of every pattern (~100 of them, some with large
# counted repeats): they run as groups, each its own polars expression. `bare`'s four shapes
# (class runs no literal leads) go two to a group of their own (`pick`), the four lowered window
# conditions one group, the rest 8 to a group: as fast as the groups of 4 before on the real
# corpus and the day-zero batches (larger groups were faster on the day-zero prose and up to 2x
# slower on the corpus: bench/README.md "the scan worker's own CPU")
_GROUP = 8
_GROUP_SHAPES = 2
_GROUP_LOWERED = 4


def exact() -> bool:
    """True when every text must be scanned (`FUNES_SCAN_EXACT=1`): the reference the gate is
    compared against."""
    return os.environ.get("FUNES_SCAN_EXACT", "") not in ("", "0")


def necessary() -> list[tuple[re.Pattern | str, bool]]:
    """(pattern, on the lowered text) pairs: every finding's text matches one of them."""
    raw = rules.NECESSARY + bare.NECESSARY + manifests.NECESSARY + detectsecrets.necessary()
    return [(p, False) for p in raw] + [(p, True) for p in windows.NECESSARY_LOWERED]


_SHAPES = bare.NECESSARY  # the patterns of the lead groups (`pick`)


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[str, ...], int] | None:
    """(groups, how many lead): the first groups hold `bare`'s shapes only, so that a text
    matching none of them is spared that module's whole-text scans (`shapes`)."""
    led: list[str] = []
    lowered: list[str] = []
    shapes: list[str] = []
    for p, low in necessary():
        # a lowered text's preimages: the pattern under (?i) over the raw text
        rx = rust_superset(p, ignorecase=low, folded=True)
        if rx is None:
            return None
        (shapes if p in _SHAPES else lowered if low else led).append(rx)
    lead = _grouped(shapes, _GROUP_SHAPES)
    groups = lead + _grouped(lowered, _GROUP_LOWERED) + _grouped(led, _GROUP)
    try:
        _contains(["probe"], groups, False, len(lead))
    except Exception:  # a pattern Rust's regex syntax refuses: no gate, never a wrong one
        return None
    return groups, len(lead)


def _grouped(patterns: list[str], size: int) -> tuple[str, ...]:
    return tuple("|".join(f"(?:{p})" for p in patterns[i : i + size]) for i in range(0, len(patterns), size))


def _contains(texts: list[str], groups, fold: bool, lead: int = 0) -> list[tuple[bool, bool]]:
    """Per text: (any group matches, one of the first `lead` does)."""
    import polars as pl

    if not texts:
        return []
    series = pl.Series(texts, dtype=pl.String)
    frame = pl.DataFrame({"t": series.str.replace_all(FOLD_PATTERN, FOLD_CHAR) if fold else series})
    each = frame.select(pl.col("t").str.contains(g).alias(str(i)) for i, g in enumerate(groups))
    hit = each.select(
        pl.any_horizontal(pl.all()).alias("any"),
        (pl.any_horizontal(pl.col(str(i)) for i in range(lead)) if lead else pl.lit(False)).alias("lead"),
    )
    return list(zip(hit["any"].to_list(), hit["lead"].to_list()))


def candidates(texts: list[str]) -> list[bool]:
    """Per text: True unless it provably holds no in-process finding."""
    return [a for a, _ in pick(texts)]


def pick(texts: list[str]) -> list[tuple[bool, bool]]:
    """Per text: (`candidates`, whether it may hold a finding of `bare`'s shapes: False
    proves that module finds nothing in it, True implies the first)."""
    pats = None if exact() else _patterns()
    if pats is None or not texts:
        return [(True, True)] * len(texts)
    return _matching(texts, *pats)


def may_hold_b64(texts: list[str]) -> list[bool]:
    """Per text: True unless it provably holds no base64 run (`views.B64RUN`), so no decoded view."""
    groups = None if exact() else _b64()
    if groups is None or not texts:
        return [True] * len(texts)
    return [a for a, _ in _matching(texts, groups, 0)]


@functools.lru_cache(maxsize=1)
def _b64() -> tuple[str, ...] | None:
    rx = rust_superset(B64RUN, folded=True)
    return None if rx is None else (rx,)


def _matching(texts: list[str], groups, lead: int) -> list[tuple[bool, bool]]:
    # the patterns are ASCII-only: a non-ASCII text is folded first (each such character -> DEL)
    is_ascii = [t.isascii() for t in texts]
    plain = iter(_contains([t for t, a in zip(texts, is_ascii) if a], groups, False, lead))
    other = iter(_folded_candidates([t for t, a in zip(texts, is_ascii) if not a], groups, lead))
    return [next(plain) if a else next(other) for a in is_ascii]


def _folded_candidates(texts: list[str], groups, lead: int) -> list[tuple[bool, bool]]:
    try:
        return _contains(texts, groups, True, lead)
    except UnicodeEncodeError:  # a lone surrogate: polars takes UTF-8 only; those texts are scanned
        ok = [_utf8(t) for t in texts]
        hits = _contains([t if o else "" for t, o in zip(texts, ok)], groups, True, lead)
        return [(a or not o, b or not o) for (a, b), o in zip(hits, ok)]


def _utf8(t: str) -> bool:
    try:
        t.encode()
        return True
    except UnicodeEncodeError:
        return False
