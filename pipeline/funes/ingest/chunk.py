"""Render, elide, split and stitch blocks; coordinate-derived chunk ids (upstream-spec 2.2-2.5, 2.9)."""

from __future__ import annotations

import hashlib
import re

MAX_CHARS = 1200
OVERLAP = 150
HALF = 600

# Rust's str::trim strips White_Space; Python's strip() also strips U+001C..U+001F. The same set as
# traces.frame.WHITESPACE (a test pins it), not imported from there: that module pulls polars into recall.
_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def trim(s: str) -> str:
    return s.strip(_WS)


def chunk_id(session_id: str, turn_uuid: str, block_idx: int, split_idx: int) -> str:
    key = f"{session_id}:{turn_uuid}:{block_idx}:{split_idx}".encode("utf-8", "surrogatepass")
    return hashlib.sha1(key).hexdigest()[:16]


def render(block_type: str, text: str, tool_name: str | None) -> str:
    if block_type == "tool_use":
        return trim(f"[tool_use {tool_name if tool_name is not None else 'None'}] {text}")
    if block_type == "tool_result":
        return trim(f"[tool_result {tool_name}] {text}" if tool_name else f"[tool_result] {text}")
    return text


_MARK = ";base64,"
_PAYLOAD = re.compile(r"[A-Za-z0-9+/=]+")
_BAD_HEAD = set(" \t\n\r\x0b\x0c,\"'")


def _is_data_uri_head(head: str) -> bool:
    at = head.rfind("data:")
    if at < 0:
        return False
    if at > 0:
        prev = head[at - 1]
        if (prev.isascii() and prev.isalnum()) or prev in "+-.":
            return False
    return not any(c in _BAD_HEAD or c.isspace() for c in head[at + 5 :])


def elide_data_uris(text: str) -> str:
    """Replace base64 payloads of data: URIs by `[elided]` (images pasted into chats are noise)."""
    if _MARK not in text:
        return text
    out, pos = [], 0
    while True:
        hit = text.find(_MARK, pos)
        if hit < 0:
            out.append(text[pos:])
            return "".join(out)
        after = hit + len(_MARK)
        m = _PAYLOAD.match(text, after)
        out.append(text[pos:after])
        if m and _is_data_uri_head(text[pos:hit]):
            out.append("[elided]")
            pos = m.end()
        else:
            pos = after


def split(rendered: str) -> list[str]:
    """Split into <=1200-char pieces overlapping by <=150, breaking at a newline or space past half."""
    chars = trim(rendered)
    n = len(chars)
    if n == 0:
        return []
    if n <= MAX_CHARS:
        return [chars]
    pieces, start = [], 0
    while True:
        end = min(start + MAX_CHARS, n)
        if end < n:
            brk = chars.rfind("\n", start, end)
            if brk <= start + HALF:
                brk = chars.rfind(" ", start, end)
            if brk > start + HALF:
                end = brk
        piece = trim(chars[start:end])
        if piece:
            pieces.append(piece)
        if end >= n:
            return pieces
        start = max(end - OVERLAP, start + 1)


def stitch(a: str, b: str) -> str:
    """Join two consecutive pieces, dropping the longest suffix/prefix overlap (<=150 chars)."""
    for k in range(min(len(a), len(b), OVERLAP), 0, -1):
        if a[-k:] == b[:k]:
            return a + b[k:]
    return a + b


def reconstruct(pieces: list[str]) -> str:
    out = ""
    for i, p in enumerate(pieces):
        out = p if i == 0 else stitch(out, p)
    return out


def reconstruct_spans(pieces: list[str]) -> tuple[str, list[int]]:
    """`reconstruct` plus where each piece starts in the result (scrub maps findings back to pieces)."""
    out, starts = "", []
    for i, p in enumerate(pieces):
        out = p if i == 0 else stitch(out, p)
        starts.append(len(out) - len(p))  # stitch keeps the whole of the piece as the tail
    return out, starts
