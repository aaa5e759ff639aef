"""The day-zero bench's transcripts: deterministic, and read by funes as Claude Code and Codex sessions with tool blocks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from funes.traces import source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import dayzero_data


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


@pytest.mark.slow
def test_written_sessions_are_deterministic_and_parse(benchdata, tmp_path):
    lme = benchdata / "longmemeval" / "s_subset"
    uniq = len(dayzero_data.sessions(dayzero_data.questions(lme)))
    n = uniq + 6  # the first replicas under fresh ids
    a = dayzero_data.write(tmp_path / "a", n, lme)
    dayzero_data.write(tmp_path / "b", n, lme)
    assert a["sessions"] == n and _files(tmp_path / "a") == _files(tmp_path / "b")
    units = [(s, u) for s in source.resolve(tmp_path / "a" / ".claude", None) for u in s.units()]
    units += [(s, u) for s in source.resolve(tmp_path / "a" / ".codex", None) for u in s.units()]
    assert len(units) == n
    replicas = [(s, u) for s, u in units if "~r1" in u.path.name]
    assert {u.harness for _, u in replicas} == {"claude_code", "codex"}
    for src, unit in replicas:
        frame = src.read(unit).frame
        sid = frame["session_id"][0]
        assert sid.endswith("~r1") and sid.split("~")[0] in unit.path.name
        assert {"text", "tool_use", "tool_result"} <= set(frame["block_type"].to_list())
