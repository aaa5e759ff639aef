"""What the hook path pays, old code beside new: one new turn indexed, and a no-op re-run.

Run: .venv/bin/python bench/hook_cost.py --old /tmp/old-h13k/pipeline [--sessions 200] [--rounds 5]

Each code indexes its own copy of one tree of N Claude sessions (tests/transcripts.py) into its
own memory once (untimed); then, interleaved round by round, for each code: one turn appended to
one session and `funes index TREE --no-embed` as a new process (the hook worker's work is this
run: one owed unit, one flush), then the same command again with nothing owed (the no-op re-run).
Wall and CPU (the child's and its children's rusage: Kingfisher included); best and median per code.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "hook_cost"
sys.path.insert(0, str(REPO / "tests"))
from transcripts import append_claude_turn, prose, write_claude_session  # noqa: E402


def _kids_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(env: dict, tree: Path) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), _kids_cpu()
    p = subprocess.run(
        [sys.executable, "-m", "funes.cli", "index", str(tree), "--no-embed"], env=env, capture_output=True, text=True
    )
    if p.returncode:
        sys.exit(p.stderr)
    return time.perf_counter() - t0, _kids_cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, required=True, help="the old code's pipeline/ (git archive)")
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    codes = {"old": str(args.old.resolve()), "new": str(REPO / "pipeline")}
    envs, trees = {}, {}
    for name, path in codes.items():
        tree = OUT / name / "tree"
        for s in range(args.sessions):
            write_claude_session(tree, f"hook-{s:04d}", [prose(s * 5 + t, 60) for t in range(6)])
        env = dict(os.environ, HOME=str(OUT / name), FUNES_HOME=str(OUT / name / "funes"), HF_HUB_OFFLINE="1")
        env["PYTHONPATH"] = path
        envs[name], trees[name] = env, tree
        _run(env, tree)  # the first index, untimed
    got: dict = {n: {"turn": [], "noop": []} for n in codes}
    for r in range(args.rounds):
        for name in codes:
            session = trees[name] / "-home-u-proj" / f"hook-{r:04d}.jsonl"
            append_claude_turn(session, f"hook-{r:04d}", 100 + r, prose(9000 + r, 60))
            got[name]["turn"].append(_run(envs[name], trees[name]))
            got[name]["noop"].append(_run(envs[name], trees[name]))
    summary = {
        name: {
            kind: {
                "wall_best_s": round(min(w for w, _ in runs), 3),
                "wall_median_s": round(statistics.median(w for w, _ in runs), 3),
                "cpu_best_s": round(min(c for _, c in runs), 3),
                "cpu_median_s": round(statistics.median(c for _, c in runs), 3),
            }
            for kind, runs in kinds.items()
        }
        for name, kinds in got.items()
    }
    summary["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
