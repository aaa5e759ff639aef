"""`funes ask` through the real Claude Code and Codex CLIs, pointed at a stand-in model on 127.0.0.1.

Each CLI is reached only the way a user would point it elsewhere: Claude Code by ANTHROPIC_BASE_URL +
ANTHROPIC_API_KEY (inherited from the environment), Codex by its own `-c openai_base_url=…` override
passed through FUNES_ASK_CODEX_ARGS, with CODEX_API_KEY as its key. Skipped when `.agent-clis` is absent
(see test_agent_clis.py for how to install it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_configs import env_for, funes, snapshot, write_user_configs
from mcp_support import index_sample
from model_server import ModelServer
from test_agent_clis import agent_cli

pytestmark = pytest.mark.realagent

QUERY = "why did we move off the streaming parser"
SESSION = "5f0c2a1e-9b7d-4c3e-8a21-7d6e5b4c3a21"
ANSWER = f"The streaming parser was dropped for a buffered one (session {SESSION}, turn a2)."
NO_ANSWER = "The memory does not answer this question."
# what Claude Code keeps in ~/.claude.json once it has run: with it present a run rewrites nothing
RETURNING_USER = (
    '{"firstStartTime": "2026-01-01T00:00:00.000Z", "migrationVersion": 13, "userID": "ada", "machineID": "m1",'
    ' "opusProMigrationComplete": true, "sonnet1m45MigrationComplete": true, "seenNotifications": {}}'
)


_MODEL_VARS = ("ANTHROPIC_", "CLAUDE_", "CODEX_", "OPENAI_", "FUNES_ASK_")


@pytest.fixture(scope="module")
def sample_memory(tmp_path_factory) -> Path:
    fh = tmp_path_factory.mktemp("ask") / "home" / ".funes"
    fh.parent.mkdir()
    index_sample(fh)
    return fh


@pytest.fixture
def home(funes_home, sample_memory) -> Path:
    shutil.copytree(sample_memory, funes_home)
    write_user_configs(funes_home.parent)
    (funes_home.parent / ".claude.json").write_text(RETURNING_USER)
    return funes_home.parent


@pytest.fixture
def model():
    server = ModelServer(reply=ANSWER)
    yield server
    server.close()


def _ask(home: Path, agent: str, question: str, **env: str) -> subprocess.CompletedProcess:
    cli = agent_cli(agent)
    path = f"{os.path.dirname(cli)}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"
    # the developer's own model settings never reach these runs: only what each test gives
    mine = {k: v for k, v in env_for(home / ".funes", PATH=path).items() if not k.startswith(_MODEL_VARS)}
    return subprocess.run(
        [sys.executable, "-m", "funes.cli", "ask", agent, question],
        env=mine | env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=str(home),
    )


def _claude_env(model: ModelServer) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-ant-stand-in"}


def _prompt(call) -> str:
    """The one user text block that is funes's prompt: the grounding instruction first, the question last."""
    (prompt,) = [t for t in call.user_texts() if "using ONLY the passages" in t]
    assert prompt.startswith("Answer the question below using ONLY the passages") and "do not guess" in prompt
    return prompt


def test_claude_code_answers_from_the_recalled_passages_and_changes_no_config(home, model):
    wired = funes(home / ".funes", "add", "claude", "--yes", "--no-index")  # funes's plugin: MCP server + hooks
    assert wired.returncode == 0, wired.stderr
    before = snapshot(home)
    out = _ask(home, "claude", QUERY, **_claude_env(model))
    assert out.returncode == 0, out.stderr
    assert out.stdout == ANSWER + "\n"
    (call,) = model.model_calls("/messages")
    assert call.headers["x-api-key"] == "sk-ant-stand-in" and call.body["stream"] is True
    assert call.body.get("tools", []) == []  # no tools, no MCP server's either: nothing to read but the passages
    prompt = _prompt(call)
    assert prompt.rstrip().endswith(f"Question: {QUERY}")
    assert f"  → get {SESSION} a2 --memory local" in prompt and "streaming parser" in prompt
    # no transcript under ~/.claude/projects (funes would index it), no config or state rewritten
    assert snapshot(home) == before


def test_codex_answers_from_the_recalled_passages_and_changes_no_config(home, model):
    wired = funes(home / ".funes", "add", "codex", "--yes", "--no-index")  # funes's own MCP server + hooks
    assert wired.returncode == 0, wired.stderr
    before = snapshot(home)
    override = f"-c 'openai_base_url=\"{model.url}/v1\"'"
    out = _ask(home, "codex", QUERY, CODEX_API_KEY="sk-stand-in", FUNES_ASK_CODEX_ARGS=override)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ANSWER + "\n"
    (call,) = model.model_calls("/responses")
    assert call.headers["authorization"] == "Bearer sk-stand-in" and call.body["stream"] is True
    tools = [t.get("name") or t.get("type") for t in call.body.get("tools", [])]
    assert "exec_command" in tools and not [t for t in tools if "mcp" in t]  # no MCP server, funes's or context7
    prompt = _prompt(call)
    assert prompt.rstrip().endswith(f"Question: {QUERY}")
    assert f"  → get {SESSION} a2 --memory local" in prompt and "streaming parser" in prompt
    after = snapshot(home)
    assert {p: after.get(p) for p in before} == before  # config.toml, hooks.json and the rest, byte for byte
    # Codex keeps its own state databases, but --ephemeral leaves no rollout for funes to index
    assert not [p for p in after if p.startswith(".codex/sessions") or p.endswith(".jsonl")]


def test_a_memory_that_does_not_answer_is_passed_on_as_such(home, model):
    model.reply = NO_ANSWER
    question = "which colour is the zzyzx quokka"
    out = _ask(home, "claude", question, **_claude_env(model))
    assert out.returncode == 0, out.stderr
    assert out.stdout == NO_ANSWER + "\n"
    (call,) = model.model_calls("/messages")
    prompt = _prompt(call)
    assert prompt.rstrip().endswith(f"Question: {question}")
    assert "<passages>\nno results\n</passages>" in prompt and "→ get" not in prompt.split("<passages>")[1]


def test_a_signed_out_claude_is_one_line_naming_the_cause(home):
    out = _ask(home, "claude", QUERY)  # no ANTHROPIC_API_KEY and no login in this HOME
    assert out.returncode == 1 and out.stdout == "" and "Traceback" not in out.stderr
    first, hint = out.stderr.splitlines()
    assert first.startswith("funes: claude exited 1: ") and "log" in first.lower()
    assert hint == "  hint: run `claude` once yourself to sign in"
