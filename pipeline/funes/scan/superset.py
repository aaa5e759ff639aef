"""A Python regex as a Rust regex that matches wherever it does (and maybe elsewhere): the pattern
polars runs over a whole batch column to prove which texts the Python regex cannot match.

Conservative by construction, walking the stdlib's own parse of the pattern: lookarounds, anchors
and word boundaries only restrict a match, so they are dropped; a backreference becomes its
group's pattern; a bounded repeat {m,n} becomes {m,}. Classes differ between the engines outside
ASCII (Python's `\\w`/`\\d`/`\\s` and case folding are not Rust's), so a positive class keeps its
exact ASCII part and admits every non-ASCII character, and a negated class excludes only what is
surely in the Python class. Anything else (a conditional group, a case-insensitive non-ASCII
literal or negated letter class) has no translation: None, and the caller runs the Python regex.

`folded=True` translates for texts whose every non-ASCII character was replaced by DEL (`fold`):
there the DEL stands for "some non-ASCII character", so every part of the pattern that may match
one matches DEL and no negated class excludes it. Rust runs these ASCII-only patterns several
times faster than ones with Unicode ranges.
"""

from __future__ import annotations

import re
from re import _constants as _sc  # type: ignore[attr-defined]
from re import _parser as _sp  # type: ignore[attr-defined]

_NON_ASCII = "\\x{80}-\\x{10FFFF}"
FOLD_CHAR = "\x7f"
FOLD_PATTERN = "[^\\x{0}-\\x{7f}]"  # what `fold` replaces by FOLD_CHAR
_CATEGORY_ASCII = {  # each category's exact ASCII members, as Python's re sees them
    cat: frozenset(c for c in map(chr, range(128)) if re.fullmatch(rx, c))
    for cat, rx in (
        (_sc.CATEGORY_DIGIT, r"\d"),
        (_sc.CATEGORY_NOT_DIGIT, r"\D"),
        (_sc.CATEGORY_SPACE, r"\s"),
        (_sc.CATEGORY_NOT_SPACE, r"\S"),
        (_sc.CATEGORY_WORD, r"\w"),
        (_sc.CATEGORY_NOT_WORD, r"\W"),
    )
}
_REPEATS = {_sc.MAX_REPEAT, _sc.MIN_REPEAT, getattr(_sc, "POSSESSIVE_REPEAT", _sc.MAX_REPEAT)}
_DROPPED = {_sc.AT, _sc.ASSERT, _sc.ASSERT_NOT}


class _Untranslatable(Exception):
    pass


def _char(c: int) -> str:
    return f"\\x{{{c:x}}}"


def fold(text: str) -> str:
    """`text` with each non-ASCII character replaced by DEL (what polars does with FOLD_PATTERN)."""
    return re.sub(r"[^\x00-\x7f]", FOLD_CHAR, text)


def rust_superset(pattern: str | re.Pattern, ignorecase: bool = False, folded: bool = False) -> str | None:
    """A Rust regex matching a superset of the texts `pattern` matches somewhere, or None.
    `ignorecase` translates as if the pattern had the `(?i)` flag: also a superset of the texts
    whose `str.lower()` (or ASCII lowering) the pattern matches. `folded`: the regex is run on
    `fold(text)` instead of the text."""
    flags = 0
    if isinstance(pattern, re.Pattern):
        if isinstance(pattern.pattern, bytes):
            return None
        flags, pattern = pattern.flags, pattern.pattern
    try:
        parsed = _sp.parse(pattern, flags)
        icase = ignorecase or bool(parsed.state.flags & re.IGNORECASE)
        return _Translation(folded).seq(parsed, icase, parsed.state.flags & re.DOTALL)
    except (_Untranslatable, re.error, RecursionError):
        return None


