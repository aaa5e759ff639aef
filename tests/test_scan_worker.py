"""The scan worker (`scan.remote` + `scan.worker`): the whole scan of a batch in a second process
gives exactly `scan.find`'s findings, the rows a run stores with it are the rows stored without
it, and it fails closed — a worker that dies, hangs or talks garbage raises FunesError and commits
nothing of its batch; a parent killed or interrupted leaves no worker, no Kingfisher, no spill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import subprocess_env
from funes import scan
from funes.commands import index, prepare
from funes.errors import FunesError
from funes.ingest import redact
from funes.scan import remote
from test_index_pipeline import _failing_kingfisher, _rows, _tree
from test_redact import BENIGN, planted, variants
from transcripts import prose, write_claude_session


@pytest.fixture(scope="module")
def worker():
    s = remote.Scanner()
    yield s
    s.close()


def _up_scanners(monkeypatch) -> list:
    """remote.Scanner, recorded and waited for until it is up: every flush of the run then goes
    to the worker (a flush begun before it is up scans in-process, `prepare.Flush`)."""
    made: list = []
    real = remote.Scanner

    def make(*a, **kw):
        s = real(*a, **kw)
        assert s.up.wait(60)
        made.append(s)
        return s

    monkeypatch.setattr(remote, "Scanner", make)
    return made


def _small_tree(root: Path) -> Path:
    """9 sessions of 4 blocks, a secret in every third: three flushes of 12 blocks."""
    for s in range(9):
        texts = [prose(s * 10 + i, 30 + (s * 7 + i) % 60) for i in range(4)]
        if s % 3 == 0:
            texts[1] += f" export GITHUB_TOKEN=ghp_{'a1B2c3D4e5' * 3}x9Z8y7"
        write_claude_session(root, f"small-{s:03d}", texts)
    return root


def _edge_texts() -> list[str]:
    tok = "ghp_" + "a1B2c3D4e5" * 3 + "x9Z8y7"
    huge = ("lorem ipsum dolor sit amet " * 40 + "\n") * 1000  # ~1 MB
    return [
        "",
        "   ",
        f"héllo wörld 日本語 {tok} end",
        f"lone \ud800 surrogate \udfff then AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY9 {tok}",
        "[REDACTED:GitHub] stays, [REDACTED:AWS] too, and password=[REDACTED:Password]",
        f'{{"input": "export TOKEN=\\"{tok}\\"\\nnext"}}',
        huge[: len(huge) // 2] + f" export GITHUB_TOKEN={tok} " + huge[len(huge) // 2 :],
        "🙂" * 5000 + f" {tok}",
    ]


def _same(scanner: remote.Scanner, texts: list[str], commands=None) -> list:
    want = scan.find(texts, commands=commands)
    pending = scanner.start(texts, commands=commands)
    try:
        got = pending.result()
    finally:
        pending.close()
    assert got == want
    return want


def test_findings_equal_in_process_on_fixtures_and_edge_texts(worker):
    """One batch (one Kingfisher run each way): the redaction fixtures, edge texts (empty, null,
    unicode, lone surrogates, markers, escaped JSON, ~1 MB) and a credential command's output."""
    out = "AKIAIOSFODNN7EXAMPLQ\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYzREALKEY9\n"
    texts: list = [t for _, t, _ in planted()] + [t for _, t, _ in variants()] + BENIGN
    texts += [*_edge_texts(), None, out, out]
    commands = [None] * (len(texts) - 2) + ["aws configure get aws_secret_access_key", None]
    want = _same(worker, [t or "" for t in texts], commands)
    assert sum(map(bool, want)) > 20 and len(want[-2]) > len(want[-1])  # the command made its output one
    edge = want[-len(_edge_texts()) - 3 : -3]
    assert edge[0] == edge[1] == [] and edge[2] and edge[3] and edge[6] and edge[7]
    assert _same(worker, []) == []


@pytest.mark.corpus
def test_findings_equal_in_process_on_real_transcripts(worker, corpus):
    """Raw JSONL lines of the smallest real Claude Code and Codex files (escaped tool input and
    output, false-positive-prone text): the worker's findings are scan.find's."""
    texts: list[str] = []
    for harness in ("claude", "codex"):
        for f in sorted((corpus / harness).glob("*.jsonl"), key=lambda p: p.stat().st_size)[:6]:
            texts += f.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    assert len(texts) > 100
    _same(worker, texts)


