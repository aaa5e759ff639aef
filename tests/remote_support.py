"""The local test Hub pointed at by the real HF clients, and a publisher for the remote-memory tests.

`publish` writes what `funes publish` writes (h8's layout: memory/mirror.py shards + funes.json,
one atomic commit through funes.hub), from the rows a local memory holds beyond what the remote
already has, in row order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hubserver import HubServer

TOKEN = "tok-alice"


@dataclass
class Hub:
    server: HubServer
    url: str
    monkeypatch: pytest.MonkeyPatch
    tmp: Path

    @property
    def requests(self):
        return self.server.requests

    def new_cache(self, name: str) -> Path:
        """Point the clients at a fresh, empty HF cache (another machine's)."""
        from huggingface_hub import constants

        cache = self.tmp / name / "hub"
        self.monkeypatch.setenv("HF_HOME", str(cache.parent))
        self.monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        self.monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
        return cache

    def offline(self, on: bool = True) -> None:
        from huggingface_hub import constants

        self.monkeypatch.setenv("HF_HUB_OFFLINE", "1" if on else "0")
        self.monkeypatch.setattr(constants, "HF_HUB_OFFLINE", on)

    def token(self, value: str | None) -> None:
        if value is None:
            self.monkeypatch.delenv("HF_TOKEN", raising=False)
        else:
            self.monkeypatch.setenv("HF_TOKEN", value)

    def env(self) -> dict[str, str]:
        """What a `funes` subprocess needs to talk to this Hub with this cache."""
        import os

        keys = ("HF_HOME", "HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE")
        out = {k: os.environ[k] for k in keys if k in os.environ}
        out.update(
            HF_ENDPOINT=self.url,
            HF_HUB_DISABLE_XET="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_UPDATE_DOWNLOAD_COUNTS="0",
            NO_PROXY="127.0.0.1,localhost",
        )
        return out

    def resolve_gets(self, since: int = 0, suffix: str = ".parquet") -> list[str]:
        return [p for m, p, _ in self.requests[since:] if m == "GET" and "/resolve/" in p and p.endswith(suffix)]


def serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A running test Hub with user alice (token `tok-alice`), clients patched to reach it, online
    (a fixture body: `yield from serve(...)`)."""
    from huggingface_hub import constants, hf_api

    server = HubServer(tmp_path / "hubroot", {TOKEN: ("alice", True)})
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", server.url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(hf_api.api, "endpoint", server.url)
    hub = Hub(server, server.url, monkeypatch, tmp_path)
    hub.offline(False)
    hub.token(TOKEN)
    hub.new_cache("publisher-hf")
    yield hub
    server.stop()


def publish(mem, repo: str, max_rows: int = 100_000) -> str:
    """Publish the memory's rows the remote does not hold yet; returns the new head commit."""
    from funes import hub, models
    from funes.memory import mirror

    found = hub.repo(repo) or hub.create_private(repo)
    man = mirror.parse_manifest(hub.read_file(repo, mirror.MANIFEST, found.sha))
    model = models.embedder_id()
    table = _published_rows(mem)
    dim = table.schema.field("vector").type.list_size
    man = man or mirror.empty_manifest(model, dim)
    start = int(man["chunks"])
    out = Path(mem.path).parent / "publish-out"
    writer = mirror.ShardWriter(out, mirror.row_schema(dim, model), mirror.next_seq(man), max_rows)
    writer.write(table.slice(start))
    shards = writer.close()
    man = mirror.extend_manifest(man, [s for s, _ in shards], "2026-06-20T00:00:00Z")
    files = [(s.path, p) for s, p in shards] + [(mirror.MANIFEST, mirror.encode_manifest(man))]
    return hub.commit(repo, files, "funes publish", found.sha)


def _published_rows(mem) -> pa.Table:
    chunks = mem.chunks().to_table()
    vec = mem.vectors()
    n = chunks.num_rows
    if vec is None:
        dim = 16
        vectors = pa.nulls(n, pa.list_(pa.float32(), dim))
    else:
        vt = vec.to_table(columns=["row", "vector"])
        dim = vt["vector"].type.list_size
        flat = np.zeros((n, dim), np.float32)
        have = np.zeros(n, bool)
        rows = vt["row"].to_numpy()
        flat[rows] = vt["vector"].combine_chunks().flatten().to_numpy().reshape(-1, dim)
        have[rows] = True
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), dim, mask=pa.array(~have))
    return chunks.append_column("vector", vectors)
