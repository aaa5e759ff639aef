"""Project memories: `funes curate` decisions and a publish that ships exactly the included sessions."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from retrieval_support import add_vectors, chunk_rows, memory_with, session, unit_vectors


def _memory():
    rows = [r for s in range(4) for r in session(f"s{s}", [f"turn {i} of session {s}" for i in range(3)])]
    return memory_with(rows, dict(enumerate(unit_vectors(len(rows)))), refresh=False)


def _remote_sessions(hub) -> list[str]:
    out = []
    for path, e in hub.files().items():
        if path.endswith(".parquet"):
            out += pq.read_table(hub.server.store.blob_path(e["sha256"]), columns=["session_id"])[
                "session_id"
            ].to_pylist()
    return out


def _publish(hub):
    from funes.commands import publish

    return publish.publish(publish.Options(memory=hub.repo_id, create=True))


def test_partition_include_exclude_grown_undecided(funes_home):
    from funes.commands.curate import curate

    mem = _memory()
    p = curate("acme/mem", "acme/widget", ["s0", "s1"], ["s2"])
    assert (p.ship, p.grown, p.excluded, p.undecided) == ({"s0", "s1"}, set(), {"s2"}, {"s3"})
    start = mem.chunks.append(chunk_rows([{"session_id": "s1", "turn_uuid": "s1-t9", "seq": 9, "text": "later"}]))
    add_vectors(mem, [start], unit_vectors(1, seed=99))
    p = curate("acme/mem", None, [], [])
    assert p.ship == {"s0"} and p.grown == {"s1"}
    assert curate("acme/mem", None, ["s1"], []).ship == {"s0", "s1"}  # reviewed again at its new size


def test_publish_to_a_project_memory_ships_only_included_sessions(hub, funes_home):
    from funes.commands.curate import curate

    _memory()
    curate(hub.repo_id, "acme/widget", ["s0", "s3"], ["s1"])
    r = _publish(hub)
    assert sorted(set(_remote_sessions(hub))) == ["s0", "s3"] and r.published == 6
    assert r.curation is not None and r.curation.undecided == {"s2"}
    from funes.render.publish import publish_summary

    assert "1 session(s) wait for review" in publish_summary(r)
    curate(hub.repo_id, None, ["s2"], [])
    assert _publish(hub).published == 3
    assert sorted(set(_remote_sessions(hub))) == ["s0", "s2", "s3"]  # s1 (excluded) never ships


def test_a_personal_memory_still_ships_everything(hub, funes_home):
    _memory()
    assert _publish(hub).published == 12


def test_the_decisions_file_survives_a_hand_edit_with_comments(funes_home):
    from funes.commands.curate import curate
    from funes.errors import UsageError
    from funes.memory import curation

    _memory()
    curate("acme/mem", "acme/widget", ["s0"], [])
    path = curation.path_for("acme/mem")
    path.write_text(path.read_text() + "\n# s1 is fine, reviewed by hand\ninclude s1 3   # three turns\nexclude s0\n")
    p = curate("acme/mem", None, ["s2"], [])
    assert p.ship == {"s1", "s2"} and p.excluded == {"s0"}
    assert "# s1 is fine, reviewed by hand" in path.read_text()
    path.write_text(path.read_text() + "ship everything\n")
    with pytest.raises(UsageError, match=r"curation/acme--mem.txt:\d+: cannot read"):
        curate("acme/mem", None, [], [])


def test_curate_errors_are_one_line(funes_home):
    import subprocess
    import sys

    from conftest import subprocess_env

    _memory()
    for args, needle in (
        (["acme/mem"], "not a project memory yet"),
        (["acme/mem", "acme/widget", "--include", "nope"], "no session nope"),
        (["./here", "acme/widget"], "not ./here"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "funes.cli", "curate", *args],
            env=subprocess_env(funes_home),
            capture_output=True,
            text=True,
        )
        assert out.returncode == 2 and out.stderr.startswith("funes: ") and needle in out.stderr, out.stderr


def test_two_hosts_curating_one_remote_keep_each_others_rows(hub, funes_home, tmp_path, monkeypatch):
    from funes.commands.curate import curate

    _memory()
    curate(hub.repo_id, "acme/widget", ["s0"], [])
    assert _publish(hub).published == 3
    other = tmp_path / "laptop" / ".funes"  # a second host: its own memory and its own decisions
    monkeypatch.setenv("FUNES_HOME", str(other))
    rows = session("h2", [f"laptop turn {i}" for i in range(2)])
    memory_with(rows, dict(enumerate(unit_vectors(2, seed=7))), refresh=False)
    curate(hub.repo_id, "acme/widget", ["h2"], [])
    assert _publish(hub).published == 2
    assert sorted(set(_remote_sessions(hub))) == ["h2", "s0"]
    monkeypatch.setenv("FUNES_HOME", str(funes_home))
    curate(hub.repo_id, None, ["s3"], [])
    assert _publish(hub).published == 3
    assert sorted(set(_remote_sessions(hub))) == ["h2", "s0", "s3"]


def test_status_counts_the_sessions_waiting_for_review(funes_home):
    from funes import render
    from funes.commands.curate import curate
    from funes.commands.status import status

    _memory()
    assert status().review == {}
    curate("acme/mem", "acme/widget", ["s0"], ["s1"])
    st = status()
    assert st.review == {"acme/mem": 2}  # s2 and s3
    assert "waiting for review: 2 sessions for acme/mem\n" in render.status_text(st)
