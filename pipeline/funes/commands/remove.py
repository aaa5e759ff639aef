"""`funes remove <agent>`: undo exactly what `add` did; memories, transcripts and caches are never touched."""

from __future__ import annotations

from funes import agents
from funes.agents import manifest
from funes.agents.base import Binding, Plan
from funes.agents.install import Report, uninstall


def remove(agent: str) -> Report:
    agent = agents.parse_agent(agent)
    doc = manifest.load(agent) or {}
    binding = Binding(doc.get("kind", "local"), doc.get("memory"))
    plan = Plan(agent, binding, list(doc.get("funes") or ["funes"]), doc.get("url"))
    integration = agents.module(agent).integration(plan)
    integration.commands = []  # legacy clean-up belongs to add; remove only undoes funes's own entries
    return uninstall(agent, integration)
