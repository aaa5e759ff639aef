"""`funes ask <claude|codex> "question"`: recall passages and have that agent's CLI answer from them alone.

Read-only by construction: the agent runs in its non-interactive mode with the passages in the prompt,
so nothing is installed and none of the agent's configuration files is written by funes. The agent
keeps no transcript of the run (funes would index it as a new session), runs no hooks and no MCP
servers (Claude Code no plugins, CLAUDE.md or tools either), and is asked to send no telemetry.
Where the agent's model lives is the agent's own business: its login, or the environment it reads
(ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY for Claude Code, CODEX_API_KEY for Codex), inherited as is;
FUNES_ASK_CLAUDE_ARGS / FUNES_ASK_CODEX_ARGS add the user's own flags (Codex takes another endpoint
only as a flag: `-c openai_base_url=…`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

from funes.errors import FunesError, UsageError

INSTALL = {"claude": "npm install -g @anthropic-ai/claude-code", "codex": "npm install -g @openai/codex"}
OTHER = {"claude": "codex", "codex": "claude"}

INSTRUCTION = """Answer the question below using ONLY the passages recalled from past coding-agent sessions.
Cite every passage you rely on by its session, its turn, and its `→ get` line, exactly as given.
If the passages do not support an answer, say that the memory does not answer it; do not guess,
and do not use outside knowledge, tools or files."""

# The prompt goes on stdin, not argv: eight verbatim chunks can pass the kernel's 128 KiB cap on one argument.
_FLAGS = {
    # -p reads the prompt from stdin; no session file under ~/.claude/projects; --safe-mode loads no
    # CLAUDE.md, plugin, skill, hook or MCP server (funes's own session-end publish included; a loaded
    # plugin would also be stamped into ~/.claude.json) yet keeps the user's auth, model and settings env;
    # no tools: the answer is the passages'.
    "claude": ["--output-format", "text", "--no-session-persistence", "--safe-mode", "--tools", ""],
    # `-` reads the prompt from stdin; --ephemeral writes no rollout under ~/.codex/sessions.
    "codex": [
        "--sandbox",
        "read-only",
        "--skip-git-repo-check",
        "--ephemeral",
        "--disable",
        "hooks",
        "-c",
        "analytics.enabled=false",
        "-",
    ],
}
_SUBCOMMAND = {"claude": ["-p"], "codex": ["exec"]}
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")  # a name Codex's dotted `-c` path can spell
_EXTRA = {"claude": "FUNES_ASK_CLAUDE_ARGS", "codex": "FUNES_ASK_CODEX_ARGS"}


def prompt(question: str, passages: str) -> str:
    return f"{INSTRUCTION}\n\n<passages>\n{passages.rstrip()}\n</passages>\n\nQuestion: {question.strip()}\n"


def argv(agent: str) -> list[str]:
    """The agent's own non-interactive mode (codex in its read-only sandbox), the user's extra flags first."""
    if agent not in _FLAGS:
        raise UsageError(f'funes ask works with claude or codex, not "{agent}"')
    var = _EXTRA[agent]
    try:
        extra = shlex.split(os.environ.get(var, ""))
    except ValueError as e:
        raise UsageError(f"{var} is not a shell-quoted argument list: {e}") from None
    off = _codex_mcp_off() if agent == "codex" else []
    return [agent, *_SUBCOMMAND[agent], *extra, *off, *_FLAGS[agent]]


def _codex_mcp_off() -> list[str]:
    """Codex has no "no MCP servers" switch (`-c mcp_servers={}` merges into the user's table), so each
    server the user's config.toml names is turned off for this run: none starts, none is a tool."""
    import tomllib

    from funes.agents.codex import codex_home

    try:
        servers = tomllib.loads((codex_home() / "config.toml").read_text(encoding="utf-8")).get("mcp_servers")
    except (OSError, ValueError):  # no config, or one Codex itself reports on
        return []
    names = sorted(n for n, v in (servers or {}).items() if isinstance(v, dict) and _BARE_KEY.match(n))
    return [arg for n in names for arg in ("-c", f"mcp_servers.{n}.enabled=false")]


def environment(agent: str) -> dict[str, str]:
    env = dict(os.environ)
    if agent == "claude":
        # Claude Code's one switch for telemetry, error reports and update checks (a user's own value wins)
        env.setdefault("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    return env


def ask(agent: str, question: str, memory: str | None = None, k: int = 8, progress=None) -> str:
    from funes.commands.recall import recall
    from funes.render import recall_agent

    if not question.strip():
        raise UsageError("ask needs a question", f'funes ask {agent} "what did we decide about X?"')
    cmd = argv(agent)
    if shutil.which(cmd[0]) is None:
        raise UsageError(
            f"{cmd[0]} isn't on PATH; install it with `{INSTALL[agent]}`",
            f"or ask the other agent: funes ask {OTHER[agent]}",
        )
    passages = recall_agent(recall(question, memory=memory, k=k, progress=progress))
    return run(cmd, prompt(question, passages), environment(agent))


def run(cmd: list[str], text: str, env: dict[str, str], timeout: float = 600) -> str:
    try:
        out = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FunesError(f"{cmd[0]} did not answer: {e}") from None
    if out.returncode != 0:
        # Claude Code prints "Not logged in · Please run /login" on stdout, Codex its errors on stderr
        last = (out.stderr.strip().splitlines() or out.stdout.strip().splitlines() or ["no error output"])[-1]
        raise FunesError(f"{cmd[0]} exited {out.returncode}: {last}", f"run `{cmd[0]}` once yourself to sign in")
    return out.stdout if out.stdout.endswith("\n") else out.stdout + "\n"
