"""Views of a text that map their spans back to it: JSON-unescaped text and decoded base64 runs.

A secret inside an escaped tool input (`\\"password\\": ...`, a key with literal `\\n`) or a
base64 blob is plain text in one of these views; a finding there is mapped back to exact offsets
of the raw text (a hit in a decoded base64 run covers the whole run).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re

_ESC = re.compile(r'\\(?:u(?![dD][89a-fA-F])[0-9a-fA-F]{4}|["\\/bfnrt])')  # no surrogate halves
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
B64RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/=_-])")  # greedy: whole runs
_B64_MAX = 1 << 20


class View:
    """A string derived from a raw text, with a map from its spans to spans of the raw text."""

    __slots__ = ("_segs", "escaped", "parent", "run", "text")

    def __init__(self, text, parent=None, run=None, escaped=False):
        self.text, self.parent, self.run, self.escaped, self._segs = text, parent, run, escaped, None

    def to_raw(self, start: int, end: int) -> tuple[int, int]:
        if self.run is not None:  # decoded base64: any hit covers the whole run
            start, end = self.run
        elif self.escaped:
            start, end = self._unmap(start, False), self._unmap(end - 1, True)
        return self.parent.to_raw(start, end) if self.parent else (start, end)

    def _unmap(self, v: int, end: bool) -> int:
        if self._segs is None:
            self._segs = _escape_segments(self.parent.text)
        vstarts, rstarts, rends = self._segs
        i = bisect.bisect_right(vstarts, v) - 1
        if rends[i] < 0:  # literal segment: offsets shift
            pos = rstarts[i] + (v - vstarts[i])
            return pos + 1 if end else pos
        return rends[i] if end else rstarts[i]  # an escape sequence maps as a whole


def _unescape_char(m: re.Match) -> str:
    s = m[0]
    return _SIMPLE[s[1]] if s[1] != "u" else chr(int(s[2:], 16))


def _unescape(view: View) -> View | None:
    """The JSON-unescaped view; its offset map is built only if a finding lands in it."""
    if "\\" not in view.text:
        return None
    text = _ESC.sub(_unescape_char, view.text)
    return View(text, view, escaped=True) if len(text) != len(view.text) else None


def _escape_segments(text: str) -> tuple[list[int], list[int], list[int]]:
    """(view start, raw start, raw end or -1 for literal runs) of each segment of the view."""
    vstarts: list[int] = []
    rstarts: list[int] = []
    rends: list[int] = []

    def piece(vstart: int, rstart: int, rend: int) -> None:
        vstarts.append(vstart)
        rstarts.append(rstart)
        rends.append(rend)

    pos = vpos = 0
    for m in _ESC.finditer(text):
        if m.start() > pos:
            piece(vpos, pos, -1)
            vpos += m.start() - pos
        piece(vpos, m.start(), m.end())
        vpos += 1
        pos = m.end()
    piece(vpos, pos, -1)
    return vstarts, rstarts, rends


def decode_b64(run: str) -> str | None:
    """The text a base64 run encodes, when it decodes to mostly printable UTF-8."""
    body = run.rstrip("=")
    if len(body) > _B64_MAX or len(set(body)) < 16:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
        out = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in out)
    return out if out and printable >= 0.95 * len(out) and any(c.isalpha() for c in out) else None


def text_views(text: str, runs: bool = True) -> list[View]:
    """The raw text, its decoded base64 runs, and the JSON-unescaped form (two levels) of each.
    `runs=False`: the caller knows the text holds no base64 run."""
    raw = View(text)
    views = [raw]
    for m in B64RUN.finditer(text) if runs else ():
        decoded = decode_b64(m.group())
        if decoded:
            views.append(View(decoded, raw, run=m.span()))
    for v in list(views):
        u = _unescape(v)
        if u is not None:
            views.append(u)
            u2 = _unescape(u)
            if u2 is not None:
                views.append(u2)
    return views
