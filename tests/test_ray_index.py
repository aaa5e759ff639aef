"""`funes index … --engine ray`: a local Ray cluster (2 CPUs, started here) imports multi-shard
Parquet trace datasets from disk and from the test Hub into the same rows as one machine does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO, subprocess_env
from test_hub_import import _upload, remote  # noqa: F401  (the fixture, on a Hub of the test's own)
from test_traces_parquet import ROWS, SCHEMA

SHARDS = 3


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _shard(k: int, sessions: str | None = None) -> pa.Table:
    tag = sessions or f"s{k}"
    rows = [{**r, "session_id": f"{r['session_id']}-{tag}" if r["session_id"] else None} for r in ROWS]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _dataset(folder: Path, tables: list[pa.Table]) -> Path:
    folder.mkdir(parents=True)
    for k, t in enumerate(tables):
        pq.write_table(t, folder / f"train-{k:05d}.parquet")
    return folder


def _index(path: str, monkeypatch, home: Path, **opts):
    from funes.commands import index

    monkeypatch.setenv("FUNES_HOME", str(home))
    return index.index(index.Options(path=path, yes=True, **opts))


def _memory():
    """(chunk rows sorted by id, {id: vector}); every vector's row points at its own chunk."""
    from funes.memory import Memory

    mem = Memory.resolve(None)
    chunks = mem.chunks.dataset().to_table()
    ids = chunks["id"].to_pylist()
    assert len(set(ids)) == len(ids), "a chunk id was committed twice"
    if mem.vectors.dataset() is None:
        return chunks.sort_by("id"), {}
    vectors = mem.vectors.dataset().to_table()
    assert [ids[r] for r in vectors["row"].to_pylist()] == vectors["id"].to_pylist()
    vecs = dict(zip(vectors["id"].to_pylist(), vectors["vector"].to_numpy(zero_copy_only=False)))
    return chunks.sort_by("id"), vecs


def _same_memory(a, b, ignore: tuple[str, ...] = ()) -> None:
    (chunks_a, vec_a), (chunks_b, vec_b) = a, b
    cols = [c for c in chunks_a.column_names if c not in ignore]
    assert chunks_a.num_rows > 0 and chunks_a.select(cols).equals(chunks_b.select(cols))
    assert vec_a.keys() == vec_b.keys() == (set(chunks_a["id"].to_pylist()) if vec_a else set())
    for cid, v in vec_a.items():
        w = vec_b[cid]
        assert float(np.dot(v, w) / (np.linalg.norm(v) * np.linalg.norm(w))) >= 0.99


@pytest.mark.slow
def test_a_parquet_folder_on_ray_equals_the_single_machine_import_and_a_rerun_imports_nothing(
    ray_cluster, tmp_path, monkeypatch
):
    data = _dataset(tmp_path / "traces", [_shard(k) for k in range(SHARDS)])
    local = _index(str(data), monkeypatch, tmp_path / "local")
    expected = _memory()

    report = _index(str(data), monkeypatch, tmp_path / "ray", engine="ray")
    got = _memory()
    _same_memory(expected, got)
    assert (report.chunks_added, report.vectors_added) == (local.chunks_added, local.vectors_added)
    assert report.units_total == SHARDS and report.skipped == local.skipped
    assert {h: (len(t.sessions), t.turns, t.chunks) for h, t in report.tallies.items()} == {
        h: (len(t.sessions), t.turns, t.chunks) for h, t in local.tallies.items()
    }

    from funes.memory import Memory

    versions = (Memory.resolve(None).chunks.version(), Memory.resolve(None).vectors.version())
    again = _index(str(data), monkeypatch, tmp_path / "ray", engine="ray")
    assert (again.chunks_added, again.vectors_added, again.units_current) == (0, 0, SHARDS)
    assert (Memory.resolve(None).chunks.version(), Memory.resolve(None).vectors.version()) == versions


@pytest.mark.slow
def test_a_worker_killed_after_writing_its_fragments_is_retried_and_each_row_committed_once(
    ray_cluster, tmp_path, monkeypatch
):
    data = _dataset(tmp_path / "traces", [_shard(k) for k in range(SHARDS)])
    _index(str(data), monkeypatch, tmp_path / "local", no_embed=True)
    expected = _memory()

    marker = tmp_path / "killed"
    monkeypatch.setenv("FUNES_RAY_FAULT_ONCE", str(marker))
    report = _index(str(data), monkeypatch, tmp_path / "ray", engine="ray", no_embed=True)
    assert marker.read_text() == "killed\n"  # a worker did die mid-run
    _same_memory(expected, _memory())
    assert report.chunks_added == expected[0].num_rows
    # the dead task's data files are on disk, but no version references them
    from funes.memory import Memory

    ds = Memory.resolve(None).chunks.dataset()
    referenced = {f.path for frag in ds.get_fragments() for f in frag.data_files()}
    on_disk = {p.name for p in (Path(ds.uri) / "data").iterdir()}
    assert referenced < on_disk


