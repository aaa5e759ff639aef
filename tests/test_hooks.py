"""Installed hooks run the way each agent runs them: instant, silent, pipes closed; the turn is indexed soon after."""

from __future__ import annotations

import concurrent.futures as cf
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from agent_configs import env_for, funes
from mcp_support import SAMPLES, cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLAUDE_SAMPLE = next((SAMPLES / "claude").rglob("*.jsonl"))
CODEX_SAMPLE = next((SAMPLES / "codex").rglob("*.jsonl"))
FAST = {"FUNES_SYNC_EMBED": "0", "FUNES_SYNC_DEBOUNCE": "0.3"}


@pytest.fixture
def home(funes_home, monkeypatch):
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME", "PI_CODING_AGENT_DIR", "FUNES_BIN"):
        monkeypatch.delenv(var, raising=False)
    return funes_home.parent


def _hook_env(home: Path) -> dict[str, str]:
    return env_for(home / ".funes", **FAST)


def _added(home: Path, agent: str) -> None:
    out = funes(home / ".funes", "add", agent, "--yes", "--no-index")
    assert out.returncode == 0, out.stderr


def _timed(argv: list[str], payload: dict | None, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    """Run a hook as an agent does: pipes captured, so this returns only once they are closed."""
    t0 = time.monotonic()
    out = subprocess.run(argv, input=json.dumps(payload or {}), capture_output=True, text=True, timeout=10, env=env)
    return time.monotonic() - t0, out


def _claude_argv(home: Path, event: str) -> list[str]:
    hooks = json.loads((home / ".claude/skills/funes/hooks/hooks.json").read_text())["hooks"]
    h = hooks[event][0]["hooks"][0]
    return [h["command"], *h["args"]]  # exec form: no shell


def _codex_argv(home: Path, event: str) -> list[str]:
    groups = json.loads((home / ".codex/hooks.json").read_text())["hooks"][event]
    return [os.environ.get("SHELL") or "/bin/sh", "-lc", groups[-1]["hooks"][0]["command"]]


def _hermes_argv(home: Path, event: str) -> list[str]:
    cmd = YAML().load((home / ".hermes/config.yaml").read_text())["hooks"][event][0]["command"]
    return shlex.split(os.path.expanduser(cmd))  # Hermes runs shell hooks with shell=False


def wait_for_worker(home: Path, timeout: float = 120) -> dict:
    """Until the queue is drained and no worker holds the lock; the last run's record."""
    fh = home / ".funes"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queued = list((fh / "queue").glob("events*.jsonl")) if (fh / "queue").is_dir() else []
        pending = [q for q in queued if q.stat().st_size > 0]
        if not pending and (fh / "run/last-sync.json").exists() and not _held(fh / "run/sync.lock"):
            return json.loads((fh / "run/last-sync.json").read_text())
        time.sleep(0.3)
    log = (fh / "logs/sync.log").read_text() if (fh / "logs/sync.log").exists() else ""
    raise AssertionError(f"the worker did not finish; log:\n{log}")


def _held(lock: Path) -> bool:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def budget(idle_s: float = 1.0, starts: int = 10) -> float:
    """`idle_s` on an idle machine; on a loaded one, scaled by what a bare interpreter start costs right now
    (the hook is an interpreter start, a small import and one fork: a few bare starts, never a model load)."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
    return max(idle_s, starts * (time.monotonic() - t0))


def _assert_quiet_and_fast(wall: float, out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out
    limit = budget()
    assert wall < limit, f"hook took {wall:.2f}s (budget {limit:.2f}s)"


def test_claude_stop_hook_exec_form(home):
    _added(home, "claude")
    payload = {
        "session_id": "5f0c2a1e",
        "transcript_path": str(CLAUDE_SAMPLE),
        "cwd": "/home/dev",
        "hook_event_name": "Stop",
    }
    wall, out = _timed(_claude_argv(home, "Stop"), payload, _hook_env(home))
    _assert_quiet_and_fast(wall, out)
    run = wait_for_worker(home)
    assert run["result"] == "ok" and run["chunks_added"] > 0
    assert "streaming parser" in cli(home / ".funes", "recall", "streaming parser", "-k", "1")
    status = cli(home / ".funes", "status")
    assert "last hook run: " in status and "1 events from 1 sessions: ok" in status


def test_codex_hooks_under_a_login_shell(home):
    _added(home, "codex")
    payload = {
        "session_id": "019d7a10",
        "turn_id": "t1",
        "transcript_path": str(CODEX_SAMPLE),
        "cwd": "/w",
        "model": "o4",
    }
    for event in ("Stop", "SessionEnd"):
        wall, out = _timed(_codex_argv(home, event), payload, _hook_env(home))
        _assert_quiet_and_fast(wall, out)
    assert wait_for_worker(home)["result"] == "ok"
    first = cli(home / ".funes", "recall", "test_checkout_applies_coupon flaky", "-k", "1")
    assert first.splitlines()[0].split()[1] == "codex"


def test_hermes_hook_without_a_shell_sweeps_its_sessions(home):
    hermes = home / ".hermes"
    shutil.copytree(FIXTURES / "hermes" / "sessions", hermes / "sessions")
    _added(home, "hermes")
    env = _hook_env(home)
    payload = {"hook_event_name": "post_llm_call", "session_id": "20260404_110946_8657dc", "cwd": "/w", "extra": {}}
    wall, out = _timed(_hermes_argv(home, "post_llm_call"), payload, env)
    _assert_quiet_and_fast(wall, out)
    run = wait_for_worker(home)
    assert run["result"] == "ok" and run["chunks_added"] > 0
    assert "hermes" in json.loads(cli(home / ".funes", "status", "--json"))["by_harness"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_pi_extension_spawns_the_hook_detached(home):
    _added(home, "pi")
    ext = home / ".pi/agent/extensions/funes/index.js"
    assert subprocess.run(["node", "--check", str(ext)], capture_output=True).returncode == 0
    session = next((FIXTURES / "pi" / "sessions").rglob("*.jsonl"))
    driver = home / "drive.mjs"
    driver.write_text(
        "const mod = await import(process.argv[2]); const on = {};\n"
        "mod.default({ on: (ev, fn) => { on[ev] = fn; } });\n"
        "await on.agent_settled({}, { sessionManager: { getSessionFile: () => process.argv[3] } });\n"
        "process.stdout.write(JSON.stringify(Object.keys(on)));\n"
    )
    t0 = time.monotonic()
    out = subprocess.run(
        ["node", str(driver), ext.as_uri(), str(session)],
        capture_output=True,
        text=True,
        timeout=10,
        env=_hook_env(home),
    )
    wall = time.monotonic() - t0
    assert out.returncode == 0 and json.loads(out.stdout) == ["agent_settled", "session_shutdown"], out.stderr
    assert wall < budget()
    run = wait_for_worker(home)
    assert run["result"] == "ok" and run["chunks_added"] > 0
    assert "pi" in json.loads(cli(home / ".funes", "status", "--json"))["by_harness"]


def _eight_sessions(root: Path) -> list[Path]:
    text = CLAUDE_SAMPLE.read_text()
    sid = "5f0c2a1e-9b7d-4c3e-8a21-7d6e5b4c3a21"
    out = []
    for i in range(8):
        new = f"{i:08d}-9b7d-4c3e-8a21-7d6e5b4c3a21"
        p = root / "-home-dev-ledger" / f"{new}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.replace(sid, new))
        out.append(p)
    return out


def test_eight_hooks_at_once_index_every_turn_once(home, tmp_path):
    _added(home, "claude")
    transcripts = _eight_sessions(tmp_path / "projects")
    argv, env = _claude_argv(home, "Stop"), _hook_env(home)

    def fire(p: Path):
        return _timed(argv, {"session_id": p.stem, "transcript_path": str(p)}, env)

    with cf.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(fire, transcripts))
    for _, out in results:
        assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    walls = sorted(w for w, _ in results)
    # eight hooks at once on two cores: each waits for the others' interpreter starts
    assert walls[-1] < budget(2.0, starts=40), walls
    wait_for_worker(home)
    got = json.loads(cli(home / ".funes", "status", "--json"))
    reference = tmp_path / "ref" / ".funes"
    reference.parent.mkdir()
    cli(reference, "index", str(tmp_path / "projects"), "--harness", "claude", "--no-embed")
    want = json.loads(cli(reference, "status", "--json"))
    assert (got["sessions"], got["chunks"]) == (8, want["chunks"])
    runs = [line for line in (home / ".funes/logs/sync.log").read_text().splitlines() if " sync: " in line]
    assert 1 <= len(runs) <= 3, runs  # the burst coalesced
    assert sum(int(r.split(" sync: ")[1].split()[0]) for r in runs) == 8  # and no event was lost


def test_a_busy_memory_delays_the_index_but_loses_nothing(home):
    from funes import paths

    _added(home, "claude")
    lock = paths.lock_file_for(paths.memory_dir(home / ".funes"))
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a user's `funes index` is running
    try:
        wall, out = _timed(_claude_argv(home, "Stop"), {"transcript_path": str(CLAUDE_SAMPLE)}, _hook_env(home))
        _assert_quiet_and_fast(wall, out)
        time.sleep(2.5)
        assert not (home / ".funes/run/last-sync.json").exists()
    finally:
        os.close(fd)
    run = wait_for_worker(home)
    assert run["result"] == "ok" and run["chunks_added"] > 0


def test_hook_never_fails_the_turn(home):
    (home / ".funes").mkdir(parents=True, exist_ok=True)
    (home / ".funes" / "queue").write_text("a file where the queue folder should be")
    argv = [sys.executable, "-m", "funes.cli", "hook", "claude", "Stop"]
    wall, out = _timed(argv, None, _hook_env(home))
    _assert_quiet_and_fast(wall, out)
    assert "hook claude Stop" in (home / ".funes/logs/sync.log").read_text()  # the failure is logged instead
    garbage = subprocess.run(argv, input="not json{", capture_output=True, text=True, timeout=10, env=_hook_env(home))
    assert garbage.returncode == 0 and garbage.stdout == ""


def test_session_end_of_a_hub_memory_publishes_after_the_index(home, tmp_path):
    wrapper = tmp_path / "funes-wrapper"
    log = tmp_path / "publish.log"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$3" = publish ] || [ "$1" = publish ]; then echo "$@" >> {log}; exit 0; fi\n'
        f'exec {sys.executable} -m funes.cli "$@"\n'
    )
    wrapper.chmod(0o755)
    out = funes(home / ".funes", "add", "claude", "acme/mem", "--yes", "--no-index", FUNES_BIN=str(wrapper))
    assert out.returncode == 0, out.stderr
    env = _hook_env(home)
    wall, res = _timed(
        _claude_argv(home, "SessionEnd"), {"transcript_path": str(CLAUDE_SAMPLE), "reason": "other"}, env
    )
    _assert_quiet_and_fast(wall, res)
    run = wait_for_worker(home)
    assert run["result"] == "ok" and run["published"] == ["acme/mem"]
    assert log.read_text().split()[-3:] == ["publish", "acme/mem", "--yes"]


def test_a_batch_left_by_a_killed_worker_is_indexed_by_the_next_one(home, tmp_path):
    _added(home, "claude")
    first, second = _eight_sessions(tmp_path / "projects")[:2]
    queue = home / ".funes" / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    # what a worker killed with -9 after claiming the queue leaves behind
    claimed = {"agent": "claude", "event": "Stop", "ts": 0, "session_id": "a", "transcript": str(first), "cwd": ""}
    (queue / "events.99999.1.jsonl").write_text(json.dumps(claimed) + "\n")
    wall, out = _timed(_claude_argv(home, "Stop"), {"transcript_path": str(second)}, _hook_env(home))
    _assert_quiet_and_fast(wall, out)
    run = wait_for_worker(home)
    assert run["result"] == "ok" and run["events"] == 2
    assert json.loads(cli(home / ".funes", "status", "--json"))["sessions"] == 2
    assert not list(queue.glob("events*.jsonl"))


def test_hook_does_not_wait_for_an_agent_that_keeps_stdin_open(home):
    argv = [sys.executable, "-m", "funes.cli", "hook", "claude", "Stop"]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_hook_env(home)
    )
    proc.stdin.write(json.dumps({"session_id": "s", "transcript_path": str(CLAUDE_SAMPLE)}).encode())
    proc.stdin.flush()  # and never closed
    assert proc.wait(timeout=10) == 0
    assert time.monotonic() - t0 < budget()
    proc.stdin.close()
    assert proc.stdout.read() == b"" and proc.stderr.read() == b""
    assert wait_for_worker(home)["result"] == "ok"
