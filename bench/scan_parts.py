"""Where the scan worker's CPU goes, part by part, over the batches of a day-zero round
(bench/scan_replay.py capture): each part's CPU (process_time: this process's threads, polars' own
included) summed over the batches, and Kingfisher's children apart. Runs whatever code is imported
(old code: PYTHONPATH=/tmp/old-h15k/pipeline); a part the code lacks is left out.

Run: nice -n 10 .venv/bin/python bench/scan_parts.py [--corpus]

`--corpus`: the block texts of ../shared/corpus (real transcripts of every agent) instead, in
batches of 20,000 texts, only the in-process engines (Kingfisher's cost does not depend on them).
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import resource
import sys
import time
from pathlib import Path

import funes.scan as S
from funes.scan import worker

BATCHES = Path(__file__).resolve().parents[1] / "bench" / "out" / "scan_replay" / "batches"
CPU: collections.Counter = collections.Counter()


def _wrap(mod, name: str, key: str) -> None:
    if not hasattr(mod, name):
        return
    fn = getattr(mod, name)

    def timed(*a, **kw):
        c = time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            CPU[key] += time.process_time() - c

    setattr(mod, name, timed)


def _batches(corpus: bool):
    if not corpus:
        for f in sorted(BATCHES.glob("*.pkl")):
            yield f.read_bytes()
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_redact_corpus import corpus_texts

    texts = corpus_texts(Path(__file__).resolve().parents[2] / "shared" / "corpus")
    for i in range(0, len(texts), 20000):
        yield pickle.dumps(("scan", i, texts[i : i + 20000], None, ["detect-secrets", "funes-rules"]))


def main() -> None:
    corpus = "--corpus" in sys.argv[1:]
    S.find(["warm password=hunter2xyz"], only=("detect-secrets", "funes-rules"))
    for mod, name, key in (
        (S.gate, "pick", "gate (in-process engines)"),
        (S.gate, "candidates", "gate (in-process engines)"),
        (S.gate, "may_hold_b64", "gate (base64 runs)"),
        (S, "text_views", "views"),
        (S.kingfisher, "Job", "Kingfisher start (this process)"),
        (S, "word_windows", "word windows"),
        (S, "lower_joined", "lowering"),
        (S.rules, "findings", "funes rules"),
        (S.bare, "findings", "funes rules: bare shapes"),
        (S.detectsecrets, "findings", "detect-secrets"),
        (S, "_merge", "merge"),
        (S.outputs, "findings", "credential outputs"),
    ):
        _wrap(mod, name, key)
    k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    texts = total = 0.0
    for blob in _batches(corpus):
        c = time.process_time()
        _, rid, batch, commands, only = pickle.loads(blob)
        CPU["unpickle"] += time.process_time() - c
        texts += len(batch)
        c = time.process_time()
        job = S.start(batch, only=only, commands=commands)
        try:
            found = job.result()
        finally:
            job.close()
        total += time.process_time() - c
        c = time.process_time()
        pickle.dumps((rid, "ok", worker._sparse(found)), protocol=5)
        CPU["reply"] += time.process_time() - c
    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids = k1.ru_utime + k1.ru_stime - k0.ru_utime - k0.ru_stime
    print(
        json.dumps(
            {
                "code": S.__file__,
                "texts_from": "../shared/corpus" if corpus else "the captured day-zero batches",
                "texts": int(texts),
                "start_and_result_cpu_s": round(total, 2),
                "kingfisher_children_cpu_s": round(kids, 2),
                "load_average": round(os.getloadavg()[0], 2),
                "parts_cpu_s": {k: round(v, 3) for k, v in CPU.most_common()},
            }
        )
    )


if __name__ == "__main__":
    main()
