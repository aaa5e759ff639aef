"""The ledger's own encoder writes exactly what json.dumps(indent=1, sort_keys=True) writes."""

from __future__ import annotations

import json
import random

import pytest

from conftest import FIXTURES
from funes import paths
from funes.commands import index
from funes.memory import ledger

EDGE_STATES = [
    {},
    {"u": {}},
    {"a": {"sig": "1:2", "level": "text"}, "_chunks_table": {"rows": 0, "version": 0}},
    {"é/ü/日本.jsonl": {"sig": "\\ud800 lone \ud800 surrogate", "level": "tool_use"}},
    {"tab\there": {"sig": 'quote " back \\ slash', "level": "\x00\x1f\x7f\u2028"}},
    {"b": {"z": -(10**30), "a": 10**30, "m": None}},  # None: json's way
    {"b": {"t": True}},  # a bool is not written as an int
    {"b": {"f": 1.5, "n": float("nan")}},  # floats: json's way
    {"b": {"nested": {"x": [1, 2]}}},
    {"b": [1, 2]},  # not a dict entry
    {"b": "str"},
]


@pytest.mark.parametrize("state", EDGE_STATES)
def test_edge_states_encode_as_json_does(state):
    assert ledger.encode(state) == json.dumps(state, indent=1, sort_keys=True)


def test_non_str_keys_encode_as_json_does():
    for state in ({1: {"a": 1}}, {"a": {2: "x"}}):
        assert ledger.encode(state) == json.dumps(state, indent=1, sort_keys=True)
    with pytest.raises(TypeError):  # mixed key types: json refuses to sort them, so does the ledger
        ledger.encode({"a": {}, 1: {}})


def test_random_states_encode_as_json_does():
    rng = random.Random(14)
    alphabet = 'ab/._-~:é日\ud83d\udc0d"\\\n\t\x01 '
    for _ in range(200):
        state = {
            "".join(rng.choices(alphabet, k=rng.randint(0, 12))): {
                rng.choice(["sig", "level", "rows", "version", "z"]): rng.choice(
                    ["".join(rng.choices(alphabet, k=rng.randint(0, 9))), rng.randint(-(2**70), 2**70)]
                )
                for _ in range(rng.randint(0, 3))
            }
            for _ in range(rng.randint(0, 30))
        }
        assert ledger.encode(state) == json.dumps(state, indent=1, sort_keys=True)


def test_an_index_runs_ledger_file_is_jsons(funes_home):
    index.index(index.Options(path=str(FIXTURES / "claude"), no_embed=True))
    index.index(index.Options(path=str(FIXTURES / "codex"), no_embed=True))
    text = paths.state_file().read_text(encoding="utf-8")
    state = json.loads(text)
    assert len(state) > 2 and ledger.TABLE in state
    assert text == json.dumps(state, indent=1, sort_keys=True)
