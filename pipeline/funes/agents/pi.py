"""pi (>= 0.99): the funes server in mcp.json with direct exposure, and an extension that fires the hook per turn."""

from __future__ import annotations

from pathlib import Path

from funes import paths
from funes.agents import assets
from funes.agents.base import Edit, Integration, Plan
from funes.agents.edit import MalformedConfig, json_dump, json_load

DESCRIPTION = "Recall decisions, rationale and context from past agent sessions"


def pi_dir() -> Path:
    return paths.agent_dir("PI_CODING_AGENT_DIR", ".pi/agent")


def integration(plan: Plan) -> Integration:
    mcp, ext = pi_dir() / "mcp.json", pi_dir() / "extensions" / "funes" / "index.js"
    legacy = paths.integrations_dir() / "pi"  # the original's bridge extension, installed with `pi install`
    return Integration(
        edits=[
            Edit(mcp, lambda cur: _with_server(mcp, cur, plan), lambda cur: _with_server(mcp, cur, None)),
            Edit(ext, lambda _cur: assets.pi_extension(plan.funes), lambda _cur: None, owned=True, mode=0o644),
        ],
        legacy=[legacy],
        commands=[["pi", "remove", str(legacy)]] if legacy.is_dir() else [],
        next_step="run /reload in pi (or restart it); the tools appear as mcp__funes__recall and mcp__funes__get",
    )


def _with_server(path: Path, cur: str | None, plan: Plan | None) -> str | None:
    doc, style = json_load(path, cur)
    servers = doc.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise MalformedConfig(f"{path}: `mcpServers` is not an object; it was left untouched")
    if plan is None:
        if not servers or "funes" not in servers:
            return cur
        del servers["funes"]
        return json_dump(doc, style)
    argv = plan.mcp_argv()
    target = {"url": plan.url} if plan.url else {"command": argv[0], "args": argv[1:]}
    # pi's default exposure is codemode, where the model never sees the tools
    want = {**target, "exposure": "direct", "description": DESCRIPTION}
    if servers is not None and servers.get("funes") == want:
        return cur
    doc.setdefault("mcpServers", {})["funes"] = want
    return json_dump(doc, style)
