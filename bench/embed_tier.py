"""The vector tier of `funes index` on both cores: wall, CPU and CPU/wall of a run that embeds pending chunks.

Run: .venv/bin/python bench/embed_tier.py [--limit 4] [--rounds 1] [--legs onnx,auto]

Text first: `funes index ../shared/corpus/claude --harness claude --no-embed --yes --limit N` stores the
chunks of the N newest Claude sessions without vectors. Then the same command without `--no-embed`
finds nothing new and embeds every pending chunk — on a fresh copy of that memory per leg:
`FUNES_EMBED_BACKEND=onnx` (every batch fp32 ONNX, the shipped path before bf16) and the default
(`auto`: bulk batches in bf16). Each leg is a new process; its CPU time comes from wait4's rusage,
so CPU/wall ~2 means both cores were busy (and ru_maxrss gives the peak RSS). Legs alternate for `--rounds` rounds. The model cache is
the user's (export and bf16 gate already built), so no leg pays a one-time export.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "claude"
FUNES = Path(sys.executable).with_name("funes")


def _env(home: Path, backend: str | None) -> dict:
    from funes.models.weights import cache_dir

    env = {**os.environ, "HOME": str(home), "FUNES_HOME": str(home / ".funes"), "FUNES_MODEL_CACHE": str(cache_dir())}
    env.pop("FUNES_EMBED_BACKEND", None)
    if backend:
        env["FUNES_EMBED_BACKEND"] = backend
    return env


def _run(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one command (its process and the children it waited for)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed ({status}): {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _vectors(env: dict) -> tuple[int, int]:
    out = subprocess.run([str(FUNES), "status", "--json"], env=env, capture_output=True, text=True, check=True)
    st = json.loads(out.stdout)
    return st["vectors"], st["pending_vectors"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=4, help="newest Claude sessions to index")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--legs", default="onnx,auto", help="comma-separated: onnx, auto")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="funes-tier-"))
    index = [str(FUNES), "index", str(CORPUS), "--harness", "claude", "--yes", "--limit", str(args.limit)]
    seed = base / "seed"
    seed.mkdir()
    _run([*index, "--no-embed"], _env(seed, None))
    _, pending = _vectors(_env(seed, None))
    rows = []
    for r in range(args.rounds):
        for backend in [None if leg == "auto" else leg for leg in args.legs.split(",")]:
            home = base / f"{backend or 'auto'}-{r}"
            shutil.copytree(seed, home, symlinks=True)
            env = _env(home, backend)
            load = os.getloadavg()[0]
            wall, cpu, rss = _run(index, env)
            vectors, left = _vectors(env)
            rows.append(
                {
                    "backend": backend or "auto",
                    "round": r,
                    "vectors": vectors,
                    "left": left,
                    "wall_s": round(wall, 2),
                    "cpu_s": round(cpu, 2),
                    "cpu_per_wall": round(cpu / wall, 2),
                    "peak_rss_mb": round(rss),
                    "chunks_per_s": round(vectors / wall, 1),
                    "chunks_per_cpu_s": round(vectors / cpu, 1),
                    "load_before": round(load, 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
            shutil.rmtree(home, ignore_errors=True)
    print(json.dumps({"pending": pending, "load_after": round(os.getloadavg()[0], 1)}))
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
