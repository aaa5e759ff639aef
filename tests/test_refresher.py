"""The lexical index refreshed in a child process (memory/refresher.py) during a large budgeted run:
the same index as refreshing in the run's own process, nothing lost when the child fails, and no
child outliving its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from funes import scan
from funes.commands import index
from funes.commands.refreshes import Refreshes
from funes.memory import Memory, indexes, refresher
from funes.scan import remote
from test_index_pipeline import _rows as _all_rows
from transcripts import prose, write_claude_session


@pytest.fixture(autouse=True)
def _kingfisher():
    if scan._kingfisher_binary()[0] is None:
        pytest.skip("kingfisher is not installed")


def _tree(root: Path, sessions: int = 16) -> Path:
    for s in range(sessions):
        texts = [prose(s * 10 + i, 30 + (s * 7 + i) % 60) for i in range(4)]
        if s % 4 == 0:
            texts[1] += f" export GITHUB_TOKEN=ghp_{'a1B2c3D4e5' * 3}x9Z8y7"
        write_claude_session(root, f"ref-{s:03d}", texts, project=f"-home-u-p{s % 3}")
    return root


def _rows() -> dict:
    """Every chunk row but where its transcript was read from (each run reads the tree from its own HOME)."""
    return {k: {c: v for c, v in r.items() if c != "source_path"} for k, r in _all_rows().items()}


def _answers() -> list:
    from funes.retrieval.retriever import RecallRequest, Retriever

    mem = Memory.resolve(None)
    return [
        [
            (h.id, round(h.score, 9))
            for h in Retriever(mem, embedder=None, reranker=None)
            .run(RecallRequest(q, k=5, neighbors=0, half_life=0, legs=("bm25",)))
            .hits
        ]
        for q in ("ghp token export", prose(12, 20), prose(131, 12), prose(55, 9))
    ]


def _budgeted_run(monkeypatch, tree: Path, home: Path, refresher_on: bool) -> None:
    from funes.commands import budget

    tree_home = home.parent / ".claude" / "projects"
    tree_home.parent.mkdir(parents=True, exist_ok=True)
    if not tree_home.exists():
        tree_home.symlink_to(tree, target_is_directory=True)
    monkeypatch.setenv("HOME", str(home.parent))
    monkeypatch.setenv("FUNES_HOME", str(home))
    monkeypatch.setenv("FUNES_INDEX_BUDGET", "600")  # budgeted, never reached
    monkeypatch.setenv("FUNES_FLUSH_BLOCKS", "12")  # several flushes
    monkeypatch.setenv("FUNES_SCAN_WORKER", "on")
    monkeypatch.setenv("FUNES_INDEX_REFRESHER", "on" if refresher_on else "off")
    monkeypatch.setattr(budget, "INDEX_EVERY", 1)  # a refresh asked after every flush
    real = remote.Scanner

    def up(*a, **kw):  # every flush goes to the worker (one begun before it is up scans here)
        s = real(*a, **kw)
        assert s.up.wait(60)
        return s

    monkeypatch.setattr(remote, "Scanner", up)
    # the pass's promise, checked where it is made (the run's closing refresh would mend a gap)
    finished = []
    real_finish = Refreshes.finish

    def checked(self):
        real_finish(self)
        mem = Memory.resolve(None)
        man = indexes.read_manifest(indexes.index_dir(mem))
        finished.append(man is not None and man["chunks"]["rows"] == mem.chunks.count())

    monkeypatch.setattr(Refreshes, "finish", checked)
    report = index.index(index.Options(auto=True, no_embed=True))
    assert report.chunks_added > 0 and not report.budget_stopped and report.searchable_at is not None
    assert finished and all(finished), finished  # every pass's text indexed when it said so


def test_refreshing_in_the_child_builds_the_index_refreshing_here_builds(funes_home, tmp_path, monkeypatch):
    tree = _tree(tmp_path / "tree")
    _budgeted_run(monkeypatch, tree, tmp_path / "a" / ".funes", refresher_on=False)
    here_rows, here_answers = _rows(), _answers()
    asked, made = [], []
    begin, init = refresher.Refresher.begin, refresher.Refresher.__init__

    def counted_begin(self):
        ok = begin(self)
        asked.append(ok)
        return ok

    def recorded_init(self, *a, **kw):
        init(self, *a, **kw)
        made.append(self)

    monkeypatch.setattr(refresher.Refresher, "begin", counted_begin)
    monkeypatch.setattr(refresher.Refresher, "__init__", recorded_init)
    refreshed_here = []
    real_refresh = index._refresh
    monkeypatch.setattr(index, "_refresh", lambda *a, **kw: refreshed_here.append(1) or real_refresh(*a, **kw))
    _budgeted_run(monkeypatch, tree, tmp_path / "b" / ".funes", refresher_on=True)
    assert len(made) == 1 and made[0].proc.returncode == 0  # one child for the run, closed by it
    assert sum(asked) >= 2, asked  # the probe's and at least one more, all in the child
    # the pass's own refreshes ran in the child; the run's closing refresh here found nothing to do
    man = indexes.read_manifest(indexes.index_dir(Memory.resolve(None)))
    assert man is not None and man["chunks"]["rows"] == len(here_rows)
    assert _rows() == here_rows
    assert _answers() == here_answers and all(here_answers)
    assert len(refreshed_here) == 1  # the run's closing one (every run refreshes once at its end)


def test_a_child_that_fails_loses_nothing(funes_home, tmp_path, monkeypatch):
    """A child that dies at once, or answers garbage: the run refreshes in its own process and its
    index holds every row."""
    tree = _tree(tmp_path / "tree", sessions=8)
    _budgeted_run(monkeypatch, tree, tmp_path / "a" / ".funes", refresher_on=False)
    want = _answers()
    init = refresher.Refresher.__init__
    for n, body in enumerate(("raise SystemExit(3)", "import sys; sys.stdin.readline(); print('garbage', flush=True)")):

        def broken(self, memory, argv=None, timeout=refresher.TIMEOUT_S, _body=body):
            init(self, memory, argv=[sys.executable, "-c", _body], timeout=timeout)

        monkeypatch.setattr(refresher.Refresher, "__init__", broken)
        _budgeted_run(monkeypatch, tree, tmp_path / f"b{n}" / ".funes", refresher_on=True)
        assert _answers() == want and all(want)


def test_the_child_answers_each_refresh_and_exits_when_closed(funes_home, tmp_path, monkeypatch):
    monkeypatch.setenv("FUNES_INDEX_REFRESHER", "off")
    index.index(index.Options(path=str(_tree(tmp_path / "tree", sessions=6)), no_embed=True))
    mem = Memory.resolve(None)
    rows = mem.chunks.count()
    import shutil

    shutil.rmtree(indexes.index_dir(mem))  # derived data: the child rebuilds it
    r = refresher.Refresher(mem)
    try:
        assert r.begin() and not r.begin()  # one at a time
        seconds, added, cpu = r.wait()
        assert added == rows and seconds > 0 and 0 < cpu <= seconds * 1.5 and not r.busy and not r.failed
        assert r.poll() is None  # answered once
        assert r.begin()
        assert r.wait()[1] == 0  # nothing new
    finally:
        r.close()
    assert r.proc.returncode == 0
    loaded = indexes.load(mem)
    assert loaded is not None and loaded.rows == rows


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_parent_leaves_no_child(funes_home, tmp_path):
    """kill -9 of the process holding the writer lock: its refresher dies with it, so no refresh
    can run on after the lock is free."""
    code = (
        "import sys, time; from pathlib import Path; from funes.memory import Memory, refresher; "
        f"r = refresher.Refresher(Memory(Path({str(tmp_path / 'mem')!r}))); "
        "print(r.proc.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(1.0)  # the child is up (its prctl done)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        # a zombie is gone for our purpose: it runs nothing (its parent, now init, reaps it)
        try:
            if Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                break
        except OSError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the refresher outlived its parent")


def test_a_stop_only_the_guessed_scan_rate_asks_for_waits_for_the_first_answer(funes_home, tmp_path, monkeypatch):
    """The worker's rate before its first answer is a guess (a slower machine's); a guess that says
    the tail cannot fit waits for that answer and decides on the measured rate: the run goes on."""
    from funes.commands import budget

    monkeypatch.setattr(budget, "SCAN_PER_BLOCK_S", 5.0)  # 12 blocks in flight: a 60 s guess
    tree = _tree(tmp_path / "tree")
    monkeypatch.setenv("FUNES_INDEX_REFRESHER", "off")
    tree_home = funes_home.parent / ".claude" / "projects"
    tree_home.parent.mkdir(parents=True, exist_ok=True)
    tree_home.symlink_to(tree, target_is_directory=True)
    monkeypatch.setenv("FUNES_INDEX_BUDGET", "30")
    monkeypatch.setenv("FUNES_FLUSH_BLOCKS", "12")
    monkeypatch.setenv("FUNES_SCAN_WORKER", "on")
    real = remote.Scanner

    def up(*a, **kw):
        s = real(*a, **kw)
        assert s.up.wait(60)
        return s

    monkeypatch.setattr(remote, "Scanner", up)
    started = time.monotonic()
    report = index.index(index.Options(auto=True, no_embed=True))
    assert time.monotonic() - started < 31.0  # within its budget (and a second of slack)
    assert report.units_total == 16
    # the guess alone stopped after the first flush (3 units); the measured rate stores them all
    assert not report.budget_stopped and report.chunks_added == len(_rows()), report


def test_a_failed_child_puts_the_refreshes_back_on_this_process_timeline(funes_home, tmp_path, monkeypatch):
    """Once the child fails, the clock prices refreshes as this process's again: left on the
    refresher's timeline, the tail would leave them out and the run could overrun."""
    from funes.commands.budget import Clock
    from funes.commands.refreshes import Refreshes

    monkeypatch.setenv("FUNES_INDEX_REFRESHER", "off")
    index.index(index.Options(path=str(_tree(tmp_path / "tree", sessions=4)), no_embed=True))
    monkeypatch.setenv("FUNES_INDEX_REFRESHER", "on")
    init = refresher.Refresher.__init__
    monkeypatch.setattr(
        refresher.Refresher,
        "__init__",
        lambda self, memory: init(self, memory, argv=[sys.executable, "-c", "import sys; sys.stdin.readline()"]),
    )
    clock = Clock(time.monotonic(), 60.0, True)
    here = []
    r = Refreshes(clock, lambda: here.append(1))
    r.start_child(Memory.resolve(None))
    r.stored(100)
    r.refresh()  # begun in the child, which reads the ask and exits without an answer
    assert clock.background and r.unindexed == 0
    r.finish()
    assert r.child is None and not clock.background and here == [1] and r.unindexed == 0


