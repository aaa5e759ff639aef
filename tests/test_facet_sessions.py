"""The facet sessions file read as one JSON array gives what the line-by-line read gave (or its error)."""

from __future__ import annotations

import json

import pytest

from funes.memory import facets

IDS = ["s1", "é日本", "a\u2028b", "nel\x85x", 'q"uote', "back\\slash", "tab\tx", "cr\rlf\n", "", "s" * 300]


def _write(folder, text: str) -> None:
    (folder / facets.SESSIONS).write_bytes(text.encode("utf-8", "surrogatepass"))


def _same(folder, count: int) -> None:
    try:
        want = facets._sessions_by_line(folder, count)
    except ValueError as e:  # UnicodeDecodeError included
        with pytest.raises(type(e)):
            facets.read_sessions(folder, count)
        return
    assert facets.read_sessions(folder, count) == want


@pytest.mark.parametrize("count", [0, 1, 5, len(IDS), len(IDS) + 3])
def test_written_ids_read_back_as_before(tmp_path, count):
    _write(tmp_path, "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in IDS))
    _same(tmp_path, count)
    if count <= len(IDS):
        assert facets.read_sessions(tmp_path, count) == IDS[:count]


@pytest.mark.parametrize(
    "text",
    [
        "",
        '"a"\n"b"\n{"torn',  # a crashed append's tail past the count
        '"a"\n\n"b"\n',  # an empty line inside the count
        '"a"\n1, 2\n"b"\n',  # two values on a line
        '"a"\n"b" "c"\n',
        '"a"\r\n"b"\r"c"\n',  # other line ends
        ' "a" \n[1]\n7\nnull\n',  # not strings: read as json reads them
        '"a"\n"b',  # no final newline, torn
        '"a"\n"\\ud800"\n"b"\n',  # an escaped lone surrogate
        '\ufeff"a"\n',  # a byte-order mark
    ],
)
def test_odd_files_read_or_fail_as_before(tmp_path, text):
    _write(tmp_path, text)
    for count in range(5):
        _same(tmp_path, count)


def test_bad_utf8_reads_or_fails_as_before(tmp_path):
    # a torn character in a crashed tail (the text read stops before it when the count is reached), a bad byte
    for blob in (b'"a"\n"b"\n"\xe6\x97', b'"a"\n"\xff"\n"b"\n'):
        (tmp_path / facets.SESSIONS).write_bytes(blob)
        for count in range(5):
            _same(tmp_path, count)
