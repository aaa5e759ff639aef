"""The literal text every match of a regex must start with: a rule whose literals do not occur in
a batch cannot match it, so its regex pass over the batch is skipped.

A regex pass costs ~1 ns per character per rule, and so does CPython's substring search; one
Aho-Corasick pass (polars `extract_many`) finds which of all the rules' literals occur at all in
~4 ms per MB (bench/README.md "## Day zero").

Exact by construction: only the pattern's leading run of literals and small literal classes is
used, and a pattern with case-insensitive flags or anything else first has no prefilter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# the stdlib's own regex parser (re._parser since 3.11; sre_parse, deprecated, is its alias)
from re import _constants as _sc  # type: ignore[attr-defined]
from re import _parser as _sp  # type: ignore[attr-defined]

MAX_PREFIXES = 64


def literal_prefixes(pattern: str | re.Pattern) -> tuple[str, ...] | None:
    """The strings one of which starts every match of `pattern`; None when there is no such set."""
    if isinstance(pattern, re.Pattern):
        if pattern.flags & (re.IGNORECASE | re.VERBOSE) or isinstance(pattern.pattern, bytes):
            return None
        pattern = pattern.pattern
    parsed = _sp.parse(pattern)
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    out = [""]
    for op, av in parsed:
        if op is _sc.LITERAL:
            out = [p + chr(av) for p in out]
        elif op is _sc.IN and av and all(o is _sc.LITERAL for o, _ in av) and len(out) * len(av) <= MAX_PREFIXES:
            out = [p + chr(a) for p in out for _, a in av]
        else:
            break
    return tuple(out) if out[0] else None


# below this many characters plain substring tests cost less than handing the text to polars
SMALL_TEXT = 1 << 16


def present(literals: Iterable[str], text: str) -> frozenset[str]:
    """Those of `literals` that occur in `text`."""
    lits = sorted(set(literals))
    if not lits or not text:
        return frozenset()
    if len(text) >= SMALL_TEXT:
        import polars as pl

        try:
            found = pl.Series([text]).str.extract_many(lits, overlapping=True)[0]
            return frozenset(found.to_list())
        except UnicodeEncodeError:  # a lone surrogate: polars takes UTF-8 only
            pass
    return frozenset(x for x in lits if x in text)


def may_match(prefixes: tuple[str, ...] | None, found: frozenset[str]) -> bool:
    """False only when no match of the rule can start in a text whose `present` literals are `found`."""
    return prefixes is None or any(p in found for p in prefixes)
