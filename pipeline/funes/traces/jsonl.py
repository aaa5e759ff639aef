"""Shared JSONL machinery: a reader that never crashes and never drops silently, and file units.

Reading (upstream-spec 1.2, made accountable): the whole file is read as bytes and decoded as
UTF-8 with invalid sequences replaced; lines are split on `\\n` only (JSON strings may hold raw
U+2028/U+0085, which `str.splitlines` would break on), one trailing `\\r` dropped, blank lines
skipped. Every line that is not kept as-is is counted in a Counter under one of READER_REASONS.
Upstream drops bad lines silently and drops lone-surrogate lines (serde rejects them); we count
the former and keep the latter with U+FFFD in place of each lone surrogate.

A line is decoded by orjson (~2× json's speed) and, wherever orjson refuses it (NaN, 1e400, a
lone surrogate escape, two objects, nesting past 1024), by json exactly as before. orjson reads
an integer outside 64 bits as a float where json keeps it whole, so a line with a run of 19
digits anywhere is read by json alone (the file's other lines still by orjson); every other value is the same Python object
(tests/test_traces_jsonl.py compares them).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson

from funes.errors import SourceError
from funes.traces import Unit
from funes.traces.frame import WHITESPACE

MALFORMED = "malformed json"
TRUNCATED = "truncated last line"
TWO_OBJECTS = "two objects on one line"
LONE_SURROGATE = "lone surrogate"
INVALID_UTF8 = "invalid utf-8"
NOT_OBJECT = "not a json object"
EMPTY_FILE = "empty file"
TOO_DEEP = "nested too deep"
READER_REASONS = (MALFORMED, TRUNCATED, TWO_OBJECTS, LONE_SURROGATE, INVALID_UTF8, NOT_OBJECT, EMPTY_FILE, TOO_DEEP)

_DECODER = json.JSONDecoder()
_SURROGATE = re.compile("[\ud800-\udfff]")
# every ASCII digit to "0": a run of 19 of them is a number orjson may not read as json does
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from e


def decode_lines(data: bytes, skipped: Counter) -> list[str]:
    """UTF-8 lines split on \\n; a line with invalid bytes is kept (U+FFFD) and counted."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        # only a damaged file pays for line-by-line decoding, to count exactly the bad lines
        lines = [_decode_counting(raw, skipped) for raw in data.split(b"\n")]
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _decode_counting(raw: bytes, skipped: Counter) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        skipped[INVALID_UTF8] += 1
        return raw.decode("utf-8", errors="replace")


def read_records(path: Path) -> tuple[list[dict], Counter]:
    """Every JSON object in a JSONL file, in order, and the count of what could not be kept whole."""
    return records_of(read_bytes(path))


def records_of(data: bytes) -> tuple[list[dict], Counter]:
    """`read_records` of a file's bytes already read."""
    skipped: Counter = Counter()
    if not data.strip():
        skipped[EMPTY_FILE] += 1
        return [], skipped
    lines = decode_lines(data, skipped)
    last = len(lines) - 1  # a file ending in \n has an empty last element: nothing is truncated
    slow = _long_number_lines(data)
    records: list[dict] = []
    # the usual line, one object orjson reads, is kept here in one call: what orjson returns has no
    # lone surrogate to sanitise (it refuses them) and no edge whitespace changes its value (JSON
    # values neither begin nor end with whitespace); every other line takes parse_line's whole path
    loads, refused, keep = orjson.loads, orjson.JSONDecodeError, records.append
    for i, line in enumerate(lines):
        fast = i not in slow
        if fast and line:
            try:
                value = loads(line)
            except refused:
                pass
            else:
                if type(value) is dict:
                    keep(value)
                    continue
        line = line.strip(WHITESPACE)
        if line:
            records.extend(parse_line(line, i == last, skipped, fast))
    return records, skipped


def _long_number_lines(data: bytes) -> set[int]:
    """The numbers of the lines (split on \n) holding a run of 19 digits: json reads those, orjson
    may read the rest. One translate of the bytes finds every run; each is mapped to its line by
    counting the newlines before it, so no line is translated again."""
    digits = data.translate(_DIGITS)
    slow: set[int] = set()
    line, counted = 0, 0
    at = digits.find(_LONG_NUMBER)
    while at != -1:
        line += digits.count(b"\n", counted, at)
        slow.add(line)
        end = digits.find(b"\n", at)
        if end == -1:
            break
        line, counted = line + 1, end + 1
        at = digits.find(_LONG_NUMBER, counted)
    return slow


