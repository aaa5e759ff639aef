"""orjson reads JSONL lines only where it gives exactly json's objects: the records and the
skip counts of every file are those of the json-only reader (the one before orjson), on lines
built to break the two apart and on the shared corpus."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from funes.traces import jsonl

EDGE_LINES = [
    b'{"a":1}',
    b'{"a":NaN,"b":Infinity,"c":-Infinity}',  # json only
    b'{"a":1e400,"b":-1e400}',  # json: inf; orjson refuses
    b'{"a":9223372036854775807,"b":-9223372036854775808,"c":18446744073709551615}',
    b'{"a":18446744073709551616}',  # past 64 bits: orjson would give a float
    b'{"a":-9223372036854775809}',
    b'{"a":123456789012345678901234567890,"b":[1,2,3]}',
    b'{"text":"an id 12345678901234567890 in a string"}',
    b'{"a":0.1,"b":-0.0,"c":1E5,"d":2.5e-320,"e":1.7976931348623157e308,"f":5e-324}',
    b'{"a":"\\ud800"}',  # lone surrogate: json keeps it (then U+FFFD), orjson refuses
    b'{"\\udc00k":"v"}',
    b'{"a":"\\ud83d\\ude00 pair"}',
    b'{"a":1,"a":2}',  # duplicate keys: the last value, at the first key's place
    b'{"a":1}{"b":2}',  # two objects
    b'{"a":1} trailing',
    b"[1,2]",
    b'"just a string"',
    b'\xef\xbb\xbf{"bom":1}',
    b'{"ctrl":"a\x01b"}',
    b'{"nul":"\\u0000","esc":"\\"\\\\\\/\\b\\f\\n\\r\\t"}',
    b'{"deep":' + b"[" * 1100 + b"]" * 1100 + b"}",  # past orjson's depth (1024) and json's C scanner's
    b'{"deeper":' + b"[" * 100000 + b"]" * 100000 + b"}",  # past Python's recursion limit
    b'{"uni":"\xc3\xa9\xe2\x80\xa8\xe2\x80\xa9\xc2\x85 end"}',
    b'{"big":"' + b"x" * 3_000_000 + b'"}',  # a huge line
    b'{"a": 1 , "b" : [ ] , "c" : { } }',
    b'{"a":true,"b":false,"c":null}',
    b"{",
    b' \t{"edge":" spaces"}\t ',  # JSON whitespace around the object: orjson reads the line unstripped
    b'\x0c{"ff":1}\x0b',  # whitespace JSON has not: stripped first, as json reads it
    b'\xc2\xa0{"nbsp":"\\ud83d\\ude00"}\xe2\x80\xa8',
    b"   ",
]


def _json_only(monkeypatch):
    # orjson refusing every line: the reader is json's alone, as it was before orjson
    def refuse(line):
        raise jsonl.orjson.JSONDecodeError("refused", "", 0)

    monkeypatch.setattr(jsonl.orjson, "loads", refuse)


def _read_both(path: Path, monkeypatch):
    fast = jsonl.read_records(path)
    with monkeypatch.context() as m:
        _json_only(m)
        slow = jsonl.read_records(path)
    return fast, slow


def _same(a, b) -> bool:
    # repr tells 1 from 1.0, -0.0 from 0.0 and keeps key order; nan != nan, so compare reprs
    return repr(a) == repr(b)


@pytest.mark.parametrize("i", range(len(EDGE_LINES)))
def test_each_edge_line_reads_as_json_reads_it(tmp_path, monkeypatch, i):
    p = tmp_path / "t.jsonl"
    for body in (EDGE_LINES[i], EDGE_LINES[i] + b"\n", b'{"x":1}\n' + EDGE_LINES[i] + b"\n{}\n"):
        p.write_bytes(body)
        (fast, fs), (slow, ss) = _read_both(p, monkeypatch)
        assert _same(fast, slow) and fs == ss


def test_one_file_of_every_edge_line(tmp_path, monkeypatch):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\n".join(EDGE_LINES) + b"\n")
    (fast, fs), (slow, ss) = _read_both(p, monkeypatch)
    assert _same(fast, slow) and fs == ss
    assert fs[jsonl.LONE_SURROGATE] == 2 and fs[jsonl.TOO_DEEP] == 2


def test_orjson_reads_a_file_without_long_numbers(tmp_path, monkeypatch):
    """The fast path is taken (else the tests above compare json with itself)."""
    calls = []
    real = jsonl.orjson.loads
    monkeypatch.setattr(jsonl.orjson, "loads", lambda s: calls.append(s) or real(s))
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":1234567890123456789012}\n')
    assert jsonl.read_records(p)[0] == [{"a": 1}, {"b": 1234567890123456789012}]
    assert calls == ['{"a":1}']  # the line with a 19-digit run goes to json, the other to orjson
    calls.clear()
    p.write_bytes(b'{"a":1}\n{"b":123456789012345678}\n')
    assert jsonl.read_records(p)[0] == [{"a": 1}, {"b": 123456789012345678}]
    assert len(calls) == 2


def test_random_numbers_read_as_json_reads_them(tmp_path, monkeypatch):
    rng = random.Random(13)
    lines = []
    for _ in range(4000):
        bits = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        mant = f"{rng.randint(0, 10 ** rng.randint(1, 18))}.{rng.randint(0, 10 ** rng.randint(1, 18))}"
        exp = f"{mant}e{rng.randint(-330, 310)}"
        lines.append(f'{{"f":{bits!r},"m":{mant},"e":{exp},"i":{rng.randint(-(2**63), 2**64 - 1)}}}'.encode())
    p = tmp_path / "n.jsonl"
    # in files of 40 lines, so most files have no 19-digit run and take the orjson path
    for at in range(0, len(lines), 40):
        p.write_bytes(b"\n".join(lines[at : at + 40]).replace(b"nan", b"NaN").replace(b"inf", b"Infinity"))
        (fast, fs), (slow, ss) = _read_both(p, monkeypatch)
        assert _same(fast, slow) and fs == ss


def test_the_corpus_reads_as_json_reads_it(corpus, monkeypatch):
    files = sorted(p for p in corpus.rglob("*.jsonl") if p.is_file())[::2]
    assert files
    for path in files:
        (fast, fs), (slow, ss) = _read_both(path, monkeypatch)
        assert _same(fast, slow) and fs == ss, path.name


def test_a_deep_record_is_kept_whether_or_not_it_escapes_a_surrogate_pair(tmp_path):
    """orjson reads both lines whole (past 495 levels the sanitiser's recursion used to drop the
    one with an escaped emoji as "nested too deep", while the same record without it was kept)."""
    deep = b"[" * 900 + b"]" * 900
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"q":"\\ud83d\\ude00","d":' + deep + b'}\n{"q":"\xf0\x9f\x98\x80","d":' + deep + b"}\n")
    records, skipped = jsonl.read_records(p)
    assert not skipped and len(records) == 2 and records[0] == records[1] and records[0]["q"] == "\U0001f600"
