"""Kingfisher's compiled-rule cache: compiled once when several runs start on a cold one (in two
processes, and the worker's start-up with its first batches), a killed compile never blocks the
next run, and the cache lives in a private per-user dir that does not follow $HOME."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from funes import scan
from funes.scan import kingfisher, remote, rulecache

REAL = kingfisher.binary()[0]
needs_kingfisher = pytest.mark.skipif(REAL is None, reason="kingfisher is not installed")
# a compile is ~6.5 CPU-s here, a warm run over a few lines ~0.5: a run past this compiled
COMPILE_CPU_S = 3.0
SECRET = "export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4


def _counting(tmp_path: Path) -> tuple[Path, Path]:
    """The real binary behind a wrapper that logs each run's arguments and CPU seconds (its
    children's, as `times` reports them) when it ends."""
    log = tmp_path / "runs.log"
    wrapper = tmp_path / "kingfisher"
    # (`times` redirected, not piped: in a subshell the children's times read 0)
    t = f"{log}.$$"
    wrapper.write_text(
        f'#!/bin/sh\n"{REAL}" "$@"\nrc=$?\ntimes > "{t}"; echo "$1 $(tail -1 "{t}")" >> "{log}"; rm -f "{t}"\nexit $rc\n'
    )
    wrapper.chmod(0o755)
    return wrapper, log


def _runs(log: Path) -> list[tuple[str, float]]:
    """(subcommand, CPU seconds) of each logged run."""

    def seconds(field: str) -> float:
        m, s = field.rstrip("s").split("m")
        return 60 * float(m) + float(s)

    out = []
    for line in log.read_text().splitlines():
        cmd, user, system = line.split()
        out.append((cmd, seconds(user) + seconds(system)))
    return out


def _cold(tmp_path: Path, monkeypatch) -> Path:
    cache = tmp_path / "rule-cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("KF_RULE_CACHE_DIR", str(cache))
    return cache


def _warm_copy(tmp_path: Path, monkeypatch) -> Path:
    """A private cache dir holding the compiled rules already (copied from the usual one when it has
    them): Kingfisher runs warm, but no funes stamp is there, so the runs still take the lock."""
    cache = _cold(tmp_path, monkeypatch)
    with monkeypatch.context() as m:
        m.delenv("KF_RULE_CACHE_DIR")
        usual = rulecache.directory()
    for db in usual.glob("*.vscdb") if usual else []:
        shutil.copy(db, cache / db.name)
    return cache


@needs_kingfisher
def test_two_processes_starting_on_a_cold_cache_compile_once(tmp_path, monkeypatch):
    _cold(tmp_path, monkeypatch)
    wrapper, log = _counting(tmp_path)
    env = dict(os.environ, FUNES_KINGFISHER=str(wrapper))
    code = f"from funes import scan; print(scan.find([{SECRET!r}], only=['kingfisher'])[0][0].kind)"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0].decode().strip() for p in procs]
    assert outs == ["GitHub", "GitHub"] and [p.returncode for p in procs] == [0, 0]
    cpu = sorted(c for _, c in _runs(log))
    assert len(cpu) == 2 and cpu[1] > COMPILE_CPU_S and cpu[0] < COMPILE_CPU_S, cpu  # one compiled, one waited


@needs_kingfisher
def test_the_worker_compiles_at_start_up_and_its_first_batches_wait_for_it(tmp_path, monkeypatch):
    cache = _cold(tmp_path, monkeypatch)
    wrapper, log = _counting(tmp_path)
    monkeypatch.setenv("FUNES_KINGFISHER", str(wrapper))
    s = remote.Scanner()
    try:
        first, second = s.start([SECRET]), s.start(["plain words", SECRET])
        assert [f.kind for f in first.result()[0]] == ["GitHub"]
        assert [len(fs) for fs in second.result()] == [0, 1]
    finally:
        s.close()
    runs = _runs(log)
    compiles = [(cmd, c) for cmd, c in runs if c > COMPILE_CPU_S]
    assert compiles and [cmd for cmd, _ in compiles] == ["rules"], runs  # the start-up's, and only it
    assert [cmd for cmd, _ in runs].count("scan") == 2
    # the first batch's time in the worker was mostly that wait; the second's wait was over before
    # the first was answered: none of its own time went on it
    assert first.compiled > 1.0 and second.compiled == 0.0
    assert list(cache.glob(".funes-compiled-*")) and list(cache.glob("*.vscdb"))


