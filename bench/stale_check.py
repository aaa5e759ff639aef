"""What the recall command's stale-index check costs (memory.indexes.refresh_if_stale), per call.

Run: .venv/bin/python bench/stale_check.py [--rows 20000] [--calls 200]

The check moved out of the Retriever into the recall command (a visible decision); this measures
that it stays negligible next to a recall: a synthetic text-only memory of N chunk rows (real
Lance tables, real indexes) in a temporary FUNES_HOME; then, per call, (a) the warm case (nothing
committed since the last check: three stats), (b) the cold case (a new process: two Lance opens
and row counts against the manifest), (c) one appended turn (5 chunks) repaired under the lock.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def _chunks(n: int, start: int, session: str):
    import pyarrow as pa

    from funes import schema
    from funes.ingest.chunk import chunk_id

    words = ["parser", "rotated", "log", "token", "budget", "lance", "faiss", "shard", "card", "hook"]
    cols: dict[str, list] = {c: [] for c in schema.columns("chunks")}
    for i in range(start, start + n):
        row = {
            "id": chunk_id(session, f"t{i}", 0, 0),
            "text": " ".join(words[(i * k) % len(words)] for k in range(1, 30)),
            "session_id": session,
            "workdir": "-home-u-proj",
            "turn_uuid": f"t{i}",
            "parent_uuid": None,
            "seq": i,
            "ts": "2026-06-19T01:29:59.000Z",
            "role": "assistant",
            "block_type": "text",
            "tool_name": None,
            "source_path": "/bench.jsonl",
            "block_idx": 0,
            "split_idx": 0,
            "harness": "claude_code",
            "repo": "",
        }
        for c in cols:
            cols[c].append(row[c])
    return pa.table(cols, schema=schema.arrow_schema("chunks"))


def _ms(samples: list[float]) -> str:
    qs = statistics.quantiles(samples, n=20)
    return f"p50 {statistics.median(samples) * 1e3:.3f} ms, p95 {qs[18] * 1e3:.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FUNES_HOME"] = str(Path(tmp) / ".funes")
        from funes.memory import Memory, indexes

        mem = Memory.resolve(None)
        for lo in range(0, args.rows, 10000):
            mem.chunks.append(_chunks(min(10000, args.rows - lo), lo, f"s{lo}"))
        t0 = time.perf_counter()
        indexes.refresh(mem)
        print(f"memory: {args.rows} chunk rows, indexes built in {time.perf_counter() - t0:.1f} s")
        indexes.refresh_if_stale(mem)
        warm, cold, repair = [], [], []
        for _ in range(args.calls):
            t = time.perf_counter()
            indexes.refresh_if_stale(mem)
            warm.append(time.perf_counter() - t)
        for _ in range(args.calls // 4):
            indexes._CHECKED.clear()  # what a new CLI process starts with
            t = time.perf_counter()
            indexes.refresh_if_stale(Memory.resolve(None))
            cold.append(time.perf_counter() - t)
        for i in range(10):
            mem.chunks.append(_chunks(5, args.rows + 5 * i, "late"))
            t = time.perf_counter()
            assert indexes.refresh_if_stale(Memory.resolve(None))
            repair.append(time.perf_counter() - t)
        print(f"warm (nothing new since the last check): {_ms(warm)}")
        print(f"cold (first check of a process, memory current): {_ms(cold)}")
        print(f"one turn appended, repaired under the lock: {_ms(repair)}")


if __name__ == "__main__":
    main()
