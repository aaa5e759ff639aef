"""Worker processes store exactly the rows the serial path stores, in the same order."""

from __future__ import annotations

import subprocess
import sys

import lance
import pytest

from conftest import subprocess_env
from funes.commands import index, prepare
from funes.traces import source
from transcripts import prose, write_claude_session


def _tree(root, n):
    for s in range(n):
        texts = [prose(s * 10 + i, 40 + (s * 7 + i) % 90) for i in range(4)]
        texts[1] += f" token=ghp_{'a1B2c3D4e5' * 4}" if s % 5 == 0 else ""  # redaction runs in the workers too
        write_claude_session(root, f"sess-{s:03d}", texts, project=f"-home-u-p{s % 3}")
    return root


def _index(home, tree, workers):
    env = subprocess_env(home, FUNES_INDEX_WORKERS=str(workers))
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", "index", str(tree), "--no-embed"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return lance.dataset(str(home / "memory" / "chunks.lance")).to_table(), out.stdout


@pytest.mark.slow
def test_pooled_rows_equal_serial(tmp_path):
    n = prepare.POOL_MIN_UNITS + 6
    tree = _tree(tmp_path / "tree", n)
    owed = [(s, u) for s in source.resolve(tree) for u in s.units()]
    assert index._Run._poolable(None, owed)  # this tree does take the worker path
    serial, s_out = _index(tmp_path / "serial", tree, 1)
    pooled, p_out = _index(tmp_path / "pooled", tree, 2)
    assert serial.num_rows > prepare.POOL_MIN_UNITS
    assert pooled.equals(serial)
    assert f"sessions={n} turns={4 * n} " in s_out.splitlines()[0]  # the tallies count each unit once
    assert p_out.splitlines()[0].split(" in ")[0] == s_out.splitlines()[0].split(" in ")[0]
    assert any("[REDACTED:" in t for t in pooled["text"].to_pylist())


def test_groups_keep_order_and_size(tmp_path):
    files = []
    for i, size in enumerate([10, 10, 25, 5, 40, 1]):
        p = tmp_path / f"{i}.jsonl"
        p.write_bytes(b"x" * size)
        files.append((None, type("U", (), {"path": p})()))
    got = prepare.groups(files, group_bytes=30)
    assert [x for g in got for x in g] == files
    assert [len(g) for g in got] == [2, 2, 1, 1]


def test_group_size_follows_the_rate_and_the_budget_left():
    mb = 1 << 20
    assert prepare.group_bytes(0, 0.0, 20.0) == prepare.GROUP_MIN_BYTES  # nothing measured yet
    assert prepare.group_bytes(10 * mb, 2.0, None) == prepare.GROUP_MAX_BYTES  # unbudgeted: fewest scanner starts
    # 5 MB/s with 16 s left: a group of an eighth of what the rest of the budget reads
    assert prepare.group_bytes(10 * mb, 2.0, 16.0) == 10 * mb
    assert prepare.group_bytes(10 * mb, 2.0, 1.0) == prepare.GROUP_MIN_BYTES
    assert prepare.group_bytes(100 * mb, 1.0, 25.0) == prepare.GROUP_MAX_BYTES


def test_stream_asks_the_size_at_each_group(tmp_path):
    files = []
    for i in range(6):
        p = tmp_path / f"{i}.jsonl"
        p.write_bytes(b"x" * 10)
        files.append((None, type("U", (), {"path": p})()))
    sizes = iter([10, 20, 30])
    got = list(prepare.stream(files, lambda: next(sizes)))
    assert [x for g in got for x in g] == files
    assert [len(g) for g in got] == [1, 2, 3]


def test_pool_yields_in_order_with_groups_done_here_and_in_the_worker(tmp_path):
    import pyarrow as pa

    tree = _tree(tmp_path / "tree", 12)
    owed = [(s, u) for s in source.resolve(tree) for u in s.units()]
    work = [owed[i : i + 3] for i in range(0, len(owed), 3)]
    pool = prepare.Pool(2)
    try:
        got = list(pool.run(work, ("text",), True))
    finally:
        pool.close()
    assert [g for g, _ in got] == work
    assert [i.key for _, r in got for i in r[2]] == [u.key for _, u in owed]
    # the groups' rows, in order, are the rows of one serial pass over all of them
    serial = prepare.prepare_group(owed, ("text",), True)[0]
    assert pa.concat_tables([r[0] for _, r in got]).equals(serial)
