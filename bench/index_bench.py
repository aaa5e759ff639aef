"""Index benchmark: throughput vs the embedder alone, no-op re-run, one new turn at 1k vs 50k, day zero.

Run: .venv/bin/python bench/index_bench.py [--corpus ../shared/corpus] [--sample-chunks 3000]
Everything happens in temporary FUNES_HOMEs; nothing is written to the repo or to ~/.funes.
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

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from transcripts import append_claude_turn, prose, write_claude_session  # noqa: E402

FUNES = [sys.executable, "-m", "funes.cli"]
# every scenario gets its own HOME; the derived ONNX export is shared (built once per machine)
os.environ.setdefault("FUNES_MODEL_CACHE", str(Path.home() / ".cache" / "funes" / "models"))


def _home(root: Path, name: str) -> Path:
    h = root / name
    (h / "home").mkdir(parents=True)
    os.environ["FUNES_HOME"] = str(h / "funes")
    os.environ["HOME"] = str(h / "home")
    return h / "funes"


def _env(funes_home: Path) -> dict:
    return {**os.environ, "FUNES_HOME": str(funes_home), "HOME": str(funes_home.parent / "home")}


def _index(path: Path, **kw):
    from funes.commands import index

    return index.index(index.Options(path=str(path), **kw))


def corpus_subset(corpus: Path, dest: Path, target_chunks: int) -> Path:
    """Copy Claude/Codex corpus files (smallest first) into dest until about target_chunks chunks."""
    files = sorted(
        (p for h in ("claude", "codex") for p in (corpus / h).glob("*.jsonl")), key=lambda p: p.stat().st_size
    )
    budget = target_chunks * 700  # ~bytes of transcript per stored chunk, measured on the corpus
    for p in files:
        if budget <= 0:
            break
        d = dest / p.parent.name
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, d / p.name)
        budget -= p.stat().st_size
    return dest


def throughput(tmp: Path, corpus: Path, target: int) -> dict:
    home = _home(tmp, "throughput")
    src = corpus_subset(corpus, tmp / "subset", target)
    from funes import models

    models.load_embedder()  # model load is paid once by both sides; measure the steady state
    t0 = time.perf_counter()
    rep = _index(src)
    e2e = time.perf_counter() - t0
    import lance

    texts = lance.dataset(str(home / "memory" / "chunks.lance")).to_table(columns=["text"])["text"].to_pylist()
    from funes.ingest.embed import embed_texts

    t0 = time.perf_counter()
    embed_texts(texts, models.load_embedder())
    emb = time.perf_counter() - t0
    n = rep.chunks_added
    return {
        "chunks": n,
        "end_to_end_chunks_per_s": n / e2e,
        "embedder_only_chunks_per_s": len(texts) / emb,
        "ratio": (n / e2e) / (len(texts) / emb),
        "backend": models.load_embedder().backend,
    }


def noop_rerun(tmp: Path, corpus: Path) -> dict:
    """Whole corpus stored (text; embedding 17k chunks here would take most of the run), then re-run.

    The re-run is `--no-embed` too, so it measures the change detection a hook pays: unit stats vs
    state.json and the pending-vector count; a fully embedded memory answers that count from two
    row counts, without reading anything.
    """
    home = _home(tmp, "noop")
    t0 = time.perf_counter()
    rep = _index(corpus, no_embed=True)
    first = time.perf_counter() - t0
    code = (
        "import sys,time; t=time.perf_counter(); from funes.commands import index as ix;"
        f"r=ix.index(ix.Options(path={str(corpus)!r}, no_embed=True));"
        "print(r.chunks_added, r.vectors_added, time.perf_counter()-t,"
        " [m for m in ('torch','sentence_transformers','onnxruntime') if m in sys.modules])"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=_env(home), capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    added, vecs, inproc, heavy = out.stdout.strip().split(" ", 3)
    return {
        "corpus_chunks": rep.chunks_added,
        "first_store_s": first,
        "noop_wall_s": wall,
        "noop_in_process_s": float(inproc),
        "noop_added": int(added) + int(vecs),
        "models_loaded": heavy,
    }


def _grow(home: Path, target: int) -> None:
    """Replicate the memory's rows under fresh session ids (vectors reused) until it holds target chunks."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from funes.memory import Memory

    mem = Memory.resolve(None)
    base = mem.chunks.dataset().to_table()
    vec = mem.vectors.dataset().to_table().sort_by("row")
    vectors = np.asarray(vec["vector"].combine_chunks().flatten()).reshape(vec.num_rows, -1)
    copy = 0
    while mem.chunks.count() < target:
        copy += 1
        take = min(base.num_rows, target - mem.chunks.count())
        t = base.slice(0, take)
        t = t.set_column(0, "id", pc.binary_join_element_wise(t["id"], pa.scalar(f"c{copy}"), ""))
        t = t.set_column(2, "session_id", pc.binary_join_element_wise(t["session_id"], pa.scalar(f"-c{copy}"), ""))
        start = mem.chunks.append(t)
        mem.append_vectors(
            np.arange(start, start + take),
            t["id"].to_pylist(),
            vectors[:take],
            vec.schema.metadata[b"embedding_model"].decode(),
        )