@pytest.mark.slow
def test_a_hub_dataset_on_ray_equals_the_same_shards_from_disk(ray_cluster, remote, tmp_path, monkeypatch):  # noqa: F811
    tables = [_shard(k) for k in range(SHARDS)]
    data = _dataset(tmp_path / "traces", tables)
    _index(str(data), monkeypatch, tmp_path / "disk")
    from_disk = _memory()

    _upload(remote, {f"data/train-{k:05d}.parquet": t for k, t in enumerate(tables)}, tmp_path)
    remote.machine("ray-importer")
    mark = len(remote.requests)
    report = _index(f"hf://datasets/{remote.repo}", monkeypatch, tmp_path / "ray-importer" / ".funes", engine="ray")
    assert report.units_total == SHARDS and len(remote.shard_gets(mark)) == SHARDS  # each shard fetched once
    _same_memory(from_disk, _memory(), ignore=("source_path",))

    mark = len(remote.requests)
    again = _index(remote.repo, monkeypatch, tmp_path / "ray-importer" / ".funes", engine="ray")
    assert (again.chunks_added, again.units_current) == (0, SHARDS) and remote.shard_gets(mark) == []


@pytest.mark.slow
def test_a_session_split_across_shards_keeps_the_first_rows_as_one_machine_does(ray_cluster, tmp_path, monkeypatch):
    # shards 0 and 1 both hold the "same" sessions: their chunk ids collide across workers
    data = _dataset(tmp_path / "traces", [_shard(0, "x"), _shard(1, "x"), _shard(2)])
    _index(str(data), monkeypatch, tmp_path / "local", no_embed=True)
    expected = _memory()[0]
    report = _index(str(data), monkeypatch, tmp_path / "ray", engine="ray", no_embed=True)
    assert expected.equals(_memory()[0]) and report.chunks_added == expected.num_rows


@pytest.mark.slow
def test_a_scanner_failure_on_a_worker_is_the_scanners_one_line_and_commits_nothing(ray_cluster, tmp_path, monkeypatch):
    from funes.errors import FunesError
    from funes.memory import Memory

    data = _dataset(tmp_path / "traces", [_shard(0), _shard(1)])
    monkeypatch.setenv("FUNES_KINGFISHER", str(tmp_path / "no-such-scanner"))  # forwarded to the workers
    with pytest.raises(FunesError) as err:
        _index(str(data), monkeypatch, tmp_path / "ray", engine="ray", no_embed=True)
    assert err.value.message == "kingfisher could not be run (No such file or directory)"  # fails closed
    assert Memory.resolve(None).chunks.count() == 0 and not (tmp_path / "ray" / "state.json").exists()


def test_without_ray_the_engine_says_how_to_install_it(tmp_path, funes_home):
    data = _dataset(tmp_path / "traces", [_shard(0)])
    code = "import sys; sys.modules['ray'] = None; from funes.cli import main; sys.exit(main())"
    proc = subprocess.run(
        [sys.executable, "-c", code, "index", str(data), "--engine", "ray"],
        capture_output=True,
        text=True,
        env=subprocess_env(funes_home),
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.splitlines()[0] == "funes: --engine ray needs Ray Data, which is not installed"
    assert "pip install 'funes[ray]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (funes_home / "memory").exists()


def test_embed_steps_carry_contiguous_rows_as_bounds_and_any_others_packed():
    from funes.scale.rayjob import step_rows, steps

    run = np.arange(7, 2600)
    scattered = np.array([1, 3, 4, 9])
    for rows in (run, scattered, np.concatenate([scattered, run])):
        assert [r for s in steps(rows, 1024) for r in step_rows(s["lo"], s["hi"], s["rows"])] == rows.tolist()
    assert steps(run, 1024)[0] == {"lo": 7, "hi": 1031, "rows": b""}  # no per-row list on the driver


def test_cluster_options_without_the_ray_engine_are_refused_in_one_line(tmp_path, capsys):
    from funes.cli import main

    data = _dataset(tmp_path / "traces", [_shard(0)])
    assert main(["index", str(data), "--num-cpus", "4"]) == 2
    assert capsys.readouterr().err == "funes: --address and --num-cpus need --engine ray\n"
