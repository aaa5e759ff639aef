"""Chunking contract (upstream-spec 2.2-2.5, 2.9): render, elide, split, ids, stitch."""

from __future__ import annotations

import itertools
import random

import pyarrow as pa
import pytest

from funes import vocab
from funes.ingest import chunk, stages

SAMPLE = " ".join(f"word{i}" for i in range(600))


def test_render_labels():
    assert chunk.render("tool_use", '{"command":"ls"}', "Bash") == '[tool_use Bash] {"command":"ls"}'
    assert chunk.render("tool_use", "{}", None) == "[tool_use None] {}"
    assert chunk.render("tool_result", "ok", None) == "[tool_result] ok"
    assert chunk.render("tool_result", "ok\n", "Read") == "[tool_result Read] ok"
    assert chunk.render("text", "  kept  ", None) == "  kept  "


@pytest.mark.parametrize(
    "text, want",
    [
        ("data:image/png;base64,iVBORw0KGgo==", "data:image/png;base64,[elided]"),
        ("x data:;base64,QUJD y", "x data:;base64,[elided] y"),
        ('"url": "data:image/jpeg;base64,/9j/4AAQ+Sk="}', '"url": "data:image/jpeg;base64,[elided]"}'),
    ],
)
def test_data_uri_elided(text, want):
    assert chunk.elide_data_uris(text) == want


@pytest.mark.parametrize(
    "text",
    [
        ";base64,AAAA",
        "Content-Transfer-Encoding;base64,AAAA",
        "data: image/png;base64,AAAA",
        "metadata:image/png;base64,AAAA",
    ],
)
def test_data_uri_lookalikes_untouched(text):
    assert chunk.elide_data_uris(text) == text


def test_split_short_text_is_one_trimmed_piece():
    assert chunk.split("  hello \n") == ["hello"]
    assert chunk.split("   ") == []


def test_split_pieces_bounded_and_overlapping():
    pieces = chunk.split(SAMPLE)
    assert len(pieces) > 1 and all(len(p) <= chunk.MAX_CHARS for p in pieces)
    for a, b in itertools.pairwise(pieces):
        assert a[-40:] in b[: chunk.OVERLAP + 40]
    assert chunk.reconstruct(pieces) == SAMPLE


def test_split_without_break_characters():
    text = "x" * 3000
    pieces = chunk.split(text)
    assert all(len(p) <= 1200 for p in pieces) and chunk.reconstruct(pieces) == text


def test_reconstruct_inverts_split_on_random_text():
    rng = random.Random(7)
    for _ in range(30):
        words = [rng.choice(["a", "bb", "ccc\n", "dddd", "é", "\n\n"]) for _ in range(rng.randint(1, 900))]
        text = chunk.trim(" ".join(words))
        assert chunk.reconstruct(chunk.split(text)) == text


def test_stitch_cases():
    assert chunk.stitch("hello wor", "world") == "hello world"
    assert chunk.stitch("abc", "def") == "abcdef"
    assert chunk.reconstruct([]) == ""


def test_ids_depend_only_on_coordinates():
    a = chunk.chunk_id("s", "t", 0, 0)
    assert len(a) == 16 and a == chunk.chunk_id("s", "t", 0, 0)
    others = {chunk.chunk_id("s", "t", 0, 1), chunk.chunk_id("s", "t", 1, 0), chunk.chunk_id("s", "u", 0, 0)}
    assert len(others | {a}) == 4
    # value pinned by the original funes's definition: sha1("s:t:0:0")[:16]
    import hashlib

    assert a == hashlib.sha1(b"s:t:0:0").hexdigest()[:16]


def test_trim_matches_rust_white_space():
    assert chunk.trim("\x1c x \x1f") == "\x1c x \x1f"
    assert chunk.trim("\u3000 x \u2029") == "x"


def test_select_keeps_the_blocks_of_the_asked_tiers():
    """The tier rule production runs (ingest.stages.select over an Arrow table), not a copy of it."""
    kinds = ["text", "thinking", "tool_use", "tool_result", "image", None]
    blocks = pa.table({"block_type": pa.array(kinds, pa.string()), "block_idx": list(range(len(kinds)))})

    def kept(tiers, thinking=True):
        return stages.select(blocks, set(tiers), include_thinking=thinking)["block_type"].to_pylist()

    assert kept(["text"]) == ["text", "thinking", "image"]
    assert kept(["text"], thinking=False) == ["text", "image"]
    assert kept(["tool_use"]) == ["tool_use"]
    assert kept(vocab.TIERS) == ["text", "thinking", "tool_use", "tool_result", "image"]
    assert stages.select(blocks, {"tool_result"}, True)["block_idx"].to_pylist() == [3]


def test_trim_uses_the_parsers_whitespace():
    from funes.traces.frame import WHITESPACE

    assert set(chunk._WS) == set(WHITESPACE)
