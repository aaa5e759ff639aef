"""`funes add <agent> [MEMORY]`: seed the first index of that agent's sessions, then register funes with it."""

from __future__ import annotations

from dataclasses import dataclass, field

from funes import agents, vocab
from funes.agents.base import Plan, funes_argv, parse_memory
from funes.agents.edit import MalformedConfig
from funes.agents.install import Report, install
from funes.errors import FunesError, UsageError


@dataclass
class AddResult:
    report: Report
    seeded: object | None = None  # the bootstrap IndexReport, when one ran
    seed_note: str = ""
    memory: str | None = None
    remote: bool = False
    extra: list[str] = field(default_factory=list)


def plan_for(agent: str, memory: str | None, url: str | None = None, approve: bool = True) -> Plan:
    agent = agents.parse_agent(agent)
    if url and not url.startswith(("http://127.0.0.1:", "http://localhost:", "http://[::1]:")):
        raise UsageError(f"--url must be a loopback `funes serve --port` endpoint, got {url}")
    return Plan(agent, parse_memory(memory), funes_argv(), url, approve)


def add(
    agent: str,
    memory: str | None = None,
    *,
    url: str | None = None,
    approve: bool = True,
    seed: bool = True,
    progress=None,
) -> AddResult:
    plan = plan_for(agent, memory, url, approve)
    result = AddResult(Report(plan.agent), memory=plan.binding.spec, remote=plan.binding.remote)
    if seed:
        result.seeded, result.seed_note = _seed(plan.agent, progress)
    try:
        result.report = install(plan, agents.module(plan.agent).integration(plan))
    except MalformedConfig as e:
        raise MalformedConfig(
            e.message, f"fix that file (or move it aside) and re-run `funes add {plan.agent}`"
        ) from None
    if plan.binding.remote:
        result.extra.append(
            f"each session's last index is published to {plan.binding.spec} (`funes publish {plan.binding.spec} --yes`)"
        )
    return result


def _seed(agent: str, progress) -> tuple[object | None, str]:
    """Day zero: a budgeted index of this agent's sessions when the memory holds none of them yet."""
    from funes.commands import index
    from funes.commands.status import status

    st = status()
    if st.state == "ready" and st.by_harness.get(vocab.HARNESSES[agent]):
        return None, ""
    try:
        report = index.index(index.Options(harness=agent), progress=progress or (lambda m, transient=False: None))
    except UsageError as e:
        return None, f"no first index: {e.message}"
    except FunesError as e:
        return None, f"the first index did not finish ({e.message}); the hooks will index as you work"
    return report, ""
