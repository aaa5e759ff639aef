"""The Ray Data plan of a `funes index --engine ray` run: prepare shards, then embed pending rows.

Each task returns one small row (fragment metadata + tallies); the caller commits. Tasks that
die are retried by Ray; their uncommitted fragment files are never referenced, so a retry cannot
duplicate rows. A unit's chunks are filtered against the chunk table as it was when the run
began (the version the caller pins), as `ChunkTable.append_new` filters on one machine.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from funes.errors import FunesError, SourceError, UsageError

# workers read these at call time (models, HF cache and endpoint, funes settings): a cluster
# started elsewhere has its own environment, so the driver's is sent with the tasks
_FORWARD = ("FUNES_", "HF_", "HUGGINGFACE_")
# a test hook: the first prepare task to see this path missing creates it and dies (os._exit)
# after writing its fragments, as a killed worker would
FAULT_ENV = "FUNES_RAY_FAULT_ONCE"


@dataclass
class Job:
    units: list[tuple[Any, Any]]  # (source, unit) pairs, in the order their rows are committed
    chunks_path: Path
    version: int | None  # the chunk table version the run started from (None: empty memory)
    tiers: tuple[str, ...]
    include_thinking: bool
    vectors_path: Path = field(default_factory=Path)
    embed_step: int = 1024


def require() -> None:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise UsageError(
            "--engine ray needs Ray Data, which is not installed",
            "pip install 'funes[ray]' (or leave --engine out to index on this machine)",
        ) from None


@contextmanager
def cluster(address: str | None, num_cpus: int | None, progress_bars: bool) -> Iterator[dict]:
    """A connection to the cluster at `address` (or a local one with `num_cpus`); reuses one the
    caller already started. Yields the cluster's resources."""
    import logging

    import ray
    from ray.data import DataContext

    # Ray Data's INFO lines (plans, log folders) are noise in an index run; its warnings stay
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.WARNING)
    owned = not ray.is_initialized()
    if owned:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
        try:
            ray.init(address=address, num_cpus=None if address else num_cpus, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise UsageError(
                f"cannot start or reach the Ray cluster{f' at {address}' if address else ''}: {e}"
            ) from None
    DataContext.get_current().enable_progress_bars = progress_bars
    try:
        yield ray.cluster_resources()
    finally:
        if owned:
            ray.shutdown()


def _runtime_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k.startswith(_FORWARD)}
    return {"env_vars": env}


def prepare(job: Job, progress) -> list[dict]:
    """Parse, chunk, redact and dedup every unit on the cluster; one result dict per unit, in unit order."""
    import ray.data

    ds = ray.data.from_items([{"unit": i} for i in range(len(job.units))], override_num_blocks=len(job.units))
    ds = ds.map_batches(
        _prepare,
        batch_size=1,
        batch_format="pyarrow",
        fn_kwargs={"job": job},
        runtime_env=_runtime_env(),
    )
    results = []
    with _task_errors():
        for row in ds.iter_rows():
            results.append({"unit": row["unit"], "fragments": list(row["fragments"]), **json.loads(row["stats"])})
            progress(f"prepared {len(results)}/{len(job.units)} shards on Ray", True)
    return sorted(results, key=lambda r: r["unit"])


@contextmanager
def _task_errors() -> Iterator[None]:
    """A task's own error, in one line: a FunesError as itself (the scanner fails closed), any
    other as what it was; never Ray's remote traceback. Nothing was committed yet."""
    from ray.exceptions import RayError, RayTaskError

    try:
        yield
    except RayTaskError as e:
        cause = _root(e)
        if isinstance(cause, FunesError):
            raise cause from None
        first = str(cause).strip().splitlines()
        raise FunesError(f"a Ray task failed: {type(cause).__name__}: {first[-1] if first else ''}") from None
    except RayError as e:
        raise FunesError(f"the Ray job failed: {type(e).__name__}", "nothing was committed; run it again") from None


def _prepare(batch: pa.Table, job: Job) -> pa.Table:
    from funes.ingest import run
    from funes.ingest.blocks import tally_of, unit_blocks
    from funes.ingest.redact import redact_texts
    from funes.memory import fragments

    out: dict[str, list] = {"unit": [], "fragments": [], "stats": []}
    for i in batch["unit"].to_pylist():
        src, unit = job.units[i]
        stats: dict[str, Any] = {"failed": None, "error": None, "skipped": {}, "tally": None, "redacted": {}}
        stats["chunks"] = {}
        frags: list[str] = []
        try:
            parsed = src.read(unit)
        except SourceError as e:
            stats["failed"] = str(e)
        else:
            stats["skipped"], stats["tally"] = dict(parsed.skipped), tally_of(parsed.frame)
            blocks = unit_blocks(parsed.frame, unit, job.tiers, job.include_thinking)
            try:
                chunks, removed = run.chunk_blocks(blocks, redact_texts)
            except FunesError as e:  # the scanner fails closed; Ray would keep only its text
                stats["error"] = [e.message, e.hint]
                out["unit"].append(i)
                out["fragments"].append([])
                out["stats"].append(json.dumps(stats))
                continue
            stats["redacted"] = dict(removed)
            new = _new_rows(chunks, fragments.known_ids(job.chunks_path, job.version, _sessions(chunks)))
            stats["chunks"] = _count(new["harness"].to_pylist())
            frags = fragments.write(job.chunks_path, new)
            _fault_once()
        out["unit"].append(i)
        out["fragments"].append(frags)
        out["stats"].append(json.dumps(stats))
    return pa.table(
        out, schema=pa.schema([("unit", pa.int64()), ("fragments", pa.list_(pa.string())), ("stats", pa.string())])
    )


