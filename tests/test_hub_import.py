"""`funes index owner/name`: an agent-traces Parquet dataset on the (local test) Hub, imported shard by shard."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from remote_support import PrivateHub, Remote
from test_traces_parquet import ROWS, SCHEMA

KEY = ["session_id", "turn_uuid", "block_idx", "split_idx"]


@pytest.fixture
def remote(hub, monkeypatch, tmp_path):
    """Online with conftest's token, on a Hub of this test's own (trace files have no `text` column)."""
    own = PrivateHub(tmp_path / "hub", monkeypatch)
    r = Remote(own, monkeypatch, tmp_path)
    r.machine("importer")
    yield r
    own.stop()


def _upload(remote: Remote, files: dict[str, pa.Table], tmp_path) -> str:
    from funes import hub

    found = hub.repo(remote.repo) or hub.create_private(remote.repo)
    out = []
    for name, table in files.items():
        local = tmp_path / name.replace("/", "_")
        pq.write_table(table, local)
        out.append((name, local))
    return hub.commit(remote.repo, out, "traces", found.sha)


def _index(path: str):
    from funes.commands import index

    return index.index(index.Options(path=path, no_embed=True))


def _chunks():
    from funes.memory import Memory

    return Memory.resolve(None).chunks.dataset().to_table().sort_by([(k, "ascending") for k in KEY])


def test_hub_import_equals_the_import_of_the_same_file_from_disk_and_reruns_import_nothing(remote, tmp_path):
    table = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    disk = tmp_path / "disk" / "traces.parquet"
    disk.parent.mkdir()
    pq.write_table(table, disk)
    _index(str(disk))
    from_disk = _chunks()

    _upload(remote, {"data/traces.parquet": table}, tmp_path)
    remote.machine("hub-importer")
    mark = len(remote.requests)
    report = _index(remote.repo)
    assert report.chunks_added == from_disk.num_rows and len(remote.shard_gets(mark)) == 1
    from_hub = _chunks()
    cols = [c for c in from_disk.column_names if c != "source_path"]
    assert from_hub.select(cols).equals(from_disk.select(cols))
    had_path = [r["file_path"] is not None for r in ROWS if r["session_id"] == "trace-001"]
    assert had_path == [True]
    paths = dict(zip(from_hub["session_id"].to_pylist(), from_hub["source_path"].to_pylist()))
    assert paths["trace-001"] == ROWS[0]["file_path"]  # a row's own file_path wins, as from disk
    assert paths["trace-002"] == f"hf://datasets/{remote.repo}/data/traces.parquet"

    mark = len(remote.requests)
    again = _index(f"hf://datasets/{remote.repo}")
    assert again.chunks_added == 0 and again.units_current == 1 and remote.shard_gets(mark) == []


def test_a_new_shard_is_the_only_one_imported(remote, tmp_path):
    first = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    _upload(remote, {"data/train-00000.parquet": first}, tmp_path)
    assert _index(remote.repo).chunks_added > 0
    more = [{**ROWS[0], "session_id": "trace-003"}]
    _upload(remote, {"data/train-00001.parquet": pa.Table.from_pylist(more, schema=SCHEMA)}, tmp_path)
    mark = len(remote.requests)
    report = _index(remote.repo)
    gets = remote.shard_gets(mark)
    assert len(gets) == 1 and gets[0].endswith("train-00001.parquet")
    assert report.chunks_added > 0 and set(_chunks()["session_id"].to_pylist()) >= {"trace-001", "trace-003"}


def test_hub_import_refusals(remote, tmp_path):
    from funes.errors import FunesError, MemoryMissing, UsageError

    with pytest.raises(MemoryMissing, match="doesn't exist on the Hub"):
        _index(remote.repo + "-nope")
    _upload(remote, {"notes.txt": pa.table({"x": [1]})}, tmp_path)
    with pytest.raises(FunesError, match="not an agent-traces dataset"):
        _index(remote.repo)
    _upload(remote, {"funes.json": pa.table({"x": [1]})}, tmp_path)
    with pytest.raises(UsageError, match="is a funes memory"):
        _index(remote.repo)
