"""Cold `funes recall`: a new process per query, median wall, and what it imports (`python -X importtime`).

Run: .venv/bin/python bench/cold_recall.py [--funes-home bench/out/dayzero/funes-w1] [--runs 5]
     .venv/bin/python bench/cold_recall.py --build 100000 --from bench/out/dayzero/funes-w1

`--build N` first makes a memory of N chunks WITH vectors in bench/out/cold_recall_home: the
`--from` memory's chunk rows replicated under fresh chunk and session ids, each given a random
unit vector under the pinned embedder's model id (no embedding is run: the vectors' values do not
change what a cold process imports or loads), then the lexical and vector indexes are built.
Recall on it embeds the query with the real ONNX embedder, so the model load is measured.

Bytecode: this box sets PYTHONDONTWRITEBYTECODE=1, so an editable checkout compiles every funes
module from source in every new process (~0.3 s of a cold recall); an installed wheel has its
bytecode written at install. The bench compiles the package first (compileall), as an install does.

Side by side in one run, interleaved: "as shipped" (`funes recall`) and "with pandas" (the same
command in a process that imports pandas first, which is what every cold recall paid before
`memory.lance.import_for_reading`). The import audit lists the heaviest top-level imports of one
shipped run and whether any module the read path does not use was imported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UNUSED = ("pandas", "torch", "datasets", "sentence_transformers", "polars", "transformers")
QUERIES = ("how did I get around Tokyo", "what did I buy for my dog", "concert dinner recommendations")
RUN = (
    "import sys; sys.argv = ['funes', 'recall'] + sys.argv[1:]; from funes import cli; code = cli.main(); "
    f"print('LOADED=' + ','.join(m for m in {UNUSED!r} if m in sys.modules), file=sys.stderr); sys.exit(code)"
)
WITH_PANDAS = "import pandas; " + RUN


def _once(code: str, query: str, env: dict, importtime: bool = False) -> tuple[float, str]:
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code, query]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"funes: cold recall failed: {out.stderr.strip().splitlines()[-1:]}")
    return wall, out.stderr


def audit(stderr: str) -> dict:
    top = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        _self, cum, name = line[len("import time:") :].split("|")
        if not cum.strip().isdigit():
            continue  # the header line
        mod = name.strip()
        if name[1:2] != " ":  # a top-level import (importtime indents nested ones)
            top.append((int(cum), mod))
    return {
        "heaviest_top_level_ms": {m: round(c / 1000) for c, m in sorted(top, reverse=True)[:8]},
        "unused_imported": next((ln[7:] for ln in stderr.splitlines() if ln.startswith("LOADED=")), "?"),
    }


def build(target: Path, source: Path, size: int) -> dict:
    """A memory of `size` chunks with random unit vectors (see the module docstring)."""
    import lance
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    os.environ["FUNES_HOME"] = str(target)
    from funes import models
    from funes.memory import Memory, indexes

    base = lance.dataset(str(source / "memory" / "chunks.lance")).to_table()
    mem = Memory.resolve(None)
    model, rng, copy = models.embedder_id(), np.random.default_rng(0), 0
    t0 = time.perf_counter()
    with mem.lock():
        while mem.chunks.count() < size:
            take = min(base.num_rows, size - mem.chunks.count())
            t = base.slice(0, take)
            for col in ("id", "session_id"):
                i = t.schema.get_field_index(col)
                t = t.set_column(i, col, pc.binary_join_element_wise(t[col], pa.scalar(f"~c{copy}"), ""))
            start = mem.chunks.append(t)
            vecs = rng.standard_normal((take, 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            mem.append_vectors(np.arange(start, start + take), t["id"].to_pylist(), vecs, model)
            copy += 1
        stored = time.perf_counter() - t0
        built = indexes.refresh(mem)
    return {
        "chunks": mem.chunks.count(),
        "model": model,
        "store_s": round(stored, 1),
        "index_s": round(time.perf_counter() - t0 - stored, 1),
        "faiss": built.get("faiss_kinds"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--funes-home", type=Path, default=REPO / "bench" / "out" / "dayzero" / "funes-w1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", type=int, help="first build a memory of this many chunks with vectors")
    ap.add_argument("--from", dest="source", type=Path, default=REPO / "bench" / "out" / "dayzero" / "funes-w1")
    args = ap.parse_args()
    import compileall

    compileall.compile_dir(str(REPO / "pipeline" / "funes"), quiet=1)
    built = None
    if args.build:
        args.funes_home = REPO / "bench" / "out" / "cold_recall_home"
        if not (args.funes_home / "memory" / "vectors.lance").exists():
            built = build(args.funes_home, args.source.resolve(), args.build)
            print(json.dumps({"built": built}), flush=True)
    env = {**os.environ, "FUNES_HOME": str(args.funes_home.resolve()), "HF_HUB_OFFLINE": "1"}
    shipped, pandas_first = [], []
    for i in range(args.runs):
        q = QUERIES[i % len(QUERIES)]
        shipped.append(_once(RUN, q, env)[0])
        pandas_first.append(_once(WITH_PANDAS, q, env)[0])
    _, stderr = _once(RUN, QUERIES[0], env, importtime=True)
    _, stderr_pd = _once(WITH_PANDAS, QUERIES[0], env, importtime=True)
    res = {
        "funes_home": str(args.funes_home),
        "built": built,
        "runs": args.runs,
        "load_average": os.getloadavg()[0],
        "shipped_median_s": round(statistics.median(shipped), 3),
        "with_pandas_median_s": round(statistics.median(pandas_first), 3),
        "shipped": audit(stderr),
        "with_pandas": audit(stderr_pd),
    }
    print(json.dumps(res, indent=1))
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "cold_recall.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
