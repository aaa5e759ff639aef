"""`funes ask <claude|codex> "question"`: recall passages and have that agent's CLI answer from them alone.

Read-only by construction: the agent runs in its non-interactive mode with the passages in the prompt,
so nothing is installed and none of the agent's configuration files is written by funes.
"""

from __future__ import annotations

import shutil
import subprocess

from funes.errors import FunesError, UsageError

INSTALL = {"claude": "npm install -g @anthropic-ai/claude-code", "codex": "npm install -g @openai/codex"}
OTHER = {"claude": "codex", "codex": "claude"}

INSTRUCTION = """Answer the question below using ONLY the passages recalled from past coding-agent sessions.
Cite every passage you rely on by its session, its turn, and its `→ get` line, exactly as given.
If the passages do not support an answer, say that the memory does not answer it; do not guess,
and do not use outside knowledge, tools or files."""


def prompt(question: str, passages: str) -> str:
    return f"{INSTRUCTION}\n\n<passages>\n{passages.rstrip()}\n</passages>\n\nQuestion: {question.strip()}\n"


def argv(agent: str, text: str) -> list[str]:
    """The agent's own non-interactive mode; codex additionally in its read-only sandbox."""
    if agent == "claude":
        return ["claude", "-p", text, "--output-format", "text"]
    if agent == "codex":
        return ["codex", "exec", "--sandbox", "read-only", "--skip-git-repo-check", text]
    raise UsageError(f'funes ask works with claude or codex, not "{agent}"')


def ask(agent: str, question: str, memory: str | None = None, k: int = 8, progress=None) -> str:
    from funes.commands.recall import recall
    from funes.render import recall_agent

    if not question.strip():
        raise UsageError("ask needs a question", f'funes ask {agent} "what did we decide about X?"')
    cmd = argv(agent, "")
    if shutil.which(cmd[0]) is None:
        raise UsageError(
            f"{cmd[0]} isn't on PATH; install it with `{INSTALL[agent]}`",
            f"or ask the other agent: funes ask {OTHER[agent]}",
        )
    passages = recall_agent(recall(question, memory=memory, k=k, progress=progress))
    return run(argv(agent, prompt(question, passages)))


def run(cmd: list[str], timeout: float = 600) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FunesError(f"{cmd[0]} did not answer: {e}") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no error output"])[-1]
        raise FunesError(f"{cmd[0]} exited {out.returncode}: {last}", f"run `{cmd[0]}` once yourself to sign in")
    return out.stdout if out.stdout.endswith("\n") else out.stdout + "\n"