class _Translation:
    def __init__(self, folded: bool):
        self.folded = folded
        # what a positive class admits beyond its ASCII part
        self.non_ascii = _char(ord(FOLD_CHAR)) if folded else _NON_ASCII
        self.groups: dict[int, str] = {}

    def seq(self, items, icase: bool, dotall: int) -> str:
        return "".join(self.item(op, av, icase, dotall) for op, av in items)

    def item(self, op, av, icase: bool, dotall: int) -> str:
        if op in _DROPPED:
            return ""
        if op is _sc.LITERAL:
            return self.literal(av, icase)
        if op is _sc.NOT_LITERAL:
            return "(?s:.)" if self.folded and av >= 0x7F else "[^" + _char(av) + "]"
        if op is _sc.ANY:
            return "(?s:.)" if dotall else "[^\\n]"
        if op in (_sc.IN, _sc.CATEGORY):
            return self.klass(av if op is _sc.IN else [(op, av)], icase)
        if op is _sc.BRANCH:
            return "(?:" + "|".join(self.seq(alt, icase, dotall) for alt in av[1]) + ")"
        return self.group(op, av, icase, dotall)

    def group(self, op, av, icase: bool, dotall: int) -> str:
        if op is _sc.SUBPATTERN:
            gid, add, rm, body = av
            sub_icase = (icase or bool(add & re.IGNORECASE)) and not rm & re.IGNORECASE
            sub = self.seq(body, sub_icase, (dotall | (add & re.DOTALL)) & ~rm)
            if gid is not None:
                self.groups[gid] = sub
            return "(?:" + sub + ")"
        if op is _sc.ATOMIC_GROUP:
            return "(?:" + self.seq(av, icase, dotall) + ")"
        if op is _sc.GROUPREF and av in self.groups:
            return "(?:" + self.groups[av] + ")"
        if op in _REPEATS:
            lo, _hi, body = av
            return "(?:" + self.seq(body, icase, dotall) + f"){{{lo},}}"
        raise _Untranslatable  # GROUPREF_EXISTS, a reference before its group, anything newer

    def literal(self, c: int, icase: bool) -> str:
        ch = chr(c)
        if not icase or not ch.isalpha():
            if icase and c >= 128:
                raise _Untranslatable
            return self.non_ascii if self.folded and c >= 128 else _char(c)
        if c >= 128:
            raise _Untranslatable  # `K` (Kelvin) matches `k` under (?i): no ASCII-safe form
        return "[" + _char(ord(ch.lower())) + _char(ord(ch.upper())) + self.non_ascii + "]"

    def klass(self, items, icase: bool) -> str:
        negate = bool(items) and items[0][0] is _sc.NEGATE
        if negate:
            items = items[1:]
        parts: list[str] = []
        letters = False
        for op, av in items:
            letters |= self.class_item(op, av, parts, icase and not negate, negate)
        if negate and icase and letters:
            raise _Untranslatable
        if not any(parts):
            return "[^\\x{0}-\\x{10FFFF}]" if not negate else "(?s:.)"
        return ("[^" if negate else "[") + "".join(parts) + "]"

    def class_item(self, op, av, parts: list[str], fold: bool, negate: bool) -> bool:
        """Appends one class item's Rust form to `parts`; True when it holds a cased letter."""
        if op is _sc.LITERAL:
            if self.folded and av >= 0x7F:  # DEL stands for every non-ASCII character
                parts.append("" if negate else self.non_ascii)
            else:
                parts.append(_char(av))
            if fold:
                if av >= 128:
                    raise _Untranslatable
                parts += [_char(ord(chr(av).lower())), _char(ord(chr(av).upper())), self.non_ascii]
            return chr(av).isalpha()
        if op is _sc.RANGE:
            lo, hi = av
            if not self.folded:
                parts.append(_char(lo) + "-" + _char(hi))
            else:  # the ASCII part, and DEL for the rest unless negated
                if lo < 0x7F:
                    parts.append(_char(lo) + "-" + _char(min(hi, 0x7E)))
                if hi >= 0x7F and not negate:
                    parts.append(self.non_ascii)
            swapped = [c.swapcase() for c in map(chr, range(lo, min(hi, 127) + 1)) if c.isalpha()]
            if fold:
                parts += [_char(ord(c)) for c in swapped] + [self.non_ascii]
            return bool(swapped) or hi >= 128
        if op is _sc.CATEGORY and av in _CATEGORY_ASCII:
            members = _CATEGORY_ASCII[av] - ({FOLD_CHAR} if self.folded and negate else set())
            parts += [_char(ord(c)) for c in sorted(members)]
            if not negate:  # a negated class may exclude only what is surely in the class
                parts.append(self.non_ascii)
            return False
        raise _Untranslatable