def one_new_turn(tmp: Path, size: int, seed_src: Path) -> dict:
    home = _home(tmp, f"turn{size}")
    _index(seed_src)
    _grow(home, size)
    from funes.memory import Memory, indexes

    indexes.refresh(Memory.resolve(None))
    tree = tmp / f"turn{size}-tree"
    path = write_claude_session(tree, "bench-session", [prose(i, 120) for i in range(4)])
    _index(tree)
    append_claude_turn(path, "bench-session", 4, prose(99, 150))
    t0 = time.perf_counter()
    out = subprocess.run([*FUNES, "index", str(tree)], env=_env(home), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    return {"memory_chunks": Memory.resolve(None).chunks.count(), "command_wall_s": wall}


def day_zero(tmp: Path, corpus: Path, sessions: int) -> dict:
    """Copies of corpus Claude sessions under fresh ids in ~/.claude/projects; budgeted `index --auto`."""
    home = _home(tmp, "dayzero")
    proj = home.parent / "home" / ".claude" / "projects" / "-bench"
    proj.mkdir(parents=True)
    files = sorted((corpus / "claude").glob("*.jsonl"), key=lambda p: p.stat().st_size)[:40]
    for i in range(sessions):
        shutil.copy(files[i % len(files)], proj / f"day0-{i:05d}.jsonl")
    from funes.commands import index

    t0 = time.perf_counter()
    rep = index.index(index.Options(auto=True))
    return {
        "sessions": sessions,
        "chunks_stored": rep.chunks_added,
        "text_searchable_s": rep.searchable_at,
        "tier_done_s": rep.tier_done,
        "vectors_embedded_in_budget": rep.vectors_added,
        "budget_stopped": rep.budget_stopped,
        "run_s": time.perf_counter() - t0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--sample-chunks", type=int, default=3000)
    ap.add_argument("--big", type=int, default=50_000)
    ap.add_argument("--sessions", type=int, default=2000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="funes-bench-"))
    results = {}
    try:
        results["throughput"] = throughput(tmp, args.corpus, args.sample_chunks)
        print(json.dumps(results["throughput"], indent=1), flush=True)
        results["noop"] = noop_rerun(tmp, args.corpus)
        print(json.dumps(results["noop"], indent=1), flush=True)
        seed = corpus_subset(args.corpus, tmp / "seed", 1000)
        small = one_new_turn(tmp, 1000, seed)
        big = one_new_turn(tmp, args.big, seed)
        results["one_turn"] = {"small": small, "big": big, "ratio": big["command_wall_s"] / small["command_wall_s"]}
        print(json.dumps(results["one_turn"], indent=1), flush=True)
        results["day_zero"] = day_zero(tmp, args.corpus, args.sessions)
        print(json.dumps(results["day_zero"], indent=1), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "index.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