def test_a_free_child_is_kept_busy_once_enough_is_stored(funes_home, tmp_path, monkeypatch):
    """Between flush points the reading loop begins the next refresh as soon as the child answered
    and `least` chunks wait: a child left idle until the next flush point kept the clock on the
    first refresh's (cold, contended) rate."""
    from funes.commands.budget import Clock

    index.index(index.Options(path=str(_tree(tmp_path / "tree", sessions=4)), no_embed=True))
    clock = Clock(time.monotonic(), 60.0, True)
    r = Refreshes(clock, lambda: pytest.fail("refreshed in this process"))
    r.start_child(Memory.resolve(None))
    try:
        r.stored(100)
        r.keep_busy(101)
        assert not r.child.busy and r.unindexed == 100  # too little waits: nothing asked
        r.keep_busy(100)
        assert r.child.busy and r.unindexed == 0 and clock.indexing is not None
        r.stored(500)
        r.keep_busy(1)
        assert r.unindexed == 500  # busy: not asked again (no queue)
        assert r.child.wait(60) is not None  # (its answer, taken here: the next ask may go)
        r.keep_busy(1)
        assert r.child.busy and r.unindexed == 0
        r.finish()
        assert not r.child.busy and clock.indexing is None and not r.child.failed
    finally:
        r.close()


def test_a_child_busy_at_close_is_stopped_and_noise_fails_it_at_once(funes_home, tmp_path):
    """close() does not wait past its grace for a refresh that hangs; a line that is no answer
    (noise between refreshes) fails the child at once rather than leave the next ask unanswered."""
    mem = Memory(tmp_path / "mem")
    hung = refresher.Refresher(
        mem, argv=[sys.executable, "-c", "import sys, time; sys.stdin.readline(); time.sleep(60)"]
    )
    assert hung.begin()
    t0 = time.monotonic()
    hung.close()
    assert time.monotonic() - t0 < refresher._CLOSE_GRACE_S + 3 and hung.proc.returncode is not None
    noisy = refresher.Refresher(
        mem,
        argv=[
            sys.executable,
            "-c",
            "import sys; print('noise', flush=True); sys.stdin.readline(); print('{}', flush=True)",
        ],
    )
    try:
        deadline = time.monotonic() + 10
        while not noisy.failed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert noisy.failed and not noisy.begin()
        t0 = time.monotonic()
        assert noisy.wait() is None and time.monotonic() - t0 < 1.0
    finally:
        noisy.close()
