"""Parse and chunk, old code beside new in one process: CPU per session and per stored chunk.

Run: .venv/bin/python bench/parse_parts.py --old /tmp/old [--sessions 1200] [--rounds 3]

`--old` is a checkout of the code to compare (`git archive <rev> pipeline schemas | tar -x -C
/tmp/old`); both copies of `funes` are imported side by side (each call runs with its own
modules installed, so the lazy imports inside them resolve to the same copy). Over the first N
day-zero transcripts (half Claude, half Codex, bench/out/dayzero/home, written by
bench/dayzero_bench.py), interleaved rounds, best of each, CPU time of this process:
- parse: `prepare.read_unit` of every unit (text tier) plus joining the flush's block rows into
  the one Arrow table `run.chunk_blocks` takes (old: `pa.concat_tables`; new: `blocks.concat`,
  which also builds the Arrow that the old code built per unit);
- chunk: `run.chunk_blocks` over those rows with redaction replaced by the identity, i.e. the
  chunk stages alone (the day-zero bench's "chunk" phase, redaction subtracted);
- lines: `contexts.stored_documents` over the chunk rows (the context lines the index reads).
Every output is compared old vs new: block rows, unit tallies, chunk rows, documents.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _funes_modules() -> dict:
    return {m: sys.modules.pop(m) for m in list(sys.modules) if m == "funes" or m.startswith("funes.")}


def load(root: str) -> dict:
    """Import the funes under `root` as its own set of modules (returned, and left uninstalled)."""
    saved = _funes_modules()
    sys.path.insert(0, root)
    try:
        from funes.commands import index, prepare  # noqa: F401
        from funes.ingest import blocks, run  # noqa: F401
        from funes.memory import contexts  # noqa: F401
        from funes.traces import claude, codex  # noqa: F401
    finally:
        sys.path.pop(0)
    mods = _funes_modules()
    sys.modules.update(saved)
    return mods


@contextlib.contextmanager
def installed(mods: dict):
    saved = _funes_modules()
    sys.modules.update(mods)
    try:
        yield mods
    finally:
        mods.update(_funes_modules())  # what a lazy import inside a call added belongs to this copy
        sys.modules.update(saved)


def _cpu(fn) -> tuple[float, object]:
    gc.collect()  # neither side pays for the garbage of the part before it
    c = time.process_time()
    out = fn()
    return time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="root of the old code (holds pipeline/ and schemas/)")
    ap.add_argument("--sessions", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    home = REPO / "bench" / "out" / "dayzero" / "home"
    os.environ.update(HOME=str(home), FUNES_HOME=str(REPO / "bench" / "out" / "parse_parts" / "funes"))
    import pyarrow as pa

    codes = {"old": load(str(Path(args.old) / "pipeline")), "new": load(str(REPO / "pipeline"))}

    def units_of(mods):
        with installed(mods):
            index = mods["funes.commands.index"]
            srcs, _ = index.pick_sources(index.Options(auto=True))
            return [(s, u) for s in srcs for u in s.units(None)[: args.sessions // 2]]

    units = {tag: units_of(m) for tag, m in codes.items()}

    def parse(tag):
        mods = codes[tag]
        with installed(mods):
            prepare = mods["funes.commands.prepare"]
            got = [prepare.read_unit(s, u, ("text",), True) for s, u in units[tag]]
            parts = [b for b, _ in got if b is not None]
            blocks = mods.get("funes.ingest.blocks")
            joined = blocks.concat(parts) if hasattr(blocks, "concat") else pa.concat_tables(parts).combine_chunks()
            tallies = [(i.key, i.harness, i.sessions, i.turns, dict(i.skipped), i.failure) for _, i in got]
            return joined, tallies

    def identity(texts, commands):
        return texts, [[] for _ in texts]

    def chunk(tag, table):
        with installed(codes[tag]):
            return codes[tag]["funes.ingest.run"].chunk_blocks(table, identity)

    def lines(tag, chunks):
        with installed(codes[tag]):
            return codes[tag]["funes.memory.contexts"].stored_documents(chunks, chunks)

    for tag in codes:  # warm: imports, caches, the first git lookups
        lines(tag, chunk(tag, parse(tag)[0])[0])
    cpu: dict[str, list[float]] = {f"{p}_{t}": [] for p in ("parse", "chunk", "lines") for t in codes}
    outs: dict = {}
    for _ in range(args.rounds):
        for tag in ("old", "new"):
            t, (blocks, tallies) = _cpu(lambda: parse(tag))  # noqa: B023
            cpu[f"parse_{tag}"].append(t)
            t, (chunks, _removed) = _cpu(lambda: chunk(tag, blocks))  # noqa: B023
            cpu[f"chunk_{tag}"].append(t)
            t, docs = _cpu(lambda: lines(tag, chunks))  # noqa: B023
            cpu[f"lines_{tag}"].append(t)
            outs[tag] = (blocks, tallies, chunks, docs)
    old, new = outs["old"], outs["new"]
    n, chunks_n = len(units["new"]), new[2].num_rows
    best = {k: min(v) for k, v in cpu.items()}

    def part(p: str) -> dict:
        o, w = best[f"{p}_old"], best[f"{p}_new"]
        return {
            "old_ms_per_session": round(1e3 * o / n, 3),
            "new_ms_per_session": round(1e3 * w / n, 3),
            "old_us_per_chunk": round(1e6 * o / chunks_n, 2),
            "new_us_per_chunk": round(1e6 * w / chunks_n, 2),
            "ratio_new_over_old": round(w / o, 3),
        }

    print(
        json.dumps(
            {
                "sessions": n,
                "blocks": new[0].num_rows,
                "chunks": chunks_n,
                "rounds": args.rounds,
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "parse": part("parse"),
                "chunk": part("chunk"),
                "lines": part("lines"),
                "identical": {
                    "blocks": old[0].equals(new[0], check_metadata=True),
                    "tallies": old[1] == new[1],
                    "chunks": old[2].equals(new[2], check_metadata=True),
                    "documents": old[3] == new[3],
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
