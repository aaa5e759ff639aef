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
  detect-secrets gates), per-text lowering and the one-pass Kubernetes-Secret check (shipped) vs without them (before); the findings are compared too;
  the candidate gate is off in both (`FUNES_SCAN_EXACT=1`), as when this part was measured;
- gate: the same engines (shortcuts on) with the polars/Rust-regex candidate gate (`scan/gate.py`)
  vs `FUNES_SCAN_EXACT=1`, findings compared;
- redact: the whole redact step (`ingest.redact.redact_texts` over the text-tier blocks: text
  views, the Kingfisher job, the in-process engines, merge) with the gate vs without, CPU of this
  process and of its children (Kingfisher) apart, findings compared;
- with `--corpus`: the gate part again over the real coding-agent transcripts of ../shared/corpus
  (every text view of tests/test_redact_corpus.py's sample: text, thinking, tool input and output).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
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


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@contextlib.contextmanager
def _exact(on: bool):
    old = os.environ.get("FUNES_SCAN_EXACT")
    os.environ["FUNES_SCAN_EXACT"] = "1" if on else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FUNES_SCAN_EXACT")
        else:
            os.environ["FUNES_SCAN_EXACT"] = old


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--corpus", action="store_true", help="also the gate part over ../shared/corpus")
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
    from funes.ingest.redact import redact_texts
    from funes.scan import detectsecrets, manifests, rules, windows
    from funes.traces import claude, codex, frame

    srcs, _ = index.pick_sources(index.Options(auto=True))
    units = [(s, u) for s in srcs for u in s.units(None)][: args.sessions]

    def read_all(tiers=("text",)):
        return [prepare.read_unit(s, u, tiers, True)[0] for s, u in units]

    def via_frame(session_id, workdir, turns, source_path, harness, source=None):
        return frame.build_frame(session_id, workdir, turns, source_path, harness)  # a polars frame per unit

    def read_before():
        claude.build_rows, codex.build_rows = via_frame, via_frame
        try:
            read_all()
        finally:
            claude.build_rows, codex.build_rows = frame.build_rows, frame.build_rows

    def scan_with(texts, shortcuts: bool):
        if shortcuts:
            with _exact(True):
                return scan._in_process(texts, True, True)
        saved = rules.may_match, scan.lower_joined, manifests.may_hold_secret_kind, detectsecrets.present
        rules.may_match, scan.lower_joined = (lambda p, f: True), (lambda ts, sep, j, keep=None: windows.lower(j))
        manifests.may_hold_secret_kind = lambda t: True
        detectsecrets.present = lambda lits, t: frozenset(lits)
        try:
            with _exact(True):
                return scan._in_process(texts, True, True)
        finally:
            rules.may_match, scan.lower_joined, manifests.may_hold_secret_kind, detectsecrets.present = saved

    def gated(texts, gate: bool):
        with _exact(not gate):
            return scan._in_process(texts, True, True)

    def redact(blocks, gate: bool) -> tuple[float, float, list]:
        with _exact(not gate):
            c, k = time.process_time(), _children_cpu()
            out = redact_texts(blocks)
            return time.process_time() - c, _children_cpu() - k, out

    read_all()  # imports, caches
    text_blocks = [t for b in read_all() if b is not None for t in b["text"].to_pylist()]
    texts = [v.text for t in text_blocks for v in scan.text_views(t)]
    same = scan_with(texts, True) == scan_with(texts, False)
    same_gate = gated(texts, True) == gated(texts, False)
    same_redact = redact(text_blocks, True)[2] == redact(text_blocks, False)[2]
    blocks = pa.concat_tables([b for b in read_all(("text", "tool_use", "tool_result")) if b is not None])
    res: dict[str, list[float]] = {k: [] for k in ("parse_new", "parse_old", "dataset_new", "dataset_old")}
    res.update(scan_new=[], scan_old=[], gate_new=[], gate_old=[])
    res.update(redact_new=[], redact_old=[], redact_new_kf=[], redact_old_kf=[])
    for _ in range(args.rounds):
        res["parse_new"].append(_cpu(read_all))
        res["parse_old"].append(_cpu(read_before))
        res["dataset_new"].append(_cpu(lambda: datasets.Dataset(InMemoryTable(blocks), fingerprint="x")))
        res["dataset_old"].append(_cpu(lambda: datasets.Dataset(InMemoryTable(blocks))))
        res["scan_new"].append(_cpu(lambda: scan_with(texts, True)))
        res["scan_old"].append(_cpu(lambda: scan_with(texts, False)))
        res["gate_new"].append(_cpu(lambda: gated(texts, True)))
        res["gate_old"].append(_cpu(lambda: gated(texts, False)))
        for tag, on in (("new", True), ("old", False)):
            cpu, kf, _ = redact(text_blocks, on)
            res[f"redact_{tag}"].append(cpu)
            res[f"redact_{tag}_kf"].append(kf)
    best = {k: min(v) for k, v in res.items()}
    n = len(units)
    mb = sum(map(len, text_blocks)) / 1e6

    def per(key: str, scale: float) -> dict[str, float]:
        return {"before": round(scale * best[key + "_old"], 3), "after": round(scale * best[key + "_new"], 3)}

    out = {
        "sessions": n,
        "blocks": blocks.num_rows,
        "load_average": round(os.getloadavg()[0], 1),
        "parse_ms_per_session": per("parse", 1e3 / n),
        "dataset_ms_per_session": per("dataset", 1e3 / n),
        "scan_ms_per_session": per("scan", 1e3 / n),
        "scan_text_mb": round(sum(map(len, texts)) / 1e6, 1),
        "scan_findings_identical": same,
        "gate_ms_per_session": per("gate", 1e3 / n),
        "gate_findings_identical": same_gate,
        "redact_text_mb": round(mb, 1),
        "redact_ms_per_session": per("redact", 1e3 / n),
        "redact_cpu_s_per_mb": per("redact", 1 / mb),
        "redact_kingfisher_ms_per_session": {
            "before": round(1e3 * best["redact_old_kf"] / n, 3),
            "after": round(1e3 * best["redact_new_kf"] / n, 3),
        },
        "redact_findings_identical": same_redact,
    }
    if args.corpus:
        sys.path.insert(0, str(REPO / "tests"))
        from test_redact_corpus import corpus_texts

        views = [v.text for t in corpus_texts(REPO.parent / "shared" / "corpus") for v in scan.text_views(t)]
        same_corpus = gated(views, True) == gated(views, False)
        runs: dict[str, list[float]] = {"new": [], "old": []}
        for _ in range(args.rounds):
            runs["new"].append(_cpu(lambda: gated(views, True)))
            runs["old"].append(_cpu(lambda: gated(views, False)))
        mb_c = sum(map(len, views)) / 1e6
        share = sum(len(t) for t, k in zip(views, scan.gate.candidates(views)) if k) / 1e6 / mb_c
        out["corpus_gate"] = {
            "text_mb": round(mb_c, 1),
            "candidate_share_of_text": round(share, 3),
            "cpu_s_per_mb": {"before": round(min(runs["old"]) / mb_c, 3), "after": round(min(runs["new"]) / mb_c, 3)},
            "findings_identical": same_corpus,
            "load_average": round(os.getloadavg()[0], 1),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
