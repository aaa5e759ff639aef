"""Windows of a batch text that the slower rules look at: around secret-ish words, cut at lines.

Also the offset-preserving search helpers they share (same-length lower-casing, occurrences).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

_KEYWORDS = ("pass", "pw", "secret", "token", "key", "cred", "auth", "sig", "dsn", "bearer", "pat", "contrase", "basic")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_KW_ASSIGN = re.compile(r"[a-z0-9_.\-]{0,40}(?:[\"'\]]?\s{0,3}(?:=|:)|>|[\"']\s{0,3},)")  # `=` `:` `>` `",`
_KW_FLAG = re.compile(r"(?:^|[\s\"'])--?[a-z0-9_\-]{0,40}$")  # `--api-token`, `-password`
_KW_SCHEMES = ("bearer", "token", "basic")
_KW_PROSE_WORDS = ("pass", "pw", "secret", "token", "key")
_KW_PROSE = re.compile(  # `password for the db is x`, .netrc, `secret value: x`
    r"[^\n]{0,60}?\s(?:is|was)\s|word\s+\S{4}|(?:[ \t][a-z0-9_-]+){1,2}:[ \t]"
)

_KW_ANY = "(?:" + "|".join(_KEYWORDS) + ")"
# what the lowered text around a hit of the default `word_windows` matches (`gate.py`): a
# keyword used as a name, a `--flag`, an auth scheme, or prose
NECESSARY_LOWERED = [
    _KW_ANY + "(?:" + _KW_ASSIGN.pattern + ")",
    "--?[a-z0-9_\\-]{0,40}\n?" + _KW_ANY,  # `$` in _KW_FLAG also matches before a final newline
    "(?:" + "|".join(_KW_SCHEMES) + ")[ \t]",
    "(?:" + "|".join(_KW_PROSE_WORDS) + ")(?:" + _KW_PROSE.pattern + ")",
]


def word_windows(
    text: str, low: str, words: Iterable[str] | None = None, before: int = 120, after: int = 1000
) -> list[tuple[int, int]]:
    """Merged windows (within one line, `before`/`after` chars around each hit) around the
    occurrences of `words`; by default, of secret-ish words used as a name (followed by `=`/`:`,
    or a `--flag`) or as an auth scheme: all the slower rules ever look at."""
    hits = []
    for kw in _KEYWORDS if words is None else words:
        i = low.find(kw)
        while i >= 0:
            j = i + len(kw)
            if (
                words is not None
                or _KW_ASSIGN.match(low, j)
                or (low.rfind("-", max(0, i - 44), i) >= 0 and _KW_FLAG.search(low, max(0, i - 44), i))
                or (kw in _KW_SCHEMES and low[j : j + 1] in (" ", "\t"))
                or (kw in _KW_PROSE_WORDS and _KW_PROSE.match(low, j))
            ):
                hits.append(i)
            i = low.find(kw, j)
    return hit_windows(text, hits, before, after)


def hit_windows(text: str, hits: list[int], before: int = 120, after: int = 1000) -> list[tuple[int, int]]:
    """Merged windows around `hits`, each cut at the line ends."""
    out: list[list[int]] = []
    for i in sorted(hits):
        if out and i < out[-1][1]:
            continue
        ws = max(text.rfind("\n", max(0, i - before), i) + 1, i - before, 0)
        we = text.find("\n", i, i + after)
        we = min(len(text), i + after) if we < 0 else we
        if out and ws <= out[-1][1]:
            out[-1][1] = max(out[-1][1], we)
        else:
            out.append([ws, we])
    return [(ws, we) for ws, we in out]


def lower(text: str) -> str:
    """Lower-cased text with the same offsets (str.lower can change the length; rarely)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def lower_joined(texts: list[str], sep: str, joined: str, keeps_length: bool | None = None) -> str:
    """`lower(joined)` for `joined` = sep.join(texts) (`sep` starts and ends with a newline and
    holds no cased character), lowering each text on its
    own: most texts are ASCII, whose lowering is a byte copy, where lowering the joined (non-ASCII
    as soon as one text is) string costs ~3x more. Equal to `lower(joined)`: str.lower maps each
    character alone except a final sigma, whose context ends at the separator's newline (neither
    cased nor case-ignorable) exactly as at a text's end; when any text changes length, the
    whole batch falls back to `lower`'s offset-preserving form. `keeps_length`, when given, is
    that decision taken over a larger batch these texts were picked from, so that each text is
    lowered as it would be there."""
    lows = [t.lower() for t in texts]
    if keeps_length is None:
        keeps_length = all(len(a) == len(b) for a, b in zip(lows, texts))
    if not keeps_length:
        return joined.translate(_ASCII_LOWER)
    return sep.join(lows)


def lowering_keeps_length(texts: list[str]) -> bool:
    """True when no text changes length under str.lower (an ASCII one never does)."""
    return all(t.isascii() or len(t.lower()) == len(t) for t in texts)


def occurrences(text: str, value: str) -> Iterable[int]:
    """Start offsets of the non-overlapping occurrences of `value` in `text`."""
    i = text.find(value)
    while i >= 0:
        yield i
        i = text.find(value, i + len(value))


def own_text(text: str, s: int, e: int, reach: int) -> tuple[int, int]:
    """Bounds, at most `reach` chars either side, of the one input text holding text[s:e] when the
    in-process engines scan a batch joined with NUL separators."""
    lo = text.rfind("\x00", max(0, s - reach), s) + 1 or max(0, s - reach)
    hi = text.find("\x00", e, e + reach)
    return lo, (min(len(text), e + reach) if hi < 0 else hi)
