"""The memory's search indexes (faiss + bm25s + facets) under memory/index/: incremental refresh and loading.

Layout (one manifest names everything a reader needs; files are written once, then the manifest is
atomically replaced, then files no manifest names are deleted — a reader holding the previous
manifest keeps its memory-mapped files alive, a reader that loses the race reloads):

    index/manifest.json         format, model, dim, covered rows + probes of both tables, segments
    index/facets.<gen>/         per-row facet arrays (memory/facets.py), appended in place
    index/bm25.<n>/             BM25 segment over chunk rows [start, end) (memory/bm25.py); a row's
                                document is its context line + its text (memory/contexts.py)
    index/faiss.<n>.index       faiss segment over vectors.lance rows [start, end) (memory/vecindex.py)

Incremental, LSM-style: `refresh` reads only the rows appended since the manifest (text, facets and
vectors), writes them as one new small segment per side, then merges the trailing run of segments
whose total has caught up with its predecessor (a binary counter: every row is rewritten O(log N)
times in all, a refresh costs O(new rows) amortised, and there are at most ~log2(N) segments).
BM25 segments keep raw term frequencies and are scored with the whole memory's statistics, so the
segmentation never changes a BM25 score; faiss segments are exact flat indexes below
`vecindex.IVF_MIN` vectors and IVF above it.

Rewrites: the manifest records the id at a few probe positions of each table; if a table shrank or
a probe no longer matches (scrub, a deleted and rebuilt memory), that side is rebuilt from scratch.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from funes import paths
from funes.errors import FunesError
from funes.memory import bm25, contexts, facets, lock, tokenize, vecindex
from funes.memory.atomic import read_json, write_json
from funes.memory.bm25 import Synonyms

FORMAT = 1
MANIFEST = "manifest.json"


class IndexDamaged(FunesError):
    """Index files under memory/index/ do not load (derived data: a refresh rebuilds them)."""


READ_BATCH = 20_000  # rows read + tokenised per step (bounds memory on a first build)
MAX_SEGMENTS = 24
TEXT_COLUMNS = ["text", "session_id", "seq", "block_type", "harness", "ts"]
# what a BM25 document is; a manifest built for another one has its text side rebuilt
DOCUMENTS = "context-line+text/1"  # memory/contexts.py documents()
DOC_COLUMNS = list(dict.fromkeys([*TEXT_COLUMNS, *contexts.COLUMNS]))
# the piece cache the refreshes inside `shared_pieces` use (none: each refresh has its own)
_SHARED: ContextVar[tokenize.Numbering | None] = ContextVar("funes_shared_pieces", default=None)


# ---- manifest ------------------------------------------------------------------------------


def index_dir(memory) -> Path:
    return paths.index_dir(memory.path)


def read_manifest(folder: Path) -> dict | None:
    """The index manifest, or None when it is missing, garbage or not shaped as this format
    writes it (a reader then treats the index as not built, and the next writer rebuilds it)."""
    man = read_json(folder / MANIFEST)
    return man if isinstance(man, dict) and man.get("format") == FORMAT and _well_formed(man) else None


def _well_formed(man: dict) -> bool:
    try:
        for side in ("chunks", "vectors"):
            sec = man[side]
            if not isinstance(sec, dict) or int(sec["rows"]) < 0 or not isinstance(sec.get("probes", {}), dict):
                return False
        int(man["generation"]), int(man["counter"])
        if not isinstance(man["facets"], dict):
            return False
        for seg in man["bm25"]:
            str(seg["dir"]), int(seg["start"]), int(seg["end"])
        for seg in man["faiss"]:
            str(seg["file"]), int(seg["start"]), int(seg["end"]), str(seg["kind"])
    except (KeyError, TypeError, ValueError):
        return False
    return True


def damage(memory, man: dict | None = None) -> str | None:
    """Why the index files the manifest names cannot be used (missing, truncated, unreadable),
    or None. Everything is memory-mapped, so this is as cheap as a reader's load."""
    folder = index_dir(memory)
    man = man if man is not None else read_manifest(folder)
    if man is None:
        return None
    try:
        ix = _load(folder, man, ())
        fdir = folder / f"facets.{man['generation']}"
        if ix.rows and ix.facets.n_sessions and not (fdir / facets.SESSIONS).is_file():
            raise FileNotFoundError(f"{fdir.name}/{facets.SESSIONS}")
        bm = sum(s["end"] - s["start"] for s in man["bm25"])
        if bm != ix.rows:
            raise ValueError(f"BM25 segments cover {bm} of {ix.rows} rows")
    except Exception as e:  # any failure to map a derived file means the same thing: rebuild it
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else 'unreadable'}"
    return None


