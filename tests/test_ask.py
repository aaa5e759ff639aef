"""`funes ask`: the prompt and command line funes builds, and a run through a stand-in agent CLI on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcp_support import env_for, index_sample

QUERY = "why did we move off the streaming parser"
SESSION = "5f0c2a1e-9b7d-4c3e-8a21-7d6e5b4c3a21"

STAND_IN = """#!{python}
import json, os, sys
with open(os.environ["ASK_RECORD"], "w") as f:
    json.dump({{"argv": sys.argv[1:], "stdin": sys.stdin.read(), "quiet": os.environ.get("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")}}, f)
print("The memory says the streaming parser was dropped (session {session}, turn a2).")
"""


def test_prompt_holds_the_grounding_instruction_passages_and_question():
    from funes.commands.ask import prompt

    text = prompt("  why X? ", "[1] session s1 turn t1\n→ get: funes get s1 t1\n")
    assert "ONLY the passages" in text and "`→ get` line" in text and "do not guess" in text
    assert "<passages>\n[1] session s1 turn t1\n→ get: funes get s1 t1\n</passages>" in text
    assert text.endswith("Question: why X?\n")


def test_the_agent_runs_without_transcript_hooks_or_mcp_and_takes_the_users_flags(monkeypatch, funes_home):
    from funes.commands.ask import argv
    from funes.errors import UsageError

    claude = argv("claude")
    assert claude[:2] == ["claude", "-p"] and {"--no-session-persistence", "--safe-mode"} <= set(claude)
    assert claude[-2:] == ["--tools", ""]
    codex = argv("codex")
    assert codex[:2] == ["codex", "exec"] and codex[-1] == "-"  # the prompt comes on stdin
    assert {"--ephemeral", "--skip-git-repo-check"} <= set(codex) and codex[codex.index("--sandbox") + 1] == "read-only"
    codex_config = funes_home.parent / ".codex" / "config.toml"
    codex_config.parent.mkdir()
    codex_config.write_text('[mcp_servers.context7]\ncommand = "npx"\n[mcp_servers."odd.name"]\ncommand = "x"\n')
    off = argv("codex")
    assert off[2:4] == ["-c", "mcp_servers.context7.enabled=false"] and "odd.name" not in " ".join(off)
    codex_config.unlink()
    monkeypatch.setenv("FUNES_ASK_CODEX_ARGS", "-m o4 -c 'openai_base_url=\"http://127.0.0.1:9/v1\"'")
    assert argv("codex")[:6] == ["codex", "exec", "-m", "o4", "-c", 'openai_base_url="http://127.0.0.1:9/v1"']
    monkeypatch.setenv("FUNES_ASK_CLAUDE_ARGS", "--model 'unclosed")
    with pytest.raises(UsageError, match="FUNES_ASK_CLAUDE_ARGS is not a shell-quoted"):
        argv("claude")


def test_ask_runs_the_agent_with_recalled_passages_and_prints_its_answer(tmp_path):
    fh = tmp_path / "h" / ".funes"
    fh.parent.mkdir(exist_ok=True)
    index_sample(fh)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agent = bin_dir / "claude"
    agent.write_text(STAND_IN.format(python=sys.executable, session=SESSION))
    agent.chmod(0o755)
    record = tmp_path / "argv.json"
    env = env_for(fh) | {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "ASK_RECORD": str(record)}
    before = sorted(p for p in fh.parent.rglob("*") if ".funes" not in p.parts)
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", "ask", "claude", QUERY],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("The memory says the streaming parser was dropped")
    sent = json.loads(record.read_text())
    assert sent["argv"][0] == "-p" and "ONLY the passages" in sent["stdin"] and f"→ get {SESSION} a2" in sent["stdin"]
    assert sent["stdin"].rstrip().endswith(f"Question: {QUERY}")
    assert sent["quiet"] == "1"  # Claude Code's telemetry, error reports and update checks off
    assert sorted(p for p in fh.parent.rglob("*") if ".funes" not in p.parts) == before  # nothing installed


def test_a_missing_agent_cli_names_how_to_install_it(tmp_path):
    fh = tmp_path / "h" / ".funes"
    fh.parent.mkdir(exist_ok=True)
    env = env_for(fh) | {"PATH": os.path.dirname(sys.executable)}
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", "ask", "codex", "anything"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 2 and out.stderr.startswith("funes: codex isn't on PATH") and "npm install" in out.stderr
    assert "funes ask claude" in out.stderr and "Traceback" not in out.stderr