def test_a_run_with_the_worker_stores_the_rows_of_one_without(funes_home, tmp_path, monkeypatch):
    tree = _small_tree(tmp_path / "tree")
    made = _up_scanners(monkeypatch)
    monkeypatch.setenv("FUNES_SCAN_WORKER", "off")
    index.index(index.Options(path=str(tree), no_embed=True))  # one flush, scanned here
    want = _rows()
    assert not made and any("[REDACTED:" in r["text"] for r in want.values())
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "with-worker"))
    monkeypatch.setenv("FUNES_FLUSH_BLOCKS", "12")  # three flushes, two batches in the worker at a time
    monkeypatch.setenv("FUNES_SCAN_WORKER", "on")
    index.index(index.Options(path=str(tree), no_embed=True))
    assert len(made) == 1 and made[0].proc.returncode == 0  # one worker for the run, closed by it
    assert _rows(tmp_path / "with-worker") == want  # ids, texts, redactions, every column
    assert list((tmp_path / "with-worker" / "tmp").iterdir()) == []


def test_small_runs_scan_in_process(funes_home, tmp_path, monkeypatch):
    assert not remote.wanted(remote.MIN_UNITS - 1) and remote.wanted(remote.MIN_UNITS)
    monkeypatch.setenv("FUNES_SCAN_WORKER", "off")
    assert not remote.wanted(10**6)
    monkeypatch.setenv("FUNES_SCAN_WORKER", "on")
    assert remote.wanted(1)
    monkeypatch.delenv("FUNES_SCAN_WORKER")

    def no_worker(*a, **kw):
        raise AssertionError("a small run started a scan worker")

    monkeypatch.setattr(remote, "Scanner", no_worker)
    write_claude_session(tmp_path / "tree", "one", [prose(1, 40), "export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4])
    got = index.index(index.Options(path=str(tmp_path / "tree"), no_embed=True))
    assert got.chunks_added and sum(got.redacted.values()) == 1


def test_without_kingfisher_the_worker_runs_the_other_engines(monkeypatch):
    monkeypatch.setenv("FUNES_KINGFISHER", "off")
    assert scan.engines()["kingfisher"] == "unavailable: disabled by FUNES_KINGFISHER"
    s = remote.Scanner()  # the worker inherits the setting
    try:
        texts = [t for _, t, _ in planted()[:10]]
        assert sum(map(bool, _same(s, texts))) >= 5
    finally:
        s.close()


def _python_worker(tmp_path: Path, body: str) -> list[str]:
    """A stand-in worker: reads one request, then runs `body` (frames, out, req in scope). It
    speaks the frames by hand: importing funes.scan would cost each one the scanners' imports."""
    script = tmp_path / "fake_worker.py"
    script.write_text(
        "import pickle, struct, sys, time\n"
        "class frames:\n"
        "    @staticmethod\n"
        "    def write(out, obj):\n"
        "        data = pickle.dumps(obj, protocol=5)\n"
        "        out.write(struct.pack('>Q', len(data)) + data)\n"
        "        out.flush()\n"
        "out, src = sys.stdout.buffer, sys.stdin.buffer\n"
        "req = pickle.loads(src.read(struct.unpack('>Q', src.read(8))[0]))\n" + body + "\n"
    )
    return [sys.executable, str(script)]


def test_a_flush_scans_in_process_until_the_worker_is_up(tmp_path):
    """A worker that never says it is ready (a stand-in that only reads): the flush does not wait
    for it, it scans here; a worker that is up gets the batch."""
    import pyarrow as pa

    blocks = pa.table(
        {
            "block_type": ["text", "text"],
            "text": ["plain words", "export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4],
            "session_id": ["s", "s"],
            "turn_uuid": ["t", "t"],
            "block_idx": [0, 1],
        }
    )
    slow = remote.Scanner(_python_worker(tmp_path, "time.sleep(60)"))
    try:
        flush = prepare.Flush([blocks], scanner=slow)
        assert not slow.ready() and flush.scanner is None
        flush.close()
    finally:
        slow.close()
    s = remote.Scanner()
    try:
        assert s.up.wait(60)
        flush = prepare.Flush([blocks], scanner=s)
        assert s.ready() and flush.scanner is s and isinstance(flush.redaction.scan, remote.Pending)
        texts, kinds = flush.redaction.result()
        assert kinds == [[], ["GitHub"]] and texts[1] == "export GITHUB_TOKEN=[REDACTED:GitHub]"
        flush.close()
        # a null text passes through the worker's redaction as None, as in-process
        assert redact.redact_texts(["", None, "  "], scanner=s) == (["", None, "  "], [[], [], []])
    finally:
        s.close()


def test_a_flush_knows_when_its_answer_came_not_when_it_was_looked_at(worker, tmp_path):
    """The budget clock prices the worker by when it answered: a parent busy refreshing for
    seconds looks later, and noting that as the answer priced the worker's batches ~1.5x dearer."""
    from funes.traces import source

    assert worker.up.wait(60)
    path = write_claude_session(tmp_path, "s1", ["export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4, "plain words"])
    (src,) = source.resolve(path)
    (unit,) = src.units()
    blocks, _ = prepare.read_unit(src, unit, ("text",), True)
    flush = prepare.Flush([blocks], scanner=worker)
    assert flush.scanner is worker and flush.answered_at() is None
    deadline = time.monotonic() + 60
    while not flush.scanned() and time.monotonic() < deadline:
        time.sleep(0.01)
    came = flush.answered_at()
    assert came is not None and came <= time.monotonic()
    time.sleep(1.0)  # the parent is busy elsewhere
    chunks, _ = flush.finish()
    assert flush.answered_at() == came < time.monotonic() - 0.9  # kept after the finish
    assert "[REDACTED:GitHub]" in chunks.column("text")[0].as_py()
    # an in-process flush has no worker answer to time
    local = prepare.Flush([blocks])
    local.finish()
    assert local.answered_at() is None


@pytest.mark.parametrize(
    "body",
    [
        "out.write(b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x05hello'); out.flush()",  # not a pickle
        "frames.write(out, 'not a reply')",
        "frames.write(out, (req[1], 'ok', [(0, [('AWS', 3, 999)])]))",  # a span past its text
        "frames.write(out, (req[1], 'ok', [(0, [('AWS', 5, 9), ('AWS', 2, 7)])]))",  # overlapping
        "frames.write(out, (req[1], 'ok', [(7, [('AWS', 0, 2)])]))",  # no such text
        "frames.write(out, (req[1], 'maybe'))",
        "sys.exit(3)",  # dies with the request
    ],
)
def test_a_garbage_reply_or_a_dead_worker_fails_closed(tmp_path, body):
    s = remote.Scanner(_python_worker(tmp_path, body), timeout=20)
    try:
        pending = s.start(["some text with nothing in it"])
        with pytest.raises(FunesError, match="secret scan worker"):
            pending.result()
        with pytest.raises(FunesError, match="secret scan worker"):
            s.start(["the next batch"]).result()  # a failed worker is not used again
    finally:
        s.close()


def test_a_scan_error_in_the_worker_is_raised_in_the_parent(tmp_path):
    s = remote.Scanner(
        _python_worker(tmp_path, "frames.write(out, (req[1], 'error', 'kingfisher failed (exit 3)', 'h'))")
    )
    try:
        with pytest.raises(FunesError, match=r"kingfisher failed \(exit 3\)"):
            s.start(["x"]).result()
    finally:
        s.close()


def test_a_kingfisher_failure_in_the_worker_fails_the_batch_and_leaves_no_spill(funes_home, tmp_path, monkeypatch):
    monkeypatch.setenv("FUNES_KINGFISHER", str(_failing_kingfisher(tmp_path, 1)))  # its first scan exits 3
    s = remote.Scanner()
    try:
        with pytest.raises(FunesError, match=r"kingfisher failed \(exit 3\)"):
            s.start(["some text"]).result()
        assert s.start(["the next batch"]).result() == [[]]  # the worker itself is fine
    finally:
        s.close()
    assert s.proc.returncode == 0 and list((funes_home / "tmp").iterdir()) == []


def test_a_killed_worker_fails_its_batch_and_a_hung_one_times_out(funes_home, monkeypatch):
    monkeypatch.setenv("FUNES_KINGFISHER", "off")  # (its start-up is not what this is about)
    s = remote.Scanner()
    pending = s.start(["warm up"])
    pending.result()
    s.start(["x" * 10])  # in flight when the worker dies
    os.kill(s.proc.pid, signal.SIGKILL)
    with pytest.raises(FunesError, match="secret scan worker exited"):
        s.start(["y"]).result()
    s.close()
    hung = remote.Scanner()
    try:
        hung.start(["warm up"]).result()  # (its start-up is not what is timed)
        hung.timeout = 1
        os.kill(hung.proc.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        pending = hung.start(["z" * (4 << 20)])  # far past a pipe's buffer: sending it does not block here
        with pytest.raises(FunesError, match=r"gave no answer in 1s"):
            pending.result()
        assert time.monotonic() - t0 < 10
    finally:
        hung.close()
    assert hung.proc.returncode == -signal.SIGKILL


def test_a_worker_dying_mid_run_commits_none_of_its_flush(funes_home, tmp_path, monkeypatch):
    tree = _small_tree(tmp_path / "tree")
    monkeypatch.setenv("FUNES_FLUSH_BLOCKS", "12")
    monkeypatch.setenv("FUNES_SCAN_WORKER", "on")
    _up_scanners(monkeypatch)
    real, begun = prepare.Flush, []

    class Flush(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **kw):
            while len(begun) == 1 and not begun[0].scanned():
                time.sleep(0.01)  # the first flush's findings are back: it will be stored
            super().__init__(*a, **kw)
            begun.append(self)
            if len(begun) == 2:  # the second flush's batch was just sent: its worker dies before answering
                self.scanner.proc.kill()
                self.scanner.proc.wait()

    monkeypatch.setattr(prepare, "Flush", Flush)
    with pytest.raises(FunesError, match="secret scan worker"):
        index.index(index.Options(path=str(tree), no_embed=True))
    sessions = [set(f.blocks["session_id"].to_pylist()) for f in begun]
    assert {r["session_id"] for r in _rows().values()} == sessions[0]


def _ours(funes_home: Path) -> list[int]:
    """Live processes started for this test's FUNES_HOME (a worker, a Kingfisher: env is inherited)."""
    mark, out = f"FUNES_HOME={funes_home}".encode(), []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if mark in (d / "environ").read_bytes().split(b"\0"):
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_killed_or_interrupted_parent_leaves_no_worker_kingfisher_or_spill(funes_home, tmp_path, sig):
    tree = _tree(tmp_path / "tree")
    env = subprocess_env(funes_home, FUNES_FLUSH_BLOCKS="8", FUNES_SCAN_WORKER="on")
    proc = subprocess.Popen(
        [sys.executable, "-m", "funes.cli", "index", str(tree), "--no-embed"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 60
    spill = funes_home / "tmp"

    def worker_scanning() -> bool:
        """A Kingfisher spill dir named after the worker, none after the run: its flushes before
        the worker was up scanned in-process (a `kill -9` leaves such a one for the next scan's sweep)."""
        owners = {int(d.name.split(".")[1]) for d in spill.iterdir()} if spill.is_dir() else set()
        return bool(owners) and proc.pid not in owners

    while proc.poll() is None and time.monotonic() < end and not worker_scanning():
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be stopped"
    proc.send_signal(sig)
    proc.wait(30)
    end = time.monotonic() + 15
    while (left := [p for p in _ours(funes_home) if not _zombie(p)]) and time.monotonic() < end:
        time.sleep(0.05)
    assert left == []
    assert list(spill.iterdir()) == []


def test_the_worker_imports_only_what_the_scanners_need(funes_home):
    """One batch scanned by `python -X importtime -m funes.scan.worker`: polars (the gate) is
    loaded, so the scan ran; torch, datasets, lance, pandas, pyarrow and numpy are not."""
    from funes.scan import frames

    env = subprocess_env(funes_home, FUNES_KINGFISHER="off")
    p = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "funes.scan.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert p.stdin is not None and p.stdout is not None
    frames.write(p.stdin, ("scan", 0, ["export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4], None, None))
    assert frames.read(p.stdout) == (-1, "ready", None)
    assert frames.read(p.stdout) == (0, "ok", [(0, [("GitHub", 20, 64)])], 0.0)  # no rule compile waited for
    _, err = p.communicate(timeout=60)  # stdin closed: it exits
    assert p.returncode == 0
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in err.decode().splitlines() if "|" in line}
    assert {"polars", "funes"} <= loaded
    assert not loaded & {"torch", "datasets", "lance", "pandas", "pyarrow", "numpy"}


def test_the_directory_funes_runs_in_cannot_shadow_the_workers_imports(funes_home, tmp_path, monkeypatch):
    """`python -m` puts the working directory first on the path; the worker is started with -P, so
    a `polars.py` there (or a `kingfisher/` checkout) is not what its scan imports."""
    marker = tmp_path / "shadowed"
    (tmp_path / "polars.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('shadow')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FUNES_KINGFISHER", "off")
    s = remote.Scanner()
    try:
        text = "export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4
        assert s.start([text]).result() == scan.find([text])
    finally:
        s.close()
    assert not marker.exists()
