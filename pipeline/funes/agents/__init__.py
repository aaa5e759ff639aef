"""Register funes with each agent (Claude Code, Codex, Hermes, pi) and undo it exactly.

Each agent module answers `integration(plan)`: the files to edit (how to add funes to one, how to strip it
again), the original funes's leftovers to drop, agent CLI steps, and what the user must still do.
`install` applies it with a manifest under $FUNES_HOME/integrations/; `uninstall` restores from it.
"""

from __future__ import annotations

from types import ModuleType

from funes.errors import UsageError

NAMES = ("claude", "codex", "hermes", "pi")
ALIASES = {
    "claude": "claude",
    "claude_code": "claude",
    "claude-code": "claude",
    "codex": "codex",
    "hermes": "hermes",
    "pi": "pi",
}


def parse_agent(name: str) -> str:
    agent = ALIASES.get((name or "").strip().lower())
    if agent is None:
        raise UsageError(f'unknown agent "{name}" (expected claude, codex, hermes or pi)')
    return agent


def module(agent: str) -> ModuleType:
    from funes.agents import claude, codex, hermes, pi

    return {"claude": claude, "codex": codex, "hermes": hermes, "pi": pi}[agent]
