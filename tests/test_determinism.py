"""Principle 1 across processes: the same transcripts give the same chunk rows whatever the hash seed.

One process cannot vary set and dict-of-set iteration order (str hashes are seeded per process),
which is where nondeterminism hides; so the fixtures are parsed, chunked, redacted and stored by
the real index command in two subprocesses with different PYTHONHASHSEED, and their rows compared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, subprocess_env

SOURCES = ["claude/projects", "codex/sessions", "pi/sessions", "hermes/sessions"]
COLUMNS = ["id", "session_id", "turn_uuid", "seq", "block_idx", "split_idx", "block_type", "role", "harness", "text"]

_INDEX_AND_DUMP = """
import json, sys
from funes.commands import index
from funes.memory import Memory

for path in sys.argv[2:]:
    index.index(index.Options(path=path, no_embed=True))
rows = Memory.resolve(None).chunks.scan(json.loads(sys.argv[1])).to_pylist()
print(json.dumps(rows, ensure_ascii=False))
"""


def _rows(home: Path, seed: str) -> list[dict]:
    env = subprocess_env(home / ".funes", PYTHONHASHSEED=seed)
    argv = [sys.executable, "-c", _INDEX_AND_DUMP, json.dumps(COLUMNS), *(str(FIXTURES / s) for s in SOURCES)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout)


def test_two_hash_seeds_store_identical_chunk_rows(tmp_path):
    first, second = (_rows(tmp_path / f"seed{seed}", seed) for seed in ("1", "4242"))
    assert len(first) > 20 and {r["harness"] for r in first} == {"claude_code", "codex", "pi", "hermes"}
    assert first == second  # same rows, same order
