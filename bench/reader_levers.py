"""The transcript readers' two levers of h15p toggled inside one process: CPU of reading N day-zero units.

Run: .venv/bin/python bench/reader_levers.py [--old /tmp/old-h15p/pipeline] [--sessions 3000] [--rounds 8]

Over the first N/2 Claude and N/2 Codex day-zero transcripts (bench/out/dayzero/home), the parse
phase of an index run: `prepare.read_unit` of every unit (text tier) and `blocks.concat` of the
flush. Four configurations, interleaved round by round, CPU (process_time) best and median:
`old` (`records_of` and `cwd_of_transcript` from `--old`, i.e. f557ece), each lever alone on top
of old, and `new` (this code). Every configuration's flush table is compared with old's (all
columns, table order). Then each lever's own function alone, old beside new over the same bytes
(read once, before timing), interleaved, best and median of `--rounds`: `records_of` and
`cwd_of_transcript` (their results compared).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, default=Path("/tmp/old-h15p/pipeline"))
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    home = REPO / "bench" / "out" / "dayzero" / "home"
    os.environ.update(HOME=str(home), FUNES_HOME=str(REPO / "bench" / "out" / "reader_levers" / "funes"))
    from funes.commands import index, prepare
    from funes.ingest import blocks
    from funes.traces import claude, codex, jsonl, repo

    # the two old modules import nothing that differs from this code's, so they load beside it
    old_jsonl = _module("old_jsonl", args.old / "funes" / "traces" / "jsonl.py")
    old_repo = _module("old_repo", args.old / "funes" / "traces" / "repo.py")

    new = {"records": jsonl.records_of, "cwd": repo.cwd_of_transcript}
    old = {"records": old_jsonl.records_of, "cwd": old_repo.cwd_of_transcript}
    configs = {
        "old": old,
        "+records_of": {**old, "records": new["records"]},
        "+cwd search": {**old, "cwd": new["cwd"]},
        "new": new,
    }

    def install(cfg: dict) -> None:
        claude.records_of = codex.records_of = cfg["records"]
        repo.cwd_of_transcript = cfg["cwd"]

    srcs, _ = index.pick_sources(index.Options(auto=True))
    units = [(s, u) for s in srcs for u in s.units(None)[: args.sessions // 2]]

    def parse():
        got = [prepare.read_unit(s, u, ("text",), True) for s, u in units]
        return blocks.concat([b for b, _ in got if b is not None])

    ref = None
    same = {}
    for name, cfg in configs.items():  # warm-up, and the outputs compared
        install(cfg)
        table = parse()
        ref = table if ref is None else ref
        same[name] = table.equals(ref, check_metadata=True)
    cpu: dict[str, list[float]] = {k: [] for k in configs}
    loads = []
    for r in range(args.rounds):
        names = list(configs) if r % 2 == 0 else list(reversed(configs))
        for name in names:
            install(configs[name])
            gc.collect()
            c = time.process_time()
            parse()
            cpu[name].append(time.process_time() - c)
        loads.append(round(os.getloadavg()[0], 2))
    install(new)
    datas = [(u.path, u.path.read_bytes()) for _, u in units]
    alone = {
        "records_of": (old["records"], new["records"], lambda fn, p, d: fn(d)),
        "cwd_of_transcript": (old["cwd"], new["cwd"], lambda fn, p, d: fn(p, d)),
    }
    parts: dict[str, dict] = {}
    for name, (was, now, call) in alone.items():
        same[name] = [repr(call(was, p, d)) for p, d in datas] == [repr(call(now, p, d)) for p, d in datas]
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            for tag, fn in (("old", was), ("new", now)):
                gc.collect()
                c = time.process_time()
                for p, d in datas:
                    call(fn, p, d)
                times[tag].append(time.process_time() - c)
        parts[name] = {
            f"{t}_best_median_s": [round(min(v), 4), round(sorted(v)[len(v) // 2], 4)] for t, v in times.items()
        }
    print(
        json.dumps(
            {
                "units": len(units),
                "rows": ref.num_rows if ref is not None else 0,
                "rounds": args.rounds,
                "cpu_best_s": {k: round(min(v), 3) for k, v in cpu.items()},
                "cpu_median_s": {k: round(sorted(v)[len(v) // 2], 3) for k, v in cpu.items()},
                "alone": parts,
                "identical": same,
                "load_avg_1m": loads,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
