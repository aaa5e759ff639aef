"""Index parts side by side: old vs new code of each changed step of the lexical index, CPU seconds, one process.

Run: .venv/bin/python bench/index_parts.py [--memory DIR] [--chunks 40000] [--rounds 3] [--base 48caf0c]

Over the chunk texts of a day-zero memory (`--memory`, default bench/out/dayzero/funes-w1, as
`dayzero_bench.py` leaves it), interleaved rounds, best round of each, CPU time of this process
(the figures hold on a loaded box); the code before is the `--base` commit's module, read with
`git show` and loaded beside the shipped one:
- tokenise + postings, cold (a fresh process: empty token caches) and warm: `bm25.build_documents`
  with empty context lines and one refresh's `tokenize.Numbering` (column tokeniser, counting-sort postings) vs `bm25.build(tokenize_many(texts))` of the base;
- save + merge of the segments a budgeted run writes (`bm25.save`, `bm25.merge`);
- tier select (`stages.select`, per unit: plain Python over the unit's rows instead of Arrow
  kernels) and split (`stages.split`: one take of the block columns instead of a copy per piece),
  over the first `--sessions` day-zero transcripts (bench/out/dayzero_parts/home, written if absent);
- discover: `pick_sources` + every source's `units` over the 20,000 day-zero transcripts
  (bench/out/dayzero/home), with the string walk and the first-file check for "any sessions?"
  vs the base's Path walk, which also listed and stated the first tree twice.
Every pair is checked for identical output (segments equal array by array, vocabulary order too).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _cpu(fn, *args) -> tuple[float, object]:
    c = time.process_time()
    out = fn(*args)
    return time.process_time() - c, out


def base_module(commit: str, path: str, name: str) -> types.ModuleType:
    src = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    mod = types.ModuleType(name)
    mod.__file__ = f"<{commit}:{path}>"
    sys.modules[name] = mod
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)
    return mod


def same_segment(a, b) -> bool:
    if list(a.vocab.items()) != list(b.vocab.items()) or a.start != b.start:
        return False
    return all(
        np.asarray(getattr(a, f)).dtype == np.asarray(getattr(b, f)).dtype
        and np.array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)))
        for f in ("data", "indices", "indptr", "doclen")
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memory", type=Path, default=REPO / "bench" / "out" / "dayzero" / "funes-w1")
    ap.add_argument("--chunks", type=int, default=40000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", default="48caf0c")
    ap.add_argument("--sessions", type=int, default=600)
    args = ap.parse_args()
    import lance

    from funes.memory import bm25, tokenize

    stage_parts = _stage_parts(args)
    found = _discover_parts(args)
    stage_parts["identical"] &= found.pop("identical")
    stage_parts.update(found)

    old_bm25 = base_module(args.base, "pipeline/funes/memory/bm25.py", "bm25_base")
    ds = lance.dataset(str(args.memory / "memory" / "chunks.lance"))
    texts = ds.to_table(columns=["text"], limit=args.chunks)["text"].to_pylist()
    cuts = [0, len(texts) // 8, len(texts) // 4, len(texts)]  # a small first flush, then larger ones

    def cold():
        tokenize._expand.cache_clear()
        tokenize._stem.cache_clear()
        numbering.clear()  # the pieces' term ids, shared by the calls of one refresh
        if hasattr(bm25.term_hash, "cache_clear"):
            bm25.term_hash.cache_clear()

    def old_build(lo, hi):
        return old_bm25.build(tokenize.tokenize_many(texts[lo:hi]), lo)

    numbering = tokenize.Numbering()

    def new_build(lo, hi):
        return bm25.build_documents([""] * (hi - lo), texts[lo:hi], lo, numbering)

    def segments(build):
        return [build(lo, hi) for lo, hi in itertools.pairwise(cuts)]

    def save_merge(mod, segs, folder: Path):
        for i, s in enumerate(segs):
            mod.save(s, folder / f"s{i}")
        loaded = [mod.load(folder / f"s{i}", s.start) for i, s in enumerate(segs)]
        merged = mod.merge(loaded)
        mod.save(merged, folder / "m")
        return merged

    new_build(0, 10)  # imports (polars, scipy) and the Rust pattern, paid once per process
    old_build(0, 10)
    res: dict[str, list[float]] = {k: [] for k in ("tok_cold_new", "tok_cold_old", "tok_warm_new", "tok_warm_old")}
    res.update(save_merge_new=[], save_merge_old=[])
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for which, build in (("new", new_build), ("old", old_build)):
                cold()
                dt, segs = _cpu(segments, build)
                res[f"tok_cold_{which}"].append(dt)
                dt, _ = _cpu(segments, build)
                res[f"tok_warm_{which}"].append(dt)
                if which == "new":
                    new_segs = segs
                else:
                    same &= all(same_segment(a, b) for a, b in zip(new_segs, segs))
            for which, mod in (("new", bm25), ("old", old_bm25)):
                cold()  # one run's saves and merges share the term-hash cache, not the rounds
                folder = Path(tmp) / f"{which}{r}"
                folder.mkdir()
                dt, merged = _cpu(save_merge, mod, new_segs, folder)
                res[f"save_merge_{which}"].append(dt)
                if which == "new":
                    merged_new = merged
                else:
                    same &= same_segment(merged_new, merged)
                    for f in ("vocab.hash.npy", "vocab.ids.npy", "doclen.npy"):
                        same &= np.array_equal(np.load(Path(tmp) / f"new{r}" / "m" / f), np.load(folder / "m" / f))
    res.update({k: v for k, v in stage_parts.items() if k != "identical"})
    same &= stage_parts["identical"]
    best = {k: min(v) for k, v in res.items()}
    n = len(texts)
    part = {
        k: {
            "before_s": round(best[f"{k}_old"], 3),
            "after_s": round(best[f"{k}_new"], 3),
            "ratio": round(best[f"{k}_old"] / best[f"{k}_new"], 2),
        }
        for k in ("tok_cold", "tok_warm", "save_merge", "select", "split", "discover")
    }
    out = {
        "chunks": n,
        "text_mb": round(sum(map(len, texts)) / 1e6, 1),
        "segments": len(cuts) - 1,
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "identical": same,
        **part,
        "sessions": args.sessions,
        "ms_per_session_select": {
            "before": 1e3 * best["select_old"] / args.sessions,
            "after": 1e3 * best["select_new"] / args.sessions,
        },
        "ms_per_chunk_tok_cold": {"before": 1e3 * best["tok_cold_old"] / n, "after": 1e3 * best["tok_cold_new"] / n},
    }
    print(json.dumps(out, indent=1))


def _discover_parts(args) -> dict:
    from funes.commands import index
    from funes.traces import jsonl, source

    home = REPO / "bench" / "out" / "dayzero" / "home"
    old = base_module(args.base, "pipeline/funes/traces/jsonl.py", "jsonl_base")
    new = (jsonl.walk_jsonl, jsonl.file_units, source.holds_units)

    def discover(mod, holds):
        source.walk_jsonl, source.file_units, source.holds_units = mod.walk_jsonl, mod.file_units, holds
        try:
            srcs, _ = index.pick_sources(index.Options(auto=True))
            return [(u.key, u.signature, u.harness) for s in srcs for u in s.units(None)]
        finally:
            source.walk_jsonl, source.file_units, source.holds_units = new

    def old_holds(sources):
        return any(s.units(1) for s in sources)

    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        same = discover(jsonl, new[2]) == discover(old, old_holds)
        res: dict = {"discover_new": [], "discover_old": [], "identical": same}
        for _ in range(args.rounds):
            res["discover_new"].append(_cpu(discover, jsonl, new[2])[0])
            res["discover_old"].append(_cpu(discover, old, old_holds)[0])
    finally:
        if saved is not None:
            os.environ["HOME"] = saved
    return res


def _stage_parts(args) -> dict:
    sys.path.insert(0, str(REPO / "bench"))
    import pyarrow as pa

    import dayzero_data
    from funes.ingest import stages

    home = REPO / "bench" / "out" / "dayzero_parts" / "home"
    if not home.exists():
        dayzero_data.write(home, args.sessions)
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        from funes.commands import index

        srcs, _ = index.pick_sources(index.Options(auto=True))
        units = [(s, u) for s in srcs for u in s.units(None)][: args.sessions]
        tables = [s.read(u).table for s, u in units]
    finally:
        if saved is not None:
            os.environ["HOME"] = saved
    tables = [t.append_column("repo", pa.array([""] * t.num_rows, pa.string())) for t in tables]
    old = base_module(args.base, "pipeline/funes/ingest/stages.py", "stages_base")
    same = all(
        stages.select(t, tiers, True).equals(old.select(t, tiers, True))
        for t in tables
        for tiers in ({"text"}, {"tool_use"}, {"tool_result"}, {"text", "tool_use", "tool_result"})
    )
    blocks = pa.concat_tables([stages.select(t, {"text", "tool_use", "tool_result"}, True) for t in tables])
    same &= stages.split(blocks).equals(old.split(blocks))
    batches = [blocks.slice(i, 512) for i in range(0, blocks.num_rows, 512)]  # as the datasets map hands them
    res: dict = {"select_new": [], "select_old": [], "split_new": [], "split_old": [], "identical": same}
    for _ in range(args.rounds):
        for which, mod in (("new", stages), ("old", old)):
            res[f"select_{which}"].append(_cpu(lambda m: [m.select(t, {"text"}, True) for t in tables], mod)[0])
            res[f"split_{which}"].append(_cpu(lambda m: [m.split(b) for b in batches], mod)[0])
    return res


if __name__ == "__main__":
    main()