def _empty_manifest(generation: int, counter: int) -> dict:
    return {
        "format": FORMAT,
        "documents": DOCUMENTS,
        "generation": generation,
        "counter": counter,
        "chunks": {"rows": 0, "version": None, "probes": {}},
        "vectors": {"rows": 0, "version": None, "probes": {}, "model": None, "dim": None},
        "facets": {},
        "bm25": [],
        "faiss": [],
    }


def freshness(memory) -> dict:
    """Rows the indexes cover vs rows stored (cheap: the manifest and two row counts)."""
    found = read_manifest(index_dir(memory))
    man = found or _empty_manifest(0, 0)
    return {
        "built": found is not None,
        "chunks": memory.chunks.count(),
        "indexed": int(man["chunks"]["rows"]),
        "vectors": memory.vectors.count(),
        "vectors_indexed": int(man["vectors"]["rows"]),
        "bm25_segments": len(man["bm25"]),
        "faiss_segments": len(man["faiss"]),
        "faiss_kinds": [s["kind"] for s in man["faiss"]],
        "refreshed_at": man.get("refreshed_at"),
    }


# ---- refresh -------------------------------------------------------------------------------


def refresh(memory, progress=None) -> dict:
    """Bring the indexes up to the tables' current rows; the caller holds the writer lock.

    Cheap when nothing changed (two row counts, the manifest, a few probes); proportional to the
    new rows otherwise (amortised: merges rewrite each row O(log N) times over its life). Damage
    is repaired on the way: index files that no longer load are rebuilt, and vectors that point
    at other chunks' rows are re-mapped by id first (`stats["vectors_fixed"]`).
    """
    started = time.monotonic()
    say = progress or (lambda msg, transient=False: None)
    folder = index_dir(memory)
    memory.chunks.reload()  # index what is committed now, whoever committed it
    memory.vectors.reload()
    stats: dict[str, Any] = {"added_rows": 0, "added_vectors": 0, "rebuilt": [], "merged": 0}
    fixed = memory.repair_vectors()
    if fixed:
        stats["vectors_fixed"] = fixed
    chunks = memory.chunks.dataset()
    old = read_manifest(folder)
    if old is not None and (why := damage(memory, old)):
        stats["damaged"] = why
        old = None
    if old is not None and fixed:
        old["faiss"], old["vectors"] = [], {"rows": 0, "version": None, "probes": {}, "model": None, "dim": None}
    if chunks is None:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        return {**stats, "rows": 0, "vector_rows": 0, "seconds": time.monotonic() - started}
    vectors = memory.vectors.dataset()
    n = chunks.count_rows()
    m = vectors.count_rows() if vectors is not None else 0
    stamp = memory.manifest()
    model, dim = stamp.get("embedding_model"), stamp.get("dim")
    man = json.loads(json.dumps(old)) if old else None
    if man is None or not _same_lineage(man["chunks"], chunks, n) or man.get("documents") != DOCUMENTS:
        stats["rebuilt"].append("text")
        gen, counter = _next_generation(folder, old)
        man = _empty_manifest(gen, counter)
    if not _vectors_current(man["vectors"], vectors, m, stamp):
        stats["rebuilt"].append("vectors")
        man["faiss"], man["vectors"] = [], {"rows": 0, "version": None, "probes": {}, "model": None, "dim": None}
    if old and man == old and n == man["chunks"]["rows"] and m == man["vectors"]["rows"]:
        return {**stats, **_summary(man), "seconds": time.monotonic() - started}
    folder.mkdir(parents=True, exist_ok=True)
    if n > man["chunks"]["rows"]:
        stats["added_rows"] = n - man["chunks"]["rows"]
        stats["merged"] += _index_text(chunks, man, folder, n, say)
    man["chunks"].update(version=chunks.version, probes=_probes(chunks, man["chunks"]["rows"]))
    if m > man["vectors"]["rows"]:
        stats["added_vectors"] = m - man["vectors"]["rows"]
        stats["merged"] += _index_vectors(vectors, man, folder, m, say)
        man["vectors"].update(model=model, dim=dim)
    if vectors is not None:
        man["vectors"].update(version=vectors.version, probes=_probes(vectors, man["vectors"]["rows"]))
    man["vectors"]["replaced"] = int(stamp.get("vectors_replaced") or 0)
    man["refreshed_at"] = time.time()
    write_json(folder / MANIFEST, man)
    _sweep(folder, man)
    return {**stats, **_summary(man), "seconds": time.monotonic() - started}


