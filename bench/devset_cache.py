"""A text -> vector cache on disk in front of funes' real embedder, so the dev-set corpus is embedded once.

The cache is keyed by sha1 of the text and stamped with the model id and backend; a vector is a pure
function of (model, text) for the fp32 backends, so a cached vector is the one the embedder would
return. Index runs then cost the parse, chunk and store steps plus only the texts never seen before
(a chunking or context change embeds just the texts it changed).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


class DiskMemoEmbedder:
    """The real embedder behind a persistent memo; quacks like funes.models.embedder.Embedder."""

    def __init__(self, real, path: Path, save_every_s: float = 0.0):
        self._real, self.cache_path = real, path  # not `path`: that is the model folder (Embedder.path)
        self.save_every_s, self._saved_at = save_every_s, time.monotonic()  # 0 = save only when asked
        self.stamp = f"{real.model_id}|{getattr(real, 'backend', '?')}"
        self._memo: dict[bytes, np.ndarray] = {}
        self.loaded = self.embedded = self.reused = 0
        self.seconds = 0.0
        self._load()

    def __getattr__(self, name):
        return getattr(self._real, name)

    def _load(self) -> None:
        if not self.cache_path.is_file():
            return
        with np.load(self.cache_path, allow_pickle=False) as z:
            if str(z["stamp"]) != self.stamp:
                return  # another model or backend: start afresh
            keys, vecs = z["keys"], z["vectors"]
        self._memo = {k.tobytes(): v for k, v in zip(keys, vecs)}
        self.loaded = len(self._memo)

    def save(self) -> None:
        if self.embedded == 0 and self.cache_path.is_file():
            return
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        # raw digests as (n, 20) uint8: a bytes dtype ("S20") would drop trailing NUL bytes of a digest
        keys = np.frombuffer(b"".join(self._memo), dtype=np.uint8).reshape(-1, 20)
        vecs = np.stack(list(self._memo.values())).astype(np.float32) if self._memo else np.zeros((0, self._real.dim))
        tmp = self.cache_path.with_suffix(".tmp.npz")
        np.savez(tmp, stamp=np.array(self.stamp), keys=keys, vectors=vecs)
        tmp.replace(self.cache_path)

    def seed(self, texts: list[str], vectors: np.ndarray) -> None:
        """Adopt vectors the same model already made (e.g. an embedded memory's rows)."""
        for t, v in zip(texts, vectors):
            self._memo.setdefault(_key(t), np.asarray(v, dtype=np.float32))
        self.embedded += len(texts)  # so save() writes them

    def encode(self, texts, batch_size: int = 64) -> np.ndarray:
        texts = list(texts)
        keys = [_key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._memo))
        self.reused += len(keys) - len(missing)
        if missing:
            first = dict(zip(keys, texts))
            t0 = time.perf_counter()
            vecs = self._real.encode([first[k] for k in missing], batch_size=batch_size)
            self.seconds += time.perf_counter() - t0
            self.embedded += len(missing)
            self._memo.update(zip(missing, np.asarray(vecs, dtype=np.float32)))
            if self.save_every_s and time.monotonic() - self._saved_at > self.save_every_s:
                self.save()  # a long fill killed at a deadline keeps what it embedded
                self._saved_at = time.monotonic()
        if not texts:
            return self._real.encode([], batch_size=batch_size)
        return np.stack([self._memo[k] for k in keys]).astype(np.float32, copy=False)

    def encode_query(self, text: str) -> np.ndarray:
        return self._real.encode_query(text)  # queries are cheap and not worth a disk entry

    def describe(self) -> dict:
        return {
            "model_id": self._real.model_id,
            "backend": getattr(self._real, "backend", "?"),
            "cache": str(self.cache_path),
            "cached_before": self.loaded,
            "embedded_now": self.embedded,
            "reused": self.reused,
            "embed_s": round(self.seconds, 1),
        }


def install(path: Path, save_every_s: float = 0.0) -> DiskMemoEmbedder:
    """Route funes.models.load_embedder (used by index and recall) through one disk memo in this process."""
    from funes import models

    orig = models.load_embedder
    real = orig()
    memo = DiskMemoEmbedder(real, path, save_every_s)
    models.load_embedder = lambda model_id=None: memo if model_id in (None, real.model_id) else orig(model_id)
    return memo


def seed_from_memory(memo: DiskMemoEmbedder, memory_dir: Path) -> int:
    """Copy an embedded memory's (chunk text, vector) pairs into the cache; returns how many."""
    import lance

    vds = lance.dataset(str(memory_dir / "vectors.lance"))
    made_by = (vds.schema.metadata or {}).get(b"embedding_model", b"").decode()
    if made_by != memo.model_id:
        raise ValueError(f"{memory_dir} was embedded with {made_by or 'an unknown model'}, not {memo.model_id}")
    chunks = lance.dataset(str(memory_dir / "chunks.lance")).to_table(columns=["text"])["text"].to_pylist()
    vt = vds.to_table(columns=["row", "vector"])
    rows = vt["row"].to_numpy()
    dim = vt.schema.field("vector").type.list_size
    vecs = vt["vector"].combine_chunks().flatten().to_numpy().reshape(-1, dim)
    texts = [chunks[r] for r in rows]
    probe = np.random.default_rng(0).choice(len(texts), size=min(8, len(texts)), replace=False)
    fresh = memo._real.encode([texts[i] for i in probe])
    cos = np.sum(fresh * vecs[probe], axis=1)
    if cos.min() < 0.999:  # rows and vectors out of step, or another embedding of the text
        raise ValueError(f"{memory_dir}: stored vectors disagree with the embedder (min cosine {cos.min():.4f})")
    memo.seed(texts, vecs)
    return len(rows)
