"""The scanner's shortcuts (literal prefilter, per-text lowering) change no finding: the in-process
engines find exactly the same spans with and without them, on the real corpus and on every
secret fixture of the redaction tests."""

from __future__ import annotations

import re

import pytest

from funes import scan
from funes.scan import detectsecrets, manifests, prefilter, rules, windows
from test_redact import BENIGN, planted, variants
from test_redact_classes import _cases, _look_alikes
from test_redact_corpus import corpus_texts

ENGINES = ["funes-rules", "detect-secrets"]  # Kingfisher is its own process: untouched here


def _without_shortcuts(monkeypatch) -> None:
    monkeypatch.setattr(rules, "may_match", lambda prefixes, found: True)
    monkeypatch.setattr(scan, "lower_joined", lambda texts, sep, joined, keeps_length=None: windows.lower(joined))
    monkeypatch.setenv("FUNES_SCAN_EXACT", "1")  # every text scanned, as before the gate
    monkeypatch.setattr(manifests, "may_hold_secret_kind", lambda text: True)
    monkeypatch.setattr(detectsecrets, "present", lambda literals, text: frozenset(literals))


def _fixtures() -> list[str]:
    texts = [t for _, t, _ in planted()] + [t for _, t, _ in variants()] + BENIGN
    for seed in (1, 2, 3, 4):
        texts += [t for _, t, _ in _cases(seed)]
    texts += _look_alikes(5)
    # sigma, dotted capital I, Kelvin sign: lowering that maps by context or changes length
    texts += ["ΟΔΟΣ token=ghp_" + "a1B2" * 9, "İstanbul password: hunter2-Xy9!", "\u212a key: sk-" + "Ab3" * 12]
    return texts


@pytest.mark.parametrize("which", ["fixtures", "corpus"])
def test_findings_are_identical_without_the_shortcuts(which, request, monkeypatch):
    if which == "fixtures":
        texts = _fixtures()
    else:
        texts = corpus_texts(request.getfixturevalue("corpus"))[::8]  # ~3 MB across every agent
    fast = scan.find(texts, only=ENGINES)
    with monkeypatch.context() as m:
        _without_shortcuts(m)
        slow = scan.find(texts, only=ENGINES)
    assert fast == slow
    if which == "fixtures":
        assert sum(map(len, fast)) > 100  # the fixtures are full of secrets: the check is not vacuous


def test_per_text_lowering_equals_lowering_the_batch():
    sep = "\n\x00\n"
    for texts in (["ABC", "ΟΔΟΣ", "Σ", "aΣ", "x"], ["İi", "K"], ["plain", "ascii"], [""]):
        joined = sep.join(texts)
        assert windows.lower_joined(texts, sep, joined) == windows.lower(joined)


def test_literal_prefixes_are_what_every_match_starts_with():
    assert prefilter.literal_prefixes(r"gh[pousr]_[A-Za-z0-9]{30}") == ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
    assert prefilter.literal_prefixes(r"AccountKey=([A-Za-z0-9+/]{40})") == ("AccountKey=",)
    assert prefilter.literal_prefixes(r"gl(?:pat|dt)-x") == ("gl",)
    # no prefilter where a match may start otherwise
    assert prefilter.literal_prefixes(r"(?i)aws.{0,20}secret") is None
    assert prefilter.literal_prefixes(re.compile("token", re.I)) is None
    assert prefilter.literal_prefixes(r"ab|cd") is None
    assert prefilter.literal_prefixes(r"a?b") is None
    assert prefilter.literal_prefixes(r"[a-z]x") is None
    assert not prefilter.may_match(("ghp_",), frozenset({"sk-"})) and prefilter.may_match(None, frozenset())


@pytest.mark.parametrize("size", [10, prefilter.SMALL_TEXT])
def test_present_finds_exactly_the_literals_that_occur(size):
    lits = ["sk-", "sk-ant-", "ghp_", "xoxb-", "AKIA", "Q~"]
    text = ("é" * size) + " sk-ant-x " + "\x00" + " AKIAX Q~"
    assert prefilter.present(lits, text) == {"sk-", "sk-ant-", "AKIA", "Q~"}
    assert prefilter.present(lits, "a\udc80b " * size + "ghp_") == {"ghp_"}  # a lone surrogate
    assert prefilter.present(lits, "") == frozenset() == prefilter.present([], text)
