"""One bf16 bulk-encode pass in a fresh process, for A/B runs of OpenMP's wait policy (read at torch load).

Run, interleaved: for r in 1 2 3; do for v in OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=30000; do
  env $v .venv/bin/python bench/embed_omp.py; done; done
256 corpus chunks, 2 threads, best of 2 passes: chunks per CPU-second, chunks/s wall, CPU/wall.
"""

import os
import sys
import time

import torch  # noqa: F401 (loaded first, so Bf16Model leaves the policy given on the command line alone)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embed_bench import corpus_chunks
from funes.models import bf16, locate

texts = corpus_chunks(256)
m = bf16.Bf16Model(locate.wheel_dir(locate.DEFAULT_EMBED_MODEL), 2)
m.encode(texts[:32])
best = (9e9, 9e9)
for _ in range(2):
    w, c = time.perf_counter(), time.process_time()
    m.encode(texts)
    best = min(best, (time.process_time() - c, time.perf_counter() - w))
print(
    os.environ.get("OMP_WAIT_POLICY"),
    f"{256 / best[0]:.1f}/cpu-s {256 / best[1]:.1f}/s cpu/wall {best[0] / best[1]:.2f} load {os.getloadavg()[0]:.1f}",
)