def _sessions(chunks: pa.Table) -> list[str]:
    return chunks["session_id"].unique().to_pylist()


def _new_rows(chunks: pa.Table, known: set[str]) -> pa.Table:
    keep, fresh = [], set()
    for i, cid in enumerate(chunks["id"].to_pylist()):
        if cid not in known and cid not in fresh:
            keep.append(i)
            fresh.add(cid)
    return chunks.take(pa.array(keep, pa.int64()))


def _count(values: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return counts


def _fault_once() -> None:
    marker = os.environ.get(FAULT_ENV, "").strip()
    if marker and not Path(marker).exists():
        Path(marker).write_text("killed\n", encoding="utf-8")
        os._exit(1)


def steps(rows, step: int) -> list[dict]:
    """Pending chunk rows in steps of `step`: a contiguous run (the usual case: rows appended by
    this run) travels as its bounds, so the driver never builds a list per row."""
    import numpy as np

    out = []
    for lo in range(0, len(rows), step):
        part = np.asarray(rows[lo : lo + step], dtype=np.int64)
        if int(part[-1]) - int(part[0]) + 1 == len(part) and bool((np.diff(part) == 1).all()):
            out.append({"lo": int(part[0]), "hi": int(part[-1]) + 1, "rows": b""})
        else:
            out.append({"lo": 0, "hi": 0, "rows": part.tobytes()})
    return out


def step_rows(lo: int, hi: int, packed: bytes) -> list[int]:
    import numpy as np

    return list(range(lo, hi)) if not packed else np.frombuffer(packed, dtype=np.int64).tolist()


def _root(e: BaseException) -> BaseException:
    """The first FunesError in the chain Ray wraps a task's error in (RayTaskError, then Ray
    Data's UserCodeException), else the innermost error."""
    seen: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and cur not in seen:
        if isinstance(cur, FunesError):
            return cur
        seen.append(cur)
        inner = getattr(cur, "cause", None)
        cur = inner if isinstance(inner, BaseException) else (cur.__cause__ or cur.__context__)
    return seen[-1]


def embed(job: Job, rows, version: int, resources: dict, progress) -> tuple[list[str], int, str]:
    """Embed these chunk rows (an int array, of the pinned version) on an actor pool; returns
    (fragments, dim, model id)."""
    import ray.data

    todo = steps(rows, job.embed_step)
    if not todo:
        return [], 0, ""
    gpus = int(resources.get("GPU", 0))
    # one actor per GPU when there are GPUs; else one per CPU (the prepare tasks are done by now)
    actors = gpus or max(1, int(resources.get("CPU", 1)))
    env = _runtime_env()
    if not gpus:
        env["env_vars"].setdefault("FUNES_THREADS", "1")  # one core per actor: actors, not threads, scale out
    ds = ray.data.from_items(todo, override_num_blocks=len(todo))
    ds = ds.map_batches(
        _Embedder,
        batch_size=1,
        batch_format="pyarrow",
        fn_constructor_kwargs={"chunks_path": job.chunks_path, "vectors_path": job.vectors_path, "version": version},
        compute=ray.data.ActorPoolStrategy(size=min(actors, len(todo))),
        num_gpus=1 if gpus else 0,
        runtime_env=env,
    )
    frags: list[str] = []
    dim, model_id, done = 0, "", 0
    with _task_errors():
        for row in ds.iter_rows():
            frags.extend(row["fragments"])
            dim, model_id, done = int(row["dim"]), row["model_id"], done + int(row["rows"])
            progress(f"embedded {done}/{len(rows)} chunks on Ray", True)
    return frags, dim, model_id


class _Embedder:
    """A Ray actor: the pinned embedder loaded once, then (chunk rows) -> a vector fragment per batch."""

    def __init__(self, chunks_path: Path, vectors_path: Path, version: int):
        from funes import models

        self.chunks_path, self.vectors_path, self.version = chunks_path, vectors_path, version
        self.embedder = models.load_embedder()

    def __call__(self, batch: pa.Table) -> pa.Table:
        import numpy as np

        from funes.ingest import run
        from funes.memory import fragments
        from funes.memory.tables import ChunkTable, vector_rows

        out: dict[str, list] = {"fragments": [], "rows": [], "dim": [], "model_id": []}
        chunks = ChunkTable.pinned(self.chunks_path, self.version)  # one open for the batch's steps
        for lo, hi, packed in zip(batch["lo"].to_pylist(), batch["hi"].to_pylist(), batch["rows"].to_pylist()):
            rows = step_rows(lo, hi, packed)
            ids, texts = chunks.vector_inputs(rows)
            vectors = run.embed_rows(texts, self.embedder)
            rows_np = np.asarray(rows, dtype=np.int64)
            frags = fragments.write(self.vectors_path, vector_rows(rows_np, ids, vectors, self.embedder.model_id))
            out["fragments"].append(frags)
            out["rows"].append(len(rows))
            out["dim"].append(self.embedder.dim)
            out["model_id"].append(self.embedder.model_id)
        return pa.table(out)