def _vectors_current(vsec: dict, vectors, m: int, stamp: dict) -> bool:
    """The faiss side still holds the vectors the table holds: same rows, model and dimension, and
    none replaced since (commands/reembed.py replaces by id, which can leave every probe as it was)."""
    if not vsec["rows"]:
        return True
    return (
        _same_lineage(vsec, vectors, m)
        and vsec["model"] == stamp.get("embedding_model")
        and vsec["dim"] == stamp.get("dim")
        and vsec.get("replaced", 0) == int(stamp.get("vectors_replaced") or 0)
    )


def _next_generation(folder: Path, old: dict | None) -> tuple[int, int]:
    """A generation and name counter no file on disk uses yet (the manifest may be gone)."""
    gen, counter = (int(old["generation"]) + 1, int(old["counter"])) if old else (1, 0)
    if folder.is_dir():
        for entry in folder.iterdir():
            kind, _, rest = entry.name.partition(".")
            num = rest.split(".")[0]
            if num.isdigit():
                if kind == "facets":
                    gen = max(gen, int(num) + 1)
                elif kind in ("bm25", "faiss"):
                    counter = max(counter, int(num))
    return gen, counter


def _summary(man: dict) -> dict:
    return {
        "rows": man["chunks"]["rows"],
        "vector_rows": man["vectors"]["rows"],
        "bm25_segments": len(man["bm25"]),
        "faiss_segments": len(man["faiss"]),
        "faiss_kinds": [s["kind"] for s in man["faiss"]],
    }


