"""`funes bind MEMORY`: re-run `funes add <agent> MEMORY` for every agent funes is registered with."""

from __future__ import annotations

from funes import agents, paths
from funes.agents import manifest
from funes.agents.base import parse_memory
from funes.commands.add import AddResult, add
from funes.errors import UsageError


def installed() -> list[str]:
    """Agents with an integration manifest, in the fixed agent order (the report reads the same every run)."""
    d = paths.integrations_dir()
    return [a for a in agents.NAMES if (d / f"{a}.json").is_file() and manifest.load(a) is not None]


def bind(memory: str) -> list[AddResult]:
    parse_memory(memory)  # a bad name fails before any agent's config moves
    bound = installed()
    if not bound:
        raise UsageError("funes is not registered with any agent yet", "run `funes add <agent> MEMORY` first")
    # each agent keeps its own --url registration; only the memory moves
    return [add(a, memory, url=(manifest.load(a) or {}).get("url"), seed=False) for a in bound]
