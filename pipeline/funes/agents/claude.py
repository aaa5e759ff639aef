"""Claude Code: a skills-directory plugin (hooks, MCP server, recall skill) under <claude dir>/skills/funes/."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from funes import __version__, paths
from funes.agents import assets
from funes.agents.base import Edit, Integration, Plan
from funes.agents.edit import MalformedConfig, json_load, read

TOOLS = "mcp__plugin_funes_funes__"


def claude_dir() -> Path:
    return paths.agent_dir("CLAUDE_CONFIG_DIR", ".claude")


def plugin_dir() -> Path:
    return claude_dir() / "skills" / "funes"


def integration(plan: Plan) -> Integration:
    root = plugin_dir()
    files = {
        root / ".claude-plugin" / "plugin.json": _pretty(_plugin()),
        root / "hooks" / "hooks.json": _pretty(_hooks(plan)),
        root / ".mcp.json": _pretty({"mcpServers": {"funes": _server(plan)}}),
        root / "skills" / "recall" / "SKILL.md": assets.skill(
            f"{TOOLS}recall", f"{TOOLS}get", [f"{TOOLS}recall", f"{TOOLS}get"]
        ),
    }
    edits = [Edit(p, _fixed(text), _gone, owned=True, mode=0o644) for p, text in files.items()]
    return Integration(
        edits=edits,
        legacy=[paths.integrations_dir() / "claude-plugin"],
        commands=_legacy_commands(),
        next_step="run /reload-plugins in Claude Code (or restart it) to load the funes plugin",
        notes=[f"Claude sees the tools as {TOOLS}recall, {TOOLS}get and {TOOLS}status"] + _version_note(),
    )


MIN_VERSION = (2, 1, 157)  # the first Claude Code that loads a plugin from ~/.claude/skills/<name>/


def _version_note() -> list[str]:
    if shutil.which("claude") is None:
        return []
    try:
        out = subprocess.run(
            ["claude", "--version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    m = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", out.stdout)
    if m is None or tuple(int(g) for g in m.groups()) >= MIN_VERSION:
        return []
    return [
        f"Claude Code {'.'.join(m.groups())} is older than 2.1.157 and will not load this plugin: run `claude update`"
    ]


def _fixed(text: str) -> Callable[[str | None], str]:
    return lambda _cur: text


def _gone(_cur: str) -> None:
    return None


def _plugin() -> dict:
    return {
        "name": "funes",
        "version": __version__,
        "description": "Recall decisions and context from past agent sessions; index each turn into the funes memory",
        "author": {"name": "funes"},
    }


def _hooks(plan: Plan) -> dict:
    def handler(event: str, **extra) -> dict:
        argv = plan.hook_argv(event)
        return {"type": "command", "command": argv[0], "args": argv[1:], **extra}

    hooks: dict[str, Any] = {
        # async: the turn never waits; the hook itself only queues and detaches anyway
        "Stop": [{"hooks": [handler("Stop", timeout=10, **{"async": True})]}],
        # the final index (and publish) of a session; Claude gives SessionEnd 1.5 s in all
        "SessionEnd": [{"hooks": [handler("SessionEnd", timeout=5)]}],
    }
    if plan.binding.remote:
        # catch-up publish of a session that ended without SessionEnd (crash, kill)
        hooks["SessionStart"] = [{"matcher": "startup|resume", "hooks": [handler("SessionStart", timeout=5)]}]
    return {"description": "funes: index each turn, publish at session end", "hooks": hooks}


def _server(plan: Plan) -> dict:
    if plan.url:
        return {"type": "http", "url": plan.url}
    argv = plan.mcp_argv()
    return {"command": argv[0], "args": argv[1:]}


def _pretty(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _legacy_commands() -> list[list[str]]:
    """The original registered a marketplace plugin and a user-scope MCP server; one registration must remain."""
    commands = []
    if (paths.integrations_dir() / "claude-plugin").is_dir():
        commands += [
            ["claude", "plugin", "uninstall", "funes@huggingface"],
            ["claude", "plugin", "marketplace", "remove", "huggingface"],
        ]
    user_config = Path.home() / ".claude.json"
    try:
        doc, _ = json_load(user_config, read(user_config))
    except MalformedConfig:  # Claude's own file: unreadable means we leave it alone
        doc = {}
    if isinstance(doc.get("mcpServers"), dict) and "funes" in doc["mcpServers"]:
        commands.append(["claude", "mcp", "remove", "funes", "-s", "user"])
    return commands