def _probe_positions(rows: int) -> list[int]:
    return sorted({0, rows // 3, (2 * rows) // 3, rows - 1}) if rows else []


def _probes(ds, rows: int) -> dict[str, str]:
    pos = _probe_positions(rows)
    if not pos:
        return {}
    ids = ds.take(pos, columns=["id"])["id"].to_pylist()
    return {str(p): i for p, i in zip(pos, ids)}


def _same_lineage(section: dict, ds, count: int) -> bool:
    """The table still starts with the rows the indexes were built from (no rewrite, no shrink)."""
    rows = int(section.get("rows", 0))
    if rows == 0:
        return True
    if ds is None or count < rows:
        return False
    # no shortcut on the version number: a table deleted and rebuilt starts again at version 1
    probes = section.get("probes") or {}
    pos = [int(p) for p in probes]
    if not pos:
        return False
    ids = ds.take(pos, columns=["id"])["id"].to_pylist()
    return all(probes[str(p)] == i for p, i in zip(pos, ids))


def _next_name(man: dict, kind: str, suffix: str = "") -> str:
    man["counter"] += 1
    return f"{kind}.{man['counter']}{suffix}"


@contextmanager
def shared_pieces() -> Iterator[None]:
    """The refreshes inside share one piece cache, dropped on the way out. An index run refreshes
    after its first flush and at its end, and the two meet mostly the same pieces: each refresh
    with its own tokenised ~196k new pieces in a 9,000-session day-zero pass, sharing one ~94k
    (bench/README.md, "Issue 13: the parent's own CPU"). The segments are the same either way:
    each batch's ids are renumbered to its own first-seen order (`Numbering.local`)."""
    token = _SHARED.set(tokenize.Numbering())
    try:
        yield
    finally:
        _SHARED.reset(token)


def _index_text(chunks, man: dict, folder: Path, n: int, say) -> int:
    fdir = folder / f"facets.{man['generation']}"
    merged = 0
    # this refresh's piece cache, released when it returns, unless the caller shares one (`shared_pieces`)
    shared = _SHARED.get()
    numbering = shared if shared is not None else tokenize.Numbering()
    for lo in range(man["chunks"]["rows"], n, READ_BATCH):
        hi = min(lo + READ_BATCH, n)
        say(f"indexing text rows {lo}-{hi} of {n}", True)
        table = _read(chunks, DOC_COLUMNS, lo, hi)
        man["facets"] = facets.append(fdir, lo, man["facets"], table)
        # a document is its context line + its text (contexts.stored_documents), tokenised apart
        seg = bm25.build_documents(contexts.stored_lines(chunks, table), table["text"], lo, numbering)
        name = _next_name(man, "bm25")
        bm25.save(seg, folder / name)
        man["bm25"].append({"dir": name, "start": lo, "end": hi, "tokens": int(np.sum(seg.doclen, dtype=np.float64))})
        man["chunks"]["rows"] = hi
        merged += _merge_bm25(man, folder)
    return merged


def _read(ds, columns: list[str], lo: int, hi: int):
    have = set(ds.schema.names)
    table = ds.to_table(columns=[c for c in columns if c in have], offset=lo, limit=hi - lo)
    return contexts.padded(table, columns)  # an old table without the facet: empty values


def merge_start(sizes: list[int]) -> int:
    """Start of the trailing run of segments to merge into one (len(sizes) - 1 = nothing to merge)."""
    j, tail = len(sizes) - 1, sizes[-1] if sizes else 0
    while j > 0 and (sizes[j - 1] <= tail or j + 1 > MAX_SEGMENTS):
        j -= 1
        tail += sizes[j]
    return j


def _tail_run(segs: list[dict]) -> int | None:
    """Where the trailing run of segments due for a merge starts (None: nothing to merge)."""
    j = merge_start([s["end"] - s["start"] for s in segs])
    return j if j < len(segs) - 1 else None


def _merge_bm25(man: dict, folder: Path) -> int:
    segs = man["bm25"]
    j = _tail_run(segs)
    if j is None:
        return 0
    run = segs[j:]
    seg = bm25.merge([bm25.load(folder / s["dir"], s["start"]) for s in run])
    name = _next_name(man, "bm25")
    bm25.save(seg, folder / name)
    man["bm25"] = segs[:j] + [
        {"dir": name, "start": run[0]["start"], "end": run[-1]["end"], "tokens": sum(s["tokens"] for s in run)}
    ]
    return 1


def _index_vectors(vectors, man: dict, folder: Path, m: int, say) -> int:
    lo = man["vectors"]["rows"]
    say(f"indexing vectors {lo}-{m}", True)
    _add_faiss(man, folder, _read_vectors(vectors, lo, m), lo, m)
    man["vectors"]["rows"] = m
    segs = man["faiss"]
    j = _tail_run(segs)
    if j is None:
        return 0
    run = segs[j:]
    say(f"merging {len(run)} vector segments ({run[-1]['end'] - run[0]['start']} vectors)", True)
    man["faiss"] = segs[:j]
    _add_faiss(man, folder, _read_vectors(vectors, run[0]["start"], run[-1]["end"]), run[0]["start"], run[-1]["end"])
    return 1


def _add_faiss(man: dict, folder: Path, data: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> None:
    rows, vecs = data
    index = vecindex.build(vecs, rows)
    name = _next_name(man, "faiss", ".index")
    vecindex.save(index, folder / name)
    entry = {"file": name, "start": lo, "end": hi, "kind": vecindex.kind(index)}
    if entry["kind"] == "ivf":
        entry.update(nlist=int(index.nlist), nprobe=int(index.nprobe))
    man["faiss"].append(entry)


def _read_vectors(vectors, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    table = vectors.to_table(columns=["row", "vector"], offset=lo, limit=hi - lo)
    col = table["vector"].combine_chunks()
    dim = col.type.list_size
    flat = col.flatten().to_numpy(zero_copy_only=False)
    return table["row"].to_numpy().astype(np.int64), flat.reshape(-1, dim).astype(np.float32, copy=False)


def _sweep(folder: Path, man: dict) -> None:
    """Delete segment files and facet generations the manifest no longer names."""
    keep = (
        {MANIFEST, f"facets.{man['generation']}"} | {s["dir"] for s in man["bm25"]} | {s["file"] for s in man["faiss"]}
    )
    for entry in folder.iterdir():
        if entry.name in keep or entry.name.endswith(".tmp"):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def refresh_if_stale(memory, progress=None, wait: float = 0.0) -> bool:
    """Index rows stored but not indexed (a crashed or older indexer left them), unless a writer is busy.

    A recall calls this before reading: it is the one read path that writes, so it is a visible
    decision of the command, not a side effect of the retriever. Cheap when nothing changed since
    the last call in this process (three stats); otherwise two row counts against the manifest.
    A busy lock is retried for up to `wait` seconds. Returns whether it refreshed.
    """
    key = str(memory.path)
    stamp = _stamps(memory)
    if _CHECKED.get(key) == stamp:
        return False
    if not _stale(memory):
        _CHECKED[key] = stamp
        return False
    deadline = time.monotonic() + wait
    while True:
        try:
            with lock.try_writer_lock(paths.lock_file_for(memory.path)) as held:
                if held:
                    refresh(memory, progress)
                    break
        except OSError:  # a read-only memory: nobody can repair it here
            return False
        if time.monotonic() >= deadline:  # the writer that holds it refreshes when it is done
            return False
        time.sleep(0.2)
    _CHECKED.pop(key, None)
    return True


def unresolved(memory) -> str | None:
    """After `refresh_if_stale`: what still keeps the indexes from answering for the tables (the
    lock was busy, or the memory is read-only), or None; free when the last check was clean."""
    if _CHECKED.get(str(memory.path)) == _stamps(memory):
        return None
    why = problem(memory)
    if why is None:
        _CHECKED[str(memory.path)] = _stamps(memory)
    return why


# a warm server asks before every recall: remember what was checked, per memory, in this process
_CHECKED: dict[str, tuple] = {}


def _stamps(memory) -> tuple:
    return (
        table_stamp(paths.chunks_table(memory.path)),
        table_stamp(paths.vectors_table(memory.path)),
        manifest_stamp(index_dir(memory)),
        files_stamp(index_dir(memory)),
    )


def files_stamp(folder: Path) -> tuple:
    """Size and mtime of every index file (a few dozen stats): a deleted or truncated segment
    changes it, so a clean check is never trusted past damage."""
    out: list[tuple] = []
    try:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                out.extend((f"{entry.name}/{f.name}", *_size_mtime(f)) for f in os.scandir(entry.path))
            else:
                out.append((entry.name, *_size_mtime(entry)))
    except OSError:
        return ()
    return tuple(sorted(out))


def _size_mtime(entry) -> tuple:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return (None, None)
    return (st.st_size, st.st_mtime_ns)


def _stale(memory) -> bool:
    return problem(memory) is not None


def problem(memory, lag: bool = True) -> str | None:
    """Why the indexes do not answer for the tables as they are now, or None: not built, rows
    stored but not indexed (only with `lag`: that is the normal state between a commit and the
    refresh), more rows indexed than stored (a table rolled back), damaged files, vectors that
    point at other chunks."""
    memory.chunks.reload()
    memory.vectors.reload()
    rows = memory.chunks.count()
    if not rows:
        return None
    man = read_manifest(index_dir(memory))
    if man is None:
        return "not built yet"
    indexed, vrows, vectors = int(man["chunks"]["rows"]), int(man["vectors"]["rows"]), memory.vectors.count()
    if indexed <= rows and not _same_lineage(man["chunks"], memory.chunks.dataset(), rows):
        return "built from other rows (the chunk table was rebuilt or rewritten)"
    if indexed > rows or vrows > vectors or (lag and indexed < rows):
        return f"covers {indexed} of {rows} chunks"
    if vrows > vectors or (lag and vrows < vectors):
        return f"covers {vrows} of {vectors} vectors"
    if why := damage(memory, man):
        return f"damaged ({why})"
    if bad := memory.vectors.check(memory.chunks):
        return f"{bad} vectors point at other chunks"
    return None


# ---- reading -------------------------------------------------------------------------------


@dataclass
class Indexes:
    """A read-only snapshot of the indexes (memory-mapped), as one manifest describes them."""

    folder: Path
    manifest: dict
    facets: facets.Facets
    bm25: list[bm25.Segment] = field(default_factory=list)
    faiss: list = field(default_factory=list)
    stamp: tuple = ()
    offsets: list[int] | None = None  # first row of each faiss segment (remote shards number rows from 0)

    @property
    def rows(self) -> int:
        return int(self.manifest["chunks"]["rows"])

    @property
    def vector_rows(self) -> int:
        return int(self.manifest["vectors"]["rows"])

    @property
    def model(self) -> str | None:
        return self.manifest["vectors"].get("model")

    def lexical(
        self,
        terms: list[str],
        limit: int,
        allowed: np.ndarray | None = None,
        synonyms: Sequence[Synonyms] = (),
    ):
        return bm25.search(self.bm25, terms, limit, allowed, synonyms)

    def vector(self, query: np.ndarray, limit: int, allowed: np.ndarray | None = None):
        rows, scores = vecindex.search(self.faiss, query, limit, allowed, self.offsets)
        ok = rows < self.rows  # a vector of a row the text side does not cover yet
        return rows[ok], scores[ok]


def table_stamp(table: Path) -> tuple:
    """Changes whenever a Lance commit lands: the latest-version hint, plus _versions/'s mtime."""
    versions = table / "_versions"
    try:
        st = versions.stat()
    except OSError:
        return ()
    try:
        hint = (versions / "latest_version_hint.json").read_bytes()
    except OSError:
        hint = b""
    return (hint, st.st_mtime_ns, st.st_ino)


def manifest_stamp(folder: Path) -> tuple:
    try:
        st = (folder / MANIFEST).stat()
    except OSError:
        return ()
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def load(memory) -> Indexes | None:
    """The current indexes, or None when none were built yet; raises IndexDamaged when the files
    the manifest names do not load (a refresh rebuilds them)."""
    folder = index_dir(memory)
    for attempt in range(3):
        stamp = manifest_stamp(folder)
        man = read_manifest(folder)
        if man is None:
            return None
        try:
            return _load(folder, man, stamp)
        except Exception as e:  # faiss, numpy and mmap each fail their own way on a damaged file
            if attempt == 2:  # not a refresh sweeping files under us: the files are damaged
                raise IndexDamaged(
                    f"search index at {folder} is damaged ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else '?'})",
                    f"run `funes index` to rebuild it (or delete {folder}: it is derived data)",
                ) from None
            time.sleep(0.05)
    return None


def _load(folder: Path, man: dict, stamp: tuple) -> Indexes:
    fac = facets.load(folder / f"facets.{man['generation']}", int(man["chunks"]["rows"]), man["facets"])
    segs = [bm25.load(folder / s["dir"], s["start"]) for s in man["bm25"]]
    vecs = [vecindex.load(folder / s["file"], s["kind"], s.get("nprobe")) for s in man["faiss"]]
    return Indexes(folder, man, fac, segs, vecs, stamp)
