"""The candidate gate (`scan/gate.py`: polars + Rust regex decide which texts the in-process
engines see) changes no finding: every text holding one is a candidate, findings with and without
the gate (`FUNES_SCAN_EXACT=1`) are identical on every secret fixture and on the real corpus, and
the Rust translation of a Python regex matches wherever the Python regex does, Unicode included."""

from __future__ import annotations

import re

import polars as pl
import pytest

from funes import scan
from funes.scan import bare, gate, superset, views
from test_redact_corpus import corpus_texts
from test_scan_prefilter import _fixtures

ENGINES = ["funes-rules", "detect-secrets"]  # Kingfisher sees every text: the gate is not its


def _both(texts, monkeypatch):
    fast = scan.find(texts, only=ENGINES)
    with monkeypatch.context() as m:
        m.setenv("FUNES_SCAN_EXACT", "1")
        slow = scan.find(texts, only=ENGINES)
    return fast, slow


def _edge_texts() -> list[str]:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + "x9Qz" * 20 + "\n(cut here)"
    return [
        pem,  # truncated: an END line is in a later text of the batch
        "plain prose about nothing",
        "-----END RSA PRIVATE KEY-----",
        "İ makes str.lower longer",  # not a candidate, yet it decides how the batch is lowered
        "to\u212aen Zx9kq2Lm4PwRt7Yh3Nb",  # Kelvin sign: `token ` only when the batch lowers fully
        "awſ secret = " + "Ab3dEf9hIj" * 4,  # (?i)s matches the long s
        "we run it all on aws",  # not a candidate, yet its `aws` once let the rule run at all
        "mysql -u root\t-pS3cr3tPw!",  # `-p` after a tab
        "a\udc80b token=ghp_" + "a1B2" * 9,  # a lone surrogate
        "see " + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" + "=" * 1,  # a base64 run
        "-x\nbearer\x0bAbCdEf0123456789XyZqW",  # a keyword that starts the line under a `-flag`
        "run --dry-\ntoken\x0cAbCdEf0123456789XyZqW",
    ]


