"""Pre-existing user configs for each agent (comments, other MCP servers, other hooks) and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

USER_FILES = {
    ".codex/config.toml": """# my codex config
model = "o4"

[mcp_servers.context7]
command = "npx"  # docs server
args = ["-y", "@upstash/context7-mcp"]

[projects."/home/ada/x"]
trust_level = "trusted"
""",
    ".codex/hooks.json": """{
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
    ]
  }
}
""",
    ".hermes/config.yaml": """# hermes config
model:
  default: gpt-5   # main model
mcp_servers:
  github:
    command: npx
    args:
    - -y
    - gh-mcp
hooks:
  pre_tool_call:
  - command: ~/bin/audit.sh
    timeout: 5
""",
    ".hermes/shell-hooks-allowlist.json": """{
  "approvals": [
    {"event": "pre_tool_call", "command": "~/bin/audit.sh", "approved_at": "2026-01-01T00:00:00Z"}
  ]
}
""",
    ".pi/agent/mcp.json": '{"mcpServers": {"other": {"command": "other-mcp", "args": ["--x"]}}}',
    ".claude/settings.json": '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say hi"}]}]}}\n',
}
AGENT_VARS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME", "PI_CODING_AGENT_DIR", "FUNES_BIN")


def write_user_configs(home: Path) -> dict[Path, bytes]:
    out = {}
    for rel, text in USER_FILES.items():
        p = home / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        out[p] = p.read_bytes()
    return out


def snapshot(root: Path, skip: str = ".funes") -> dict[str, bytes]:
    """Every file under root (outside FUNES_HOME) by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and skip not in p.relative_to(root).parts
    }


def env_for(funes_home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in AGENT_VARS}
    env.update({"FUNES_HOME": str(funes_home), "HOME": str(funes_home.parent), "HF_HUB_OFFLINE": "1"})
    env.update(extra)
    return env


def funes(funes_home: Path, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "funes.cli", *args],
        env=env_for(funes_home, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=str(funes_home.parent),
    )
