"""Remote memory: cold first recall, warm p50/p95 beside the same memory recalled locally, one new shard, cache size.

Run: .venv/bin/python bench/remote_bench.py [--corpus ../shared/corpus] [--sizes 10000,100000]

Setup, all in a temporary folder: the local test Hub (tests/hubserver.py, real huggingface_hub
client over loopback HTTP, LFS, no Xet); a publisher FUNES_HOME whose memory replicates the
corpus's chunk rows (indexed once, text only, by the real `funes index`; cached in bench/out/)
under fresh ids up to N rows, each with a random unit 384-d vector (replicated rows, not
embedded); a reader FUNES_HOME with an empty HF cache. Shards are written by the publish
mirror (memory/mirror.py, 100k rows a shard) and committed with funes.hub, without the egress
gate's secret scan (that is the publisher's cost, measured by the publish bench).

Recalls run in one process with the same stand-in query embedder (stored vectors) and no
cross-encoder, so the figures isolate what differs between a local and a remote memory: state
check (remote: one head request + the cached manifest), index load, row fetches. Each recall is
`commands.recall.recall`, as the MCP server calls it. Pin cores with `taskset -c 0,1`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = _free_port()
TMP = Path(tempfile.mkdtemp(prefix="funes-remote-bench-"))
# the HF clients read these at import: set them before anything imports huggingface_hub
os.environ.update(
    HF_ENDPOINT=f"http://127.0.0.1:{PORT}",
    HF_HUB_DISABLE_XET="1",
    HF_HUB_DISABLE_TELEMETRY="1",
    HF_UPDATE_DOWNLOAD_COUNTS="0",
    HF_HUB_DISABLE_PROGRESS_BARS="1",
    HF_HOME=str(TMP / "hf-home"),
    HF_TOKEN="bench-token",
    HF_HUB_OFFLINE="0",
    NO_PROXY="127.0.0.1,localhost",
)

import numpy as np  # noqa: E402

CACHE = REPO / "bench" / "out" / "remote_cache"
USER = "bench"


class ServerProcess:
    """tests/hubserver.py in its own process (as the Hub is: not competing with funes for the GIL)."""

    def __init__(self, root: Path):
        import subprocess

        self.log = root.parent / "hub-requests.log"
        cmd = [sys.executable, str(REPO / "tests" / "hubserver.py"), "--port", str(PORT), "--root", str(root)]
        cmd += ["--token", f"{USER}:bench-token", "--log", str(self.log)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().startswith("ready")

    @property
    def requests(self) -> list[tuple[str, str, int]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        return [(m, p, int(c)) for m, p, c in (ln.rsplit(" ", 2) for ln in lines)]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def machine(name: str) -> Path:
    """Switch this process to machine `name`: its FUNES_HOME and HF cache; no warm Retrievers."""
    from huggingface_hub import constants

    from funes.retrieval import retriever

    root = TMP / name
    (root / "home").mkdir(parents=True, exist_ok=True)
    os.environ["FUNES_HOME"] = str(root / "funes")
    os.environ["HOME"] = str(root / "home")
    cache = root / "hf" / "hub"
    os.environ["HF_HUB_CACHE"] = str(cache)
    constants.HF_HUB_CACHE = str(cache)
    retriever._RETRIEVERS.clear()
    retriever._LAST_REMOTE.clear()
    return cache


def base_rows(corpus: Path):
    import pyarrow.parquet as pq

    path = CACHE / "base_chunks.parquet"
    if path.exists():
        return pq.read_table(path)
    machine("base")
    from funes.commands import index
    from funes.memory import Memory

    index.index(index.Options(path=str(corpus), yes=True, no_embed=True))
    table = Memory.resolve(None).chunks.dataset().to_table()
    CACHE.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return table


def grow(table, size: int, dim: int, copy0: int = 0) -> None:
    """Append replicated rows (fresh ids and session ids) with random unit vectors up to `size` rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from funes import models
    from funes.memory import Memory, indexes

    mem = Memory.resolve(None)
    rng = np.random.default_rng(copy0)
    copy = copy0
    while mem.chunks.count() < size:
        take = min(table.num_rows, size - mem.chunks.count())
        t = table.slice(0, take)
        t = t.set_column(0, "id", pc.binary_join_element_wise(t["id"], pa.scalar(f"r{copy}"), ""))
        t = t.set_column(2, "session_id", pc.binary_join_element_wise(t["session_id"], pa.scalar(f"-r{copy}"), ""))
        start = mem.chunks.append(t)
        v = rng.standard_normal((take, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        mem.append_vectors(np.arange(start, start + take), t["id"].to_pylist(), v, models.embedder_id())
        copy += 1
    indexes.refresh(mem)


def publish_new(repo: str) -> tuple[str, int, int]:
    """Write the rows the remote lacks as shards (publish's mirror) and commit them; (head, rows, bytes)."""
    from funes import hub, models
    from funes.memory import Memory, mirror

    mem = Memory.resolve(None)
    found = hub.repo(repo) or hub.create_private(repo)
    man = mirror.parse_manifest(hub.read_file(repo, mirror.MANIFEST, found.sha))
    dim = mem.vectors.dataset().schema.field("vector").type.list_size
    man = man or mirror.empty_manifest(models.embedder_id(), dim)
    chunks = mem.chunks.dataset().to_table().slice(int(man["chunks"]))
    vt = mem.vectors.dataset().to_table(columns=["row", "vector"])
    order = np.argsort(vt["row"].to_numpy())
    vectors = vt["vector"].take(order[int(man["chunks"]) :])
    writer = mirror.ShardWriter(
        TMP / f"out-{time.time_ns()}", mirror.row_schema(dim, models.embedder_id()), mirror.next_seq(man)
    )
    writer.write(chunks.append_column("vector", vectors))
    shards = writer.close()
    man = mirror.extend_manifest(man, [s for s, _ in shards], time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    files = [(s.path, p) for s, p in shards] + [(mirror.MANIFEST, mirror.encode_manifest(man))]
    head = hub.commit(repo, files, "bench publish", found.sha)
    return head, sum(s.rows for s, _ in shards), sum(s.bytes for s, _ in shards)


def pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(np.asarray(xs) * 1000, p)), 2)


def queries(table, n: int = 24) -> list[str]:
    rng = np.random.default_rng(1)
    texts = table["text"].to_pylist()
    out = ["why did we change the approach", "how do we run the tests", "fix the flaky test"]
    while len(out) < n:
        words = texts[int(rng.integers(len(texts)))].split()
        if len(words) >= 12:
            i = int(rng.integers(len(words) - 10))
            out.append(" ".join(words[i : i + int(rng.integers(6, 11))]))
    return out


def tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def run_size(n: int, table, server, qs: list[str]) -> dict:
    from funes.commands.recall import recall
    from funes.paths import remote_dir

    repo = f"{USER}/mem{n}"
    machine(f"pub{n}")
    t0 = time.perf_counter()
    grow(table, n, 384)
    build_local_s = time.perf_counter() - t0
    _, _, published = publish_new(repo)

    reader_cache = machine(f"read{n}")
    mark = len(server.requests)
    t0 = time.perf_counter()
    first = recall(qs[0], memory=repo)
    cold_s = time.perf_counter() - t0
    cold_requests = len(server.requests) - mark
    from funes.retrieval import retriever

    snap = next(iter(retriever._RETRIEVERS.values())).memory.snapshot()
    cold_parts = {k: round(v, 2) for k, v in snap.seconds.items()}
    index_bytes = tree_bytes(remote_dir(repo))

    # warm: alternate rounds of local (publisher) and remote (reader) recalls of the same queries
    times: dict[str, list[float]] = {"local": [], "remote": []}
    homes = {"local": (f"pub{n}", None), "remote": (f"read{n}", repo)}
    warm_requests = 0
    for rnd in range(3):
        for side in ("local", "remote"):
            name, memory = homes[side]
            os.environ["FUNES_HOME"] = str(TMP / name / "funes")
            from huggingface_hub import constants

            constants.HF_HUB_CACHE = os.environ["HF_HUB_CACHE"] = str(TMP / name / "hf" / "hub")
            mark = len(server.requests)
            for q in qs:
                t0 = time.perf_counter()
                recall(q, memory=memory)
                if rnd:  # round 0 warms both
                    times[side].append(time.perf_counter() - t0)
            if side == "remote" and rnd:
                warm_requests += len(server.requests) - mark
    same = [h.id for h in recall(qs[0], memory=repo).hits] == [h.id for h in first.hits]

    # one new turn published: what the reader's next call costs
    machine(f"pub{n}")
    grow(table, n + 20, 384, copy0=1000)
    _, rows2, bytes2 = publish_new(repo)
    os.environ["FUNES_HOME"] = str(TMP / f"read{n}" / "funes")
    from huggingface_hub import constants

    constants.HF_HUB_CACHE = os.environ["HF_HUB_CACHE"] = str(reader_cache)
    mark = len(server.requests)
    t0 = time.perf_counter()
    recall(qs[1], memory=repo)
    new_shard_s = time.perf_counter() - t0
    new_gets = [p for m, p, _ in server.requests[mark:] if m == "GET" and "/resolve/" in p]
    t0 = time.perf_counter()
    recall(qs[1], memory=repo)
    after_s = time.perf_counter() - t0

    shard_bytes = sum(p.stat().st_size for p in (reader_cache / f"datasets--{USER}--mem{n}" / "blobs").iterdir())
    return {
        "chunks": n,
        "shards": len(snap.shards),
        "published_bytes": published,
        "build_local_memory_s": round(build_local_s, 2),
        "cold_first_recall_s": round(cold_s, 2),
        "cold_parts_s": cold_parts,
        "cold_requests": cold_requests,
        "warm_local_ms": {"p50": pct(times["local"], 50), "p95": pct(times["local"], 95), "n": len(times["local"])},
        "warm_remote_ms": {"p50": pct(times["remote"], 50), "p95": pct(times["remote"], 95), "n": len(times["remote"])},
        "warm_ratio_p50": round(pct(times["remote"], 50) / pct(times["local"], 50), 3),
        "warm_remote_requests_per_call": round(warm_requests / max(len(times["remote"]), 1), 2),
        "same_hits_after_warm": same,
        "new_shard": {
            "rows": rows2,
            "bytes": bytes2,
            "first_recall_s": round(new_shard_s, 3),
            "file_gets": new_gets,
            "next_recall_ms": round(after_s * 1000, 1),
        },
        "cache": {
            "hf_cache_shard_bytes": shard_bytes,
            "index_segment_bytes_before_new_shard": index_bytes,
            "index_segment_bytes": tree_bytes(remote_dir(repo)),
            "index_to_published_ratio": round(index_bytes / published, 3),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "remote_bench.json"))
    args = ap.parse_args()
    server = ServerProcess(TMP / "hub")
    from funes import models
    from funes.retrieval import retriever
    from recall_latency import CachedQueryVectors

    t0 = time.perf_counter()
    table = base_rows(Path(args.corpus))
    print(f"base rows: {table.num_rows} ({time.perf_counter() - t0:.1f}s)", flush=True)
    rng = np.random.default_rng(5)
    qv = rng.standard_normal((64, 384)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    retriever._MODELS.update(embedder=CachedQueryVectors(qv, models.embedder_id()), reranker=None)
    qs = queries(table)
    results = []
    for n in map(int, args.sizes.split(",")):
        t0 = time.perf_counter()
        res = run_size(n, table, server, qs)
        res["bench_wall_s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(res, indent=1), flush=True)
        results.append(res)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    server.stop()


if __name__ == "__main__":
    main()
