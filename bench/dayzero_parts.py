"""Day-zero parts side by side: old vs new code of each changed step, CPU seconds, one process.

Run: .venv/bin/python bench/dayzero_parts.py [--sessions 600] [--rounds 3]

Over the first N day-zero transcripts (bench/dayzero_data.py, written to bench/out/dayzero_parts/
if absent), interleaved rounds, best round of each (CPU time of this process, so the figures hold
on a loaded box):
- parse: `prepare.read_unit` with rows built straight into Arrow (shipped) vs through a polars
  frame converted to Arrow (before);
- dataset: `run.chunk_blocks`' datasets.Dataset construction with a named fingerprint (shipped)
  vs hashing the table (before), on the same block rows;
- scan: the in-process scanner engines (funes rules + detect-secrets; Kingfisher runs in its own
  process beside them) over the text-tier blocks with the literal prefilters (token rules,
  detect-secrets gates), per-text lowering and the one-pass Kubernetes-Secret check (shipped) vs without them (before); the findings are compared too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import dayzero_data  # noqa: E402


def _cpu(fn) -> float:
    c = time.process_time()
    fn()
    return time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    home = REPO / "bench" / "out" / "dayzero_parts" / "home"
    if not home.exists():
        dayzero_data.write(home, args.sessions)
    os.environ.update(HOME=str(home), FUNES_HOME=str(home.parent / "funes"))
    import datasets
    import pyarrow as pa
    from datasets.table import InMemoryTable

    from funes import scan
    from funes.commands import index, prepare
    from funes.scan import detectsecrets, manifests, rules, windows
    from funes.traces import claude, codex, frame

    srcs, _ = index.pick_sources(index.Options(auto=True))
    units = [(s, u) for s in srcs for u in s.units(None)][: args.sessions]

    def read_all(tiers=("text",)):
        return [prepare.read_unit(s, u, tiers, True)[0] for s, u in units]

    def read_before():
        claude.build_table, codex.build_table = frame.build_frame, frame.build_frame
        try:
            read_all()
        finally:
            claude.build_table, codex.build_table = frame.build_table, frame.build_table

    def scan_with(texts, shortcuts: bool):
        if shortcuts:
            return scan._in_process(texts, True, True)
        saved = rules.may_match, scan.lower_joined, manifests.may_hold_secret_kind, detectsecrets.present
        rules.may_match, scan.lower_joined = (lambda p, f: True), (lambda ts, sep, j: windows.lower(j))
        manifests.may_hold_secret_kind = lambda t: True
        detectsecrets.present = lambda lits, t: frozenset(lits)
        try:
            return scan._in_process(texts, True, True)
        finally:
            rules.may_match, scan.lower_joined, manifests.may_hold_secret_kind, detectsecrets.present = saved

    read_all()  # imports, caches
    texts = [v.text for b in read_all() if b is not None for t in b["text"].to_pylist() for v in scan.text_views(t)]
    same = scan_with(texts, True) == scan_with(texts, False)
    blocks = pa.concat_tables([b for b in read_all(("text", "tool_use", "tool_result")) if b is not None])
    res: dict[str, list[float]] = {k: [] for k in ("parse_new", "parse_old", "dataset_new", "dataset_old")}
    res.update(scan_new=[], scan_old=[])
    for _ in range(args.rounds):
        res["parse_new"].append(_cpu(read_all))
        res["parse_old"].append(_cpu(read_before))
        res["dataset_new"].append(_cpu(lambda: datasets.Dataset(InMemoryTable(blocks), fingerprint="x")))
        res["dataset_old"].append(_cpu(lambda: datasets.Dataset(InMemoryTable(blocks))))
        res["scan_new"].append(_cpu(lambda: scan_with(texts, True)))
        res["scan_old"].append(_cpu(lambda: scan_with(texts, False)))
    best = {k: min(v) for k, v in res.items()}
    n = len(units)
    out = {
        "sessions": n,
        "blocks": blocks.num_rows,
        "load_average": round(os.getloadavg()[0], 1),
        "parse_ms_per_session": {"before": 1e3 * best["parse_old"] / n, "after": 1e3 * best["parse_new"] / n},
        "dataset_ms_per_session": {"before": 1e3 * best["dataset_old"] / n, "after": 1e3 * best["dataset_new"] / n},
        "scan_ms_per_session": {"before": 1e3 * best["scan_old"] / n, "after": 1e3 * best["scan_new"] / n},
        "scan_text_mb": round(sum(map(len, texts)) / 1e6, 1),
        "scan_findings_identical": same,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