@needs_kingfisher
def test_a_killed_compile_never_blocks_the_next_run(tmp_path, monkeypatch):
    cache = _warm_copy(tmp_path, monkeypatch)
    # a process that took the lock as the run to compile, then hangs (a compile stuck or stopped)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from funes.scan import rulecache\n"
            f"_, hold = rulecache.before_run({REAL!r})\nprint(hold is not None, flush=True)\ntime.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        env=dict(os.environ),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"True"
        job = scan.start([SECRET], only=["kingfisher"])
        try:
            time.sleep(1.0)
            assert not job.done()  # it waits for the compile rather than compile too
            os.kill(holder.pid, signal.SIGKILL)  # the lock goes with the holder
            assert [f.kind for f in job.result()[0]] == ["GitHub"]  # and this run compiled itself
        finally:
            job.close()
    finally:
        holder.kill()
        holder.wait()
    assert [p.name for p in cache.glob(".funes-compiled-*")]  # stamped: the next run takes no lock
    assert rulecache.before_run(REAL) == (0.0, None)


def test_a_closed_job_stops_waiting_for_a_compile_and_starts_nothing(tmp_path, monkeypatch):
    _cold(tmp_path, monkeypatch)
    fake = tmp_path / "kingfisher"
    ran = tmp_path / "ran"
    fake.write_text(f"#!/bin/sh\ntouch {ran}\ncat >/dev/null\n")
    fake.chmod(0o755)
    _, hold = rulecache.before_run(str(fake))  # this test holds the compile lock
    assert hold is not None
    try:
        job = kingfisher.Job(str(fake), ["some text"], 60)
        time.sleep(0.3)
        t0 = time.monotonic()
        job.close()
        assert time.monotonic() - t0 < 2.0 and job.done() and job.proc is None
    finally:
        hold.release(False)
    assert not ran.exists()


def test_a_run_knows_beforehand_whether_its_scans_will_wait_for_a_compile(tmp_path, monkeypatch):
    """What a budgeted run asks first (commands/budget.py COMPILE_S): not compiled until a compile
    of this very binary was stamped; nothing to wait for without a binary or a usable cache dir."""
    cache = _cold(tmp_path, monkeypatch)
    fake = tmp_path / "kingfisher"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert not rulecache.compiled(str(fake))
    _, hold = rulecache.before_run(str(fake))
    assert hold is not None and not rulecache.compiled(str(fake))  # begun, not done
    hold.release(True)
    assert rulecache.compiled(str(fake))
    fake.write_text("#!/bin/sh\nexit 0\n")  # an upgraded binary compiles again
    assert not rulecache.compiled(str(fake))
    assert rulecache.compiled(None)
    monkeypatch.setenv("KF_RULE_CACHE_DIR", str(cache / "missing"))
    assert rulecache.compiled(str(fake))  # every run compiles itself: measured, not foreseen


def test_the_cache_dir_is_private_and_does_not_follow_home(tmp_path, monkeypatch):
    monkeypatch.delenv("KF_RULE_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    home_dir = rulecache.directory()
    assert home_dir is not None and not str(home_dir).startswith(os.environ["HOME"])  # (the tests' HOME)
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    assert rulecache.directory() == xdg / "funes" / "kingfisher"
    assert (xdg / "funes" / "kingfisher").stat().st_mode & 0o777 == 0o700
    (xdg / "funes" / "kingfisher").chmod(0o777)  # another user could plant rules there: not used
    assert rulecache.directory() == home_dir
    monkeypatch.setenv("KF_RULE_CACHE_DIR", str(tmp_path))  # Kingfisher's own setting wins
    assert rulecache.directory() == tmp_path and rulecache.env({})["KF_RULE_CACHE_DIR"] == str(tmp_path)