def _diluted() -> list[str]:
    # the fixtures beside one long candidate text that holds no `bare` shape: `bare` then scans apart
    fixtures = _fixtures()
    words = "we walked along the river and talked about the weather and the week ahead\n"
    prose = "password: ask the team lead\n" + words * (sum(map(len, fixtures)) // len(words) + 1)
    texts = fixtures[: len(fixtures) // 2] + [prose] + fixtures[len(fixtures) // 2 :]
    picks = gate.pick(texts)
    shaped = sum(len(t) for t, (_, s) in zip(texts, picks) if s)
    assert 0 < 2 * shaped <= sum(len(t) for t, (k, _) in zip(texts, picks) if k)
    return texts


@pytest.mark.parametrize("which", ["fixtures", "edges", "diluted", "corpus"])
def test_findings_are_identical_with_and_without_the_gate(which, request, monkeypatch):
    if which == "fixtures":
        texts = _fixtures()
    elif which == "edges":
        texts = _edge_texts()
    elif which == "diluted":
        texts = _diluted()
    else:
        texts = corpus_texts(request.getfixturevalue("corpus"))[::8]  # ~3 MB across every agent
    fast, slow = _both(texts, monkeypatch)
    assert fast == slow
    if which != "corpus":
        assert sum(map(len, fast)) > (3 if which == "edges" else 100)


def test_every_text_with_a_finding_is_a_candidate(monkeypatch):
    flat = [v.text for t in _fixtures() + _edge_texts() for v in views.text_views(t)]
    keep = gate.candidates(flat)
    monkeypatch.setenv("FUNES_SCAN_EXACT", "1")
    found = [scan._in_process([t], True, True) for t in flat]
    assert sum(map(bool, found)) > 100
    assert [t[:60] for t, k, f in zip(flat, keep, found) if f and not k] == []


def test_every_text_with_a_bare_shape_finding_is_picked_for_them():
    # `bare` scans only the texts `pick` marks (its own lead groups): none of its findings is lost
    flat = [v.text for t in _fixtures() + _edge_texts() for v in views.text_views(t)]
    picks = gate.pick(flat)
    found = [bool(bare.findings(t, t.lower())) for t in flat]
    assert sum(found) > 10
    assert [t[:60] for t, (_, shaped), f in zip(flat, picks, found) if f and not shaped] == []
    assert all(keep for keep, shaped in picks if shaped)  # a subset of the candidates
    assert sum(s for _, s in picks) < sum(k for k, _ in picks)  # and a smaller one (~3 % of them on day zero)


def test_the_gate_is_on_and_drops_plain_prose():
    assert gate._patterns() is not None and gate._b64() is not None
    prose = ["We walked to the market and bought apples.", "Le café était fermé à midi, hélas."]
    assert gate.candidates(prose) == [False, False]
    assert gate.candidates(["password=Zx9!kq2Lm", "AKIA" + "Q" * 16]) == [True, True]
    key40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"[::-1]
    assert gate.pick(["password=Zx9!kq2Lm", f"the key is {key40}"]) == [(True, False), (True, True)]
    assert gate.may_hold_b64(["short", "A1b2" * 8]) == [False, True]


_EDGE_PATTERNS = [
    r"[^→]{3}",
    r"x→[^\x00-\x7f]",
    r"[^\W\d]{2}",
    r"[\u00e0-\u00ff]",
    r"\w{3}\d",
    r"[^\s\"']{4,}x",
    r"\s+=\s*\d",
    r"(?i)key\s*[:=]",
    r"(?i)[a-f]{4}",
    r"(?P<q>[\"'])tok(?P=q)",
    r"(?<![A-Za-z])ab(?=c)\b",
    r"^x$",
    r"(?s)a.b",
    r"a.b",
    r"[\W\d]z",
    r"\S\S-",
]
_EDGE_STRINGS = [
    "abc1",
    "ab٣1",
    "é\u00e9é٣",
    "x\u00a0= ٣",
    "a\x1c=\x1c1",
    "\u212aey:",
    "KEY =",
    "ſecret",
    "ABCD",
    "ＡＢＣＤ",
    '"tok"',
    "'tok'",
    "zabc",
    "abc",
    "x",
    "a\nb",
    "a\u2028b",
    "é z",
    "٣z",
    "\u3000\u3000-",
    "xx-",
]


@pytest.mark.parametrize("pattern", _EDGE_PATTERNS)
def test_the_rust_superset_matches_wherever_python_does(pattern):
    rx = re.compile(pattern)
    general, folded = superset.rust_superset(rx), superset.rust_superset(rx, folded=True)
    assert general is not None and folded is not None
    rust = pl.Series(_EDGE_STRINGS).str.contains(general).to_list()
    rust_folded = pl.Series([superset.fold(s) for s in _EDGE_STRINGS]).str.contains(folded).to_list()
    for s, r, rf in zip(_EDGE_STRINGS, rust, rust_folded):
        if rx.search(s):
            assert r and rf, (pattern, s)


def test_polars_folds_as_fold_does():
    texts = ["é z", "Key ٣", "plain", "日本語"]
    polars_folded = pl.Series(texts).str.replace_all(superset.FOLD_PATTERN, superset.FOLD_CHAR).to_list()
    assert polars_folded == [superset.fold(t) for t in texts] and "\x7f\x7fz" in polars_folded[0]


def test_lowered_patterns_translate_for_every_preimage():
    # `windows` matches its keywords on the lowered text: the raw text's translation covers it
    rx = superset.rust_superset("key=", ignorecase=True)
    assert pl.Series(["KEY=", "Key=", "\u212aey=", "kex="]).str.contains(rx).to_list() == [True, True, True, False]


def test_what_has_no_translation_is_refused():
    assert superset.rust_superset(r"(a)?(?(1)b|c)") is None  # a conditional group
    assert superset.rust_superset("(?i)\u212a") is None  # a non-ASCII literal under (?i)
    assert superset.rust_superset(re.compile(b"x")) is None
