"""recall/get as commands and as the real `funes` CLI: refusals, exit codes, labels, pasteable get lines."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import subprocess_env
from retrieval_support import memory_with, session

FUNES = [sys.executable, "-m", "funes.cli"]


@pytest.fixture
def no_models(monkeypatch):
    monkeypatch.setenv("FUNES_RERANK", "off")  # the user's switch: fused order


def _run(funes_home, *args):
    return subprocess.run([*FUNES, *args], env=subprocess_env(funes_home), capture_output=True, text=True, timeout=120)


def test_no_memory_yet_names_the_command_that_builds_it(funes_home):
    from funes.commands.recall import recall
    from funes.errors import MemoryMissing

    with pytest.raises(MemoryMissing, match="funes index"):
        recall("anything")


def test_memory_built_with_another_model_is_refused(funes_home, no_models):
    from funes.commands.recall import recall
    from funes.errors import MemoryIncompatible

    mem = memory_with(session("s", ["text"]))
    (mem.path / "manifest.json").write_text(json.dumps({"embedding_model": "someone/else-v9", "dim": 7}))
    with pytest.raises(MemoryIncompatible, match="someone/else-v9"):
        recall("text")


def test_unreadable_memory_is_one_error(funes_home):
    from funes.commands.recall import recall
    from funes.errors import MemoryUnreadable

    versions = funes_home / "memory" / "chunks.lance" / "_versions"
    versions.mkdir(parents=True)
    (versions / "1.manifest").write_bytes(b"not a lance manifest")
    with pytest.raises(MemoryUnreadable, match=r"is damaged: chunks\.lance cannot be opened .* aside"):
        recall("anything")


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_empty_query_is_a_usage_error(funes_home, query):
    from funes.commands.recall import recall
    from funes.errors import UsageError

    with pytest.raises(UsageError, match="empty query") as e:
        recall(query)
    assert e.value.exit_code == 2


def test_memory_label_local_and_path(funes_home, no_models):
    from funes.commands.get import get
    from funes.commands.recall import recall

    mem = memory_with(session("s", ["the marmot decision", "follow-up"]))
    assert recall("marmot", half_life=0).label == "local"
    assert recall("marmot", memory="local", half_life=0).hits[0].turn_uuid == "s-t0"
    by_path = recall("marmot", memory=str(mem.path), half_life=0)
    assert by_path.label == str(mem.path)
    assert get("s", "s-t0", memory="local").turns[0].blocks[0].text == "the marmot decision"
    assert get("s", "s-t0", memory=str(funes_home)).label == str(mem.path)  # FUNES_HOME-like folder accepted


def test_cli_recall_then_paste_the_get_line(funes_home):
    memory_with(session("sess-1234abcd", ["we moved the cache to redis", "because of eviction storms", "ok"]))
    out = _run(funes_home, "recall", "redis", "cache", "--half-life", "0")
    assert out.returncode == 0, out.stderr
    get_line = next(line for line in out.stdout.splitlines() if line.startswith("  → get "))
    assert get_line == "  → get sess-1234abcd sess-1234abcd-t0 --memory local"
    again = _run(funes_home, *get_line.split()[1:], "--window", "1")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("[2026-06-19T01:29:59.000Z] user seq0 turn=sess-1234abcd-t0\nwe moved the cache")
    assert again.stdout.count("\n---\n") == 2
    none = _run(funes_home, "recall", "zeppelin")
    assert (none.returncode, none.stdout) == (0, "no results")


def test_cli_errors_are_one_line_with_exit_codes(funes_home):
    missing = _run(funes_home, "recall", "anything")
    assert (
        missing.returncode == 1
        and missing.stderr.startswith("funes: no memory yet")
        and "funes index" in missing.stderr
    )
    memory_with(session("s", ["hello"]))
    empty = _run(funes_home, "recall")
    assert empty.returncode == 2 and "empty query" in empty.stderr
    gone = _run(funes_home, "get", "s", "nope")
    assert gone.returncode == 1 and "turn nope not found in session s" in gone.stderr
    assert "Traceback" not in missing.stderr + empty.stderr + gone.stderr