def parse_line(line: str, is_last: bool, skipped: Counter, fast: bool = False) -> list[dict]:
    """The objects on one line; a line nested deeper than Python can walk (json.loads or the
    sanitiser hits the recursion limit) is dropped and counted, never fatal to the file.
    `fast`: the line holds no run of 19 digits, so orjson may read it."""
    try:
        return _parse_line(line, is_last, skipped, fast)
    except RecursionError:
        skipped[TOO_DEEP] += 1
        return []


def _loads(line: str, fast: bool) -> object:
    if fast:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass  # what orjson refuses, json may accept (NaN, a lone surrogate): json decides
    return json.loads(line)


def _parse_line(line: str, is_last: bool, skipped: Counter, fast: bool) -> list[dict]:
    try:
        values = [_loads(line, fast)]
    except json.JSONDecodeError:
        values = _recover(line, is_last, skipped)
    if "\\ud" in line or "\\uD" in line:  # cheap prefilter: only escapes can make lone surrogates
        values = [_sanitize_counting(v, skipped) for v in values]
    kept = [v for v in values if isinstance(v, dict)]
    if len(kept) < len(values):
        skipped[NOT_OBJECT] += len(values) - len(kept)
    return kept


def _recover(line: str, is_last: bool, skipped: Counter) -> list:
    """Objects written back to back without a newline are all kept; anything else is counted."""
    values: list = []
    pos = 0
    while pos < len(line):
        try:
            value, end = _DECODER.raw_decode(line, pos)
        except json.JSONDecodeError:
            skipped[TRUNCATED if is_last else MALFORMED] += 1
            return values
        values.append(value)
        pos = len(line) - len(line[end:].lstrip(WHITESPACE))
    if len(values) > 1:
        skipped[TWO_OBJECTS] += 1
    return values


def _sanitize_counting(value: object, skipped: Counter) -> object:
    clean = sanitize(value)
    if clean != value:  # a replaced key changes the dict too, so this sees keys and values
        skipped[LONE_SURROGATE] += 1
    return clean


def sanitize(value: object) -> object:
    """Replace every lone surrogate (Python's json accepts "\\ud800") by U+FFFD, recursively."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {sanitize(k): sanitize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitize(v) for v in value]
    return value


def fallback_workdir(path: Path) -> str:
    """The dir after the first `projects` dir (Claude's munged cwd), else the parent dir's name."""
    dirs = path.parts[:-1]
    if "projects" in dirs:
        i = dirs.index("projects")
        if i + 1 < len(dirs):
            return dirs[i + 1]
    return path.parent.name


def walk_jsonl(root: Path) -> list[Path]:
    """Regular `*.jsonl` files under root, recursively, not following symlinks, sorted by path."""
    if root.is_file():
        return [root]
    return [Path(p) for p in sorted(_jsonl_files(root), key=_parts)]


def any_jsonl(root: Path) -> bool:
    """Whether walk_jsonl(root) finds anything (stops at the first file)."""
    return root.is_file() or next(_jsonl_files(root), None) is not None


def _jsonl_files(root: Path):
    # strings and one lstat per candidate: Path objects, their comparisons and a stat per check
    # were most of discovering 20k transcripts
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in filenames:
            if len(name) > 6 and name.endswith(".jsonl"):  # Path.suffix: a bare ".jsonl" has none
                full = os.path.join(dirpath, name)
                try:
                    if stat.S_ISREG(os.lstat(full).st_mode):  # a regular file, not a link to one
                        yield full
                except OSError:
                    continue


def _parts(path: str) -> list[str]:
    """The sort key of a path as Path orders them (by component: "a/b/x" before "a/b-c")."""
    return path.split(os.sep)


def file_signature(path: Path) -> tuple[str | None, float]:
    """`<size>:<mtime_ns>` (finer than upstream's seconds: two writes in one second still differ)."""
    try:
        st = path.stat()
    except OSError:
        return None, 0.0
    return f"{st.st_size}:{st.st_mtime_ns}", st.st_mtime


def is_subagent(path: Path) -> bool:
    return path.stem.startswith("agent-")


def file_units(paths: list[Path], harness: str | Callable[[Path], str], limit: int | None = None) -> list[Unit]:
    """One unit per file: newest first, the first `limit` kept, then subagent files moved last.

    `harness` is a facet, or a function naming each file's (for a folder of mixed transcripts).
    """
    units = []
    for p in sorted(paths, key=lambda p: _parts(str(p))):
        sig, mtime = file_signature(p)
        facet = harness if isinstance(harness, str) else harness(p)
        units.append(Unit(key=str(p), harness=facet, path=p, signature=sig, mtime=mtime))
    units.sort(key=lambda u: -u.mtime)
    if limit is not None:
        units = units[: max(limit, 0)]
    units.sort(key=lambda u: is_subagent(u.path))
    return units
