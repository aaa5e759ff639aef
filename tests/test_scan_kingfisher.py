"""Kingfisher as a child process: its stdin spill never outlives a run, it is stopped gently, an
interrupt is reported as one, and an exit 0 without a scan report is a failure (fail closed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, subprocess_env
from funes import scan
from funes.errors import FunesError
from funes.scan import scratch

_OK_AUDIT = json.dumps({"audit": {"summary": {"scan_succeeded": 1, "scan_failed": 0, "scan_partial": 0}}})


def _fake(tmp_path: Path, body: str) -> Path:
    fake = tmp_path / "kingfisher"
    fake.write_text("#!/bin/sh\n" + body)
    fake.chmod(0o755)
    return fake


# a stand-in that spills stdin the way Kingfisher does ($TMPDIR/.tmpXXXX/stdin_input), then waits
_SPILL = 'd=$(mktemp -d "${TMPDIR:-/tmp}/.tmpXXXXXX"); cat > "$d/stdin_input"; '


def _spills(funes_home: Path) -> list[Path]:
    return list((funes_home / "tmp").glob("*/.tmp*/stdin_input"))


def _wait_for(cond, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def test_real_kingfisher_spills_into_a_private_dir_that_is_removed(funes_home):
    if scan._kingfisher_binary()[0] is None:
        pytest.skip("kingfisher is not installed")
    tok = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"[::-1]
    (found,) = scan.find([f"export GITHUB_TOKEN={tok}"], only=["kingfisher"])
    assert found
    base = funes_home / "tmp"
    assert base.is_dir() and (base.stat().st_mode & 0o777) == 0o700
    assert list(base.iterdir()) == []  # the run's dir, and Kingfisher's copy of stdin, are gone


def test_kingfisher_spans_land_in_their_texts_with_and_without_a_lone_surrogate(funes_home):
    # a batch is encoded whole when it can be, text by text (U+FFFD for each lone surrogate) when not
    if scan._kingfisher_binary()[0] is None:
        pytest.skip("kingfisher is not installed")
    tok = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"[::-1]
    line = f"export GITHUB_TOKEN={tok}"
    span = (line.index(tok), line.index(tok) + len(tok))
    for odd in ("café ü\nnaïve", "a\udc80b\nc\ud800"):
        found = scan.find([odd, "two\nlines", f"{odd}\n{line}", line], only=["kingfisher"])
        assert found[0] == found[1] == []
        assert [(f.start - len(odd) - 1, f.end - len(odd) - 1) for f in found[2]] == [span]
        assert [(f.start, f.end) for f in found[3]] == [span]


def test_the_child_sees_the_private_tmpdir(funes_home, tmp_path, monkeypatch):
    seen = tmp_path / "seen"
    monkeypatch.setenv(
        "FUNES_KINGFISHER", str(_fake(tmp_path, f"cat >/dev/null; echo \"$TMPDIR\" > {seen}; echo '{_OK_AUDIT}'\n"))
    )
    scan.find(["hello"], only=["kingfisher"])
    tmpdir = Path(seen.read_text().strip())
    assert tmpdir.parent == funes_home / "tmp" and tmpdir.name.startswith("kingfisher.")
    assert not tmpdir.exists()


def test_leftovers_of_a_killed_run_are_swept_at_the_next_start(funes_home, tmp_path, monkeypatch):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = funes_home / "tmp" / f"kingfisher.{dead.pid}.abc123" / ".tmpXYZ"
    left.mkdir(parents=True)
    (left / "stdin_input").write_text("the unredacted batch")
    live = funes_home / "tmp" / f"kingfisher.{os.getppid()}.def456"  # a live process's run: kept
    live.mkdir()
    monkeypatch.setenv("FUNES_KINGFISHER", str(_fake(tmp_path, f"cat >/dev/null; echo '{_OK_AUDIT}'\n")))
    scan.find(["hello"], only=["kingfisher"])
    assert not left.parent.exists() and live.exists()
    assert scratch.sweep(funes_home / "tmp") == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_during_the_scan_leaves_no_spill(funes_home, tmp_path, sig):
    fake = _fake(tmp_path, _SPILL + "exec sleep 60\n")
    env = subprocess_env(funes_home, FUNES_KINGFISHER=str(fake))
    proc = subprocess.Popen(
        [sys.executable, "-m", "funes.cli", "index", str(FIXTURES / "claude"), "--no-embed"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: _spills(funes_home) or proc.poll() is not None, 120)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)  # Ctrl-C, or a hook runner's timeout
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "funes: interrupted"
    assert "Traceback" not in err and "reinstall" not in err
    assert _spills(funes_home) == [] and list((funes_home / "tmp").iterdir()) == []


def test_a_child_killed_by_sigint_is_reported_as_an_interrupt(funes_home, tmp_path, monkeypatch):
    monkeypatch.setenv("FUNES_KINGFISHER", str(_fake(tmp_path, "cat >/dev/null; kill -INT $$; sleep 5\n")))
    with pytest.raises(KeyboardInterrupt):
        scan.find(["hello"], only=["kingfisher"])
    assert list((funes_home / "tmp").iterdir()) == []


def test_timeout_stops_the_child_with_sigterm_first(funes_home, tmp_path, monkeypatch):
    marker = tmp_path / "got-term"
    body = _SPILL + f"trap 'echo term > {marker}; exit 143' TERM\nwhile :; do sleep 0.1; done\n"
    monkeypatch.setenv("FUNES_KINGFISHER", str(_fake(tmp_path, body)))
    monkeypatch.setattr(scan, "KINGFISHER_TIMEOUT_S", 1)
    with pytest.raises(FunesError, match="timed out"):
        scan.find(["hello"], only=["kingfisher"])
    assert marker.read_text().strip() == "term"
    assert list((funes_home / "tmp").iterdir()) == []


@pytest.mark.parametrize(
    "body",
    [
        "cat >/dev/null; exit 0\n",  # reads stdin, says nothing
        "cat >/dev/null; echo 'Usage: kingfisher <COMMAND>'; exit 0\n",  # a changed CLI printing help
        "cat >/dev/null; exit 200\n",
        'cat >/dev/null; echo \'{"audit": {"summary": {"scan_succeeded": 0}}}\'\n',
    ],
)
def test_exit_zero_without_a_scan_report_fails_closed(funes_home, tmp_path, monkeypatch, body):
    monkeypatch.setenv("FUNES_KINGFISHER", str(_fake(tmp_path, body)))
    with pytest.raises(FunesError, match="kingfisher"):
        scan.find(["export GITHUB_TOKEN=ghp_" + "x1Y2z3" * 6])


def test_an_echoing_failure_never_prints_scanned_prose(funes_home, tmp_path, monkeypatch):
    prose = "here is my hugging face token please log in"
    monkeypatch.setenv("FUNES_KINGFISHER", str(_fake(tmp_path, 'read line; echo "error: $line" >&2; exit 3\n')))
    with pytest.raises(FunesError) as e:
        scan.find([prose])
    message = f"{e.value} {e.value.hint}"
    assert "exit 3" in message
    assert not any(w in message for w in ("hugging", "token please", "log in", "here is"))


def test_engines_name_each_scanner(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNES_KINGFISHER", "off")
    e = scan.engines()
    assert e["kingfisher"] == "unavailable: disabled by FUNES_KINGFISHER"
    assert e["detect-secrets"][0].isdigit() and e["funes-rules"].startswith("builtin")
