"""The egress gate on the local memory: whole-block reassembly, the status hold-back count and its cache."""

from __future__ import annotations

import pytest

from retrieval_support import chunk_rows, memory_with, session

GITHUB = "ghp_Zq8Xv3Lm9Tb2Wc7Yd4Pk1Rf6Hs0Ja5NeQu8V"


def _split_block(sid: str, secret: str, at: int) -> list[dict]:
    """One block stored as two chunks with the secret cut at `at` (no piece holds it whole)."""
    base = {"session_id": sid, "turn_uuid": f"{sid}-t9", "seq": 9, "block_idx": 0}
    return [
        {**base, "split_idx": 0, "text": "the value we used was " + secret[:at]},
        {**base, "split_idx": 1, "text": secret[at:] + " and it worked"},
    ]


def test_a_secret_split_across_two_chunks_is_caught_in_the_reassembled_block(funes_home):
    from funes import scan
    from funes.commands import gate

    rows = _split_block("s", GITHUB, 4)
    assert not any(scan.find([r["text"] for r in rows]))  # each piece alone looks clean
    mem = memory_with(rows + session("clean", ["nothing secret here"]), refresh=False)
    held = gate.Held()
    ok = gate.check(mem.chunks, mem.chunks.take([0, 2], ["session_id", "turn_uuid", "block_idx", "id"]), held)
    assert ok == [False, True] and held.rows == 1 and held.kinds == {"GitHub": 1} and set(held.sessions) == {"s"}


def _counting_kingfisher(tmp_path, monkeypatch):
    """FUNES_KINGFISHER pointed at a wrapper that logs each scan (not `--version`, which status asks
    for its scanner line), then runs the real binary."""
    from funes.scan import kingfisher

    real = kingfisher.binary()[0]
    if real is None:
        pytest.skip("kingfisher is not installed")
    runs, wrapper = tmp_path / "runs.log", tmp_path / "kingfisher"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = --version ] || echo run >> "{runs}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("FUNES_KINGFISHER", str(wrapper))
    return lambda: len(runs.read_text().split()) if runs.exists() else 0


def test_status_counts_what_a_publish_would_hold_back_and_caches_it(funes_home, tmp_path, monkeypatch):
    from funes.commands.status import status

    runs = _counting_kingfisher(tmp_path, monkeypatch)
    mem = memory_with(session("a", ["clean one", f"leak {GITHUB}", "clean two"]), refresh=False)
    st = status()
    assert (st.held_back, st.held_kinds, st.gate) == (1, {"GitHub": 1}, "")
    assert runs() == 1
    assert status().held_back == 1 and runs() == 1  # cached: no scan at all
    mem.chunks.append(chunk_rows(_split_block("b", GITHUB, 6)))
    assert status().held_back == 3 and runs() == 2  # only the new rows scanned


def test_status_says_publishing_is_blocked_when_a_scanner_is_missing(funes_home, monkeypatch):
    from funes import render
    from funes.commands.status import status

    memory_with(session("a", ["clean"]), refresh=False)
    monkeypatch.setenv("FUNES_KINGFISHER", "off")
    text = render.status_text(status())
    assert "publish gate: blocked — the secret gate cannot run: kingfisher is unavailable" in text


def test_a_secret_in_provenance_columns_holds_the_row_back(funes_home):
    from funes.commands import gate

    rows = session("p", ["clean text"], source_path=f"/tmp/{GITHUB}/t.jsonl") + session("q", ["clean too"])
    mem = memory_with(rows, refresh=False)
    held = gate.Held()
    ok = gate.check(mem.chunks, mem.chunks.take([0, 1], ["id", *gate.BLOCK_KEY, *gate.PROVENANCE]), held)
    assert ok == [False, True] and held.kinds == {"GitHub": 1}
