"""Every file of the shared real-transcript corpus goes through source.resolve without surprises."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path

import polars as pl
import pytest

from funes.errors import SourceError
from funes.traces import source
from funes.traces.frame import polars_schema

# Measured on the corpus of 93 files (2026-11): 3561 claude, 1772 codex, 3333 pi, 1765 hermes
# turns. Pinned loosely so a parser that silently loses a good share of turns fails.
MIN_TURNS = {"claude_code": 3000, "codex": 1500, "pi": 3000, "hermes": 1500}
EXPECTED_ROLES = {"user", "assistant", "tool", "developer"}


def parse_all(corpus: Path) -> dict[Path, list]:
    """file -> [(unit, Parsed)], each corpus file resolved on its own as a user would name it."""
    out = {}
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "MANIFEST.md"):
        out[path] = []
        for src in source.resolve(path):
            for unit in src.units():
                out[path].append((unit, src.read(unit)))
    return out


@lru_cache(maxsize=1)
def _parsed_once(corpus: Path) -> dict[Path, list]:
    return parse_all(corpus)  # ~1.5 s: shared by every test of this module


@pytest.fixture
def parsed(corpus):
    return _parsed_once(corpus)


def test_every_file_is_parsed_or_skipped_with_a_named_reason(parsed):
    for path, results in parsed.items():
        assert results, f"{path.name}: no unit"
        for unit, p in results:
            assert p.frame.height or p.skipped, f"{unit.key}: nothing parsed and no reason"
            assert all(isinstance(r, str) and r and n > 0 for r, n in p.skipped.items())


def test_columns_and_dtypes_match_the_schema(parsed):
    for results in parsed.values():
        for _, p in results:
            assert dict(p.frame.schema) == polars_schema()


def test_coordinates_are_unique_per_unit(parsed):
    for results in parsed.values():
        for unit, p in results:
            keys = p.frame.select("session_id", "turn_uuid", "block_idx")
            assert keys.is_unique().all(), unit.key


def test_tool_results_with_a_known_call_are_named(parsed):
    for results in parsed.values():
        for unit, p in results:
            calls = p.frame.filter(block_type="tool_use").select("session_id", "tool_use_id")
            results_ = p.frame.filter(block_type="tool_result").join(
                calls, on=["session_id", "tool_use_id"], how="semi"
            )
            assert results_["tool_name"].null_count() == 0, unit.key


def test_roles_and_block_types_are_the_canonical_vocabulary(parsed):
    frames = [p.frame for results in parsed.values() for _, p in results]
    frame = pl.concat(frames)
    assert set(frame["role"].unique()) <= EXPECTED_ROLES
    assert set(frame["block_type"].unique()) == {"text", "thinking", "tool_use", "tool_result"}
    assert frame.filter(pl.col("text").str.strip_chars() == "").height == 0


def test_reparse_is_deterministic(corpus, parsed):
    again = parse_all(corpus)
    for path, results in parsed.items():
        for (unit, p), (unit2, p2) in zip(results, again[path], strict=True):
            assert unit == unit2 and p.frame.equals(p2.frame) and p.skipped == p2.skipped


def test_counts_are_sensible(parsed):
    turns: Counter = Counter()
    reasons: Counter = Counter()
    for results in parsed.values():
        for unit, p in results:
            turns[unit.harness] += p.frame.select("session_id", "turn_uuid").n_unique() if p.frame.height else 0
            reasons.update(p.skipped)
    for harness, floor in MIN_TURNS.items():
        assert turns[harness] >= floor, (harness, turns[harness])
    assert reasons["two objects on one line"] == 2  # pi-mono session.jsonl and compact.jsonl
    assert reasons["malformed json"] == 0 and reasons["truncated last line"] == 0


def test_the_damaged_hermes_backup_is_read(corpus):
    backup = corpus / "hermes" / "hermes-backup__state.db.backup"
    if not backup.exists():
        pytest.skip("backup not in this corpus")
    [src] = source.resolve(backup)
    units = src.units()
    assert len(units) == 28
    frames = []
    for unit in units:
        try:
            frames.append(src.read(unit).frame)
        except SourceError:  # acceptable for a damaged database, but it must be named
            continue
    assert sum(f.height for f in frames) > 0


def test_arrow_rows_equal_the_polars_frame_path(corpus, monkeypatch):
    """claude/codex/pi hand the indexer Arrow rows directly: they are exactly what the polars
    frame path gives, and the frame built from them on demand is that frame."""
    from funes.traces import claude, codex, frame, pi

    fast = {path: [p.table for _, p in results] for path, results in parse_all(corpus).items()}
    for mod in (claude, codex, pi):
        monkeypatch.setattr(mod, "build_rows", lambda *a: frame.build_frame(*a[:5]))
    slow = parse_all(corpus)
    assert fast.keys() == slow.keys()
    for path, results in slow.items():
        assert len(fast[path]) == len(results)
        for table, (_, p) in zip(fast[path], results):
            assert table.equals(frame.as_arrow(p.frame)), path.name
            assert pl.from_arrow(table).equals(p.frame), path.name
