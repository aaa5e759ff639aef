"""The agents' own CLIs read what `funes add` wrote (skipped where a CLI is not installed).

Install them outside the project venv: `npm install --prefix .agent-clis @openai/codex @anthropic-ai/claude-code`
and `python3 -m venv .agent-clis/hermes-venv && .agent-clis/hermes-venv/bin/pip install hermes-agent`.
pi (@earendil-works/pi-coding-agent) needs node >= 22.19, which this machine lacks: its files are checked
against its documented schema in test_agents.py / test_hooks.py instead.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from agent_configs import env_for, funes, write_user_configs
from test_hooks import budget, wait_for_worker

PREFIX = Path(__file__).resolve().parents[1] / ".agent-clis"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
pytestmark = pytest.mark.realagent


def agent_cli(name: str) -> str:
    for candidate in (PREFIX / "node_modules" / ".bin" / name, PREFIX / "hermes-venv" / "bin" / name):
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"`{name}` is not installed (see this module's docstring)")
    return found


@pytest.fixture
def home(funes_home, monkeypatch):
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME", "PI_CODING_AGENT_DIR", "FUNES_BIN"):
        monkeypatch.delenv(var, raising=False)
    write_user_configs(funes_home.parent)
    return funes_home.parent


def _run(home: Path, *argv: str, timeout: float = 90) -> str:
    out = subprocess.run(
        list(argv),
        env=env_for(home / ".funes"),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _add(home: Path, agent: str, *extra: str) -> None:
    out = funes(home / ".funes", "add", agent, *extra, "--yes", "--no-index")
    assert out.returncode == 0, out.stderr


def test_codex_sees_the_funes_server_next_to_the_users(home):
    codex = agent_cli("codex")
    _add(home, "codex")
    got = json.loads(_run(home, codex, "mcp", "get", "funes", "--json"))
    assert got["enabled"] and got["transport"]["type"] == "stdio"
    assert got["transport"]["args"][-1] == "mcp" and "funes" in got["transport"]["command"] + " ".join(
        got["transport"]["args"]
    )
    listed = _run(home, codex, "mcp", "list")
    assert "context7" in listed and "funes" in listed
    assert funes(home / ".funes", "remove", "codex").returncode == 0
    listed = _run(home, codex, "mcp", "list")
    assert "context7" in listed and "funes" not in listed


def _codex_hooks(home: Path, codex: str) -> dict:
    """Codex's own hook inventory (`hooks/list` of `codex app-server`, the call its /hooks view makes)."""
    proc = subprocess.Popen(
        [codex, "app-server"],
        env=env_for(home / ".funes"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        for msg in (
            {"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "funes-test", "version": "0"}}},
            {"method": "initialized"},
            {"id": 1, "method": "hooks/list", "params": {"cwds": [str(home)]}},
        ):
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            assert line, "codex app-server closed its output"
            doc = json.loads(line)
            if doc.get("id") == 1:
                return doc["result"]["data"][0]
    finally:
        proc.kill()
        proc.wait()


def test_codex_lists_the_funes_hooks_for_trust_and_keeps_their_hash(home):
    codex = agent_cli("codex")
    _add(home, "codex")
    inventory = _codex_hooks(home, codex)
    assert inventory["errors"] == [] and inventory["warnings"] == []
    mine = {h["eventName"]: h for h in inventory["hooks"] if " hook codex " in h["command"]}
    assert set(mine) == {"stop", "sessionEnd"} and all(h["trustStatus"] == "untrusted" for h in mine.values())
    assert any(h["command"] == "notify-send done" for h in inventory["hooks"])  # the user's hook, still first
    _add(home, "codex")  # a re-run must not invalidate a trust the user gave
    again = {
        h["eventName"]: h["currentHash"] for h in _codex_hooks(home, codex)["hooks"] if " hook codex " in h["command"]
    }
    assert again == {e: h["currentHash"] for e, h in mine.items()}


def test_claude_loads_the_plugin_and_connects_to_funes_mcp(home):
    claude = agent_cli("claude")
    _add(home, "claude")
    plugins = _run(home, claude, "plugin", "list")
    assert "funes@skills-dir" in plugins and "loaded" in plugins
    servers = _run(home, claude, "mcp", "list", timeout=120)  # Claude starts `funes mcp` for its health check
    line = next(x for x in servers.splitlines() if "funes" in x)
    assert line.startswith("plugin:funes:funes") and "Connected" in line
    assert funes(home / ".funes", "remove", "claude").returncode == 0
    assert "funes@skills-dir" not in _run(home, claude, "plugin", "list")


def test_hermes_lists_and_runs_the_funes_hook_without_a_model(home):
    hermes = agent_cli("hermes")
    shutil.copytree(FIXTURES / "hermes" / "sessions", home / ".hermes" / "sessions")
    _add(home, "hermes")
    assert "funes" in _run(home, hermes, "mcp", "list")
    hooks = _run(home, hermes, "hooks", "list")
    funes_lines = [x for x in hooks.splitlines() if " hook hermes " in x]
    assert len(funes_lines) == 2 and all("allowed" in x and "not allowlisted" not in x for x in funes_lines)
    assert "audit.sh" in hooks  # the user's own hook is still there (and still theirs to approve)
    payload = home / "payload.json"
    payload.write_text(json.dumps({"session_id": "20260404_110946_8657dc"}))
    fired = _run(home, hermes, "hooks", "test", "post_llm_call", "--payload-file", str(payload))
    assert "exit=0" in fired
    elapsed = float(fired.split("elapsed=")[1].split("s")[0])
    assert elapsed < budget(), fired
    run = wait_for_worker(home)
    assert run["result"] == "ok" and run["chunks_added"] > 0
