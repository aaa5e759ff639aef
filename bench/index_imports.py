"""What `funes index --no-embed` imports, old code beside new: a tiny first index (the bundled
samples), as a new process each time, interleaved, best of N.

Run: .venv/bin/python bench/index_imports.py --old /tmp/old [--rounds 3]

`--old` is a checkout of the code to compare (`git archive <rev> pipeline schemas | tar -x -C
/tmp/old`), run on PYTHONPATH. Per process: wall, CPU (its rusage, Kingfisher's included, which is
the same for both), the heavy modules it ended with, and `-X importtime`'s total (self times
summed) and heaviest top-level packages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "datasets", "torch", "sentence_transformers", "transformers", "polars", "lance", "bm25s")
PROBE = """
import sys
from funes import cli, paths
code = cli.main(["index", str(paths.samples_dir()), "--no-embed"])
print("MODULES=" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def once(pythonpath: str | None, importtime: bool) -> dict:
    home = Path(tempfile.mkdtemp(prefix="funes-imports-"))
    env = {**os.environ, "FUNES_HOME": str(home / "funes"), "HOME": str(home)}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", PROBE.format(heavy=HEAVY)]
    t0, c0 = time.perf_counter(), _children_cpu()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    shutil.rmtree(home, ignore_errors=True)
    res = {"wall_s": wall, "cpu_s": cpu, "modules": out.stdout.splitlines()[-1].split("=", 1)[1]}
    if importtime:
        tops: dict[str, int] = {}
        for line in out.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
            if m:
                root = m.group(2).split(".")[0]
                tops[root] = tops.get(root, 0) + int(m.group(1))
        res["import_self_s"] = sum(tops.values()) / 1e6
        res["heaviest_ms"] = {k: round(v / 1e3) for k, v in sorted(tops.items(), key=lambda kv: -kv[1])[:8]}
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    paths = {"old": str(Path(args.old) / "pipeline"), "new": None}
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for _ in range(args.rounds):
        for tag, pp in paths.items():
            runs[tag].append(once(pp, importtime=False))
    audit = {tag: once(pp, importtime=True) for tag, pp in paths.items()}
    out = {
        "rounds": args.rounds,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **{
            tag: {
                "best_wall_s": round(min(r["wall_s"] for r in rs), 2),
                "best_cpu_s": round(min(r["cpu_s"] for r in rs), 2),
                "heavy_modules": rs[-1]["modules"],
                "import_self_s": round(audit[tag]["import_self_s"], 2),
                "heaviest_ms": audit[tag]["heaviest_ms"],
            }
            for tag, rs in runs.items()
        },
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
