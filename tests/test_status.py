"""funes status: not an error before the first index; counts, pending vectors, freshness, models."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from conftest import subprocess_env
from retrieval_support import add_vectors, chunk_rows, memory_with, session, unit_vectors


def test_status_before_any_index_is_not_an_error(funes_home):
    from funes import render
    from funes.commands.status import status

    st = status()
    assert st.state == "missing"
    text = render.status_text(st)
    assert text.startswith("memory: local\n") and "funes index" in text


def test_status_counts_and_freshness(funes_home):
    from funes import render
    from funes.commands.status import status

    rows = session("a", ["one", "two", "three"], harness="codex") + session("b", ["four"], block_type="tool_use")
    mem = memory_with(rows, vectors={0: unit_vectors(1)[0]})
    st = status()
    assert (st.state, st.chunks, st.sessions, st.vectors, st.pending_vectors) == ("ready", 4, 2, 1, 3)
    assert st.by_harness == {"claude_code": 1, "codex": 3} and st.by_type == {"text": 3, "tool_use": 1}
    assert st.index["indexed"] == 4 and st.last_indexed is not None
    text = render.status_text(st)
    assert "waiting for vectors: 3 chunks" in text and "search index: up to date (4 chunks, 1 vectors)" in text
    assert "embedder: " in text and "reranker: " in text
    mem.chunks.append(chunk_rows(session("c", ["five"])))  # stored, not yet indexed
    add_vectors(mem, [1], unit_vectors(1, seed=2))
    st = status()
    assert st.chunks == 5 and st.sessions == 3  # counted from the table when the facets lag
    assert "4 of 5 chunks, 1 of 2 vectors indexed" in render.status_text(st)


def test_status_json_for_scripts(funes_home):
    memory_with(session("a", ["one"]))
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", "status", "--json"],
        env=subprocess_env(funes_home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["label"] == "local" and doc["chunks"] == 1 and doc["index"]["indexed"] == 1
    assert set(doc) >= {"sessions", "by_harness", "by_type", "pending_vectors", "last_indexed", "embedder", "reranker"}
    assert np.isfinite(doc["last_indexed"])


def test_status_says_when_the_index_was_never_built(funes_home):
    from funes import render
    from funes.commands.status import status
    from retrieval_support import memory_with

    memory_with(session("a", ["one"]), refresh=False)
    st = status()
    assert st.index["built"] is False
    assert "search index: not built yet" in render.status_text(st)
