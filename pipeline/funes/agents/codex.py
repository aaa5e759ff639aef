"""Codex: [mcp_servers.funes] in config.toml, Stop/SessionEnd hooks in hooks.json, a skill in ~/.agents/skills."""

from __future__ import annotations

import copy
from pathlib import Path

from funes import paths
from funes.agents import assets
from funes.agents.base import Edit, Integration, Plan
from funes.agents.edit import json_dump, json_load, merge_hook_groups, toml_load

INDEX_STATUS = "Indexing turn into funes memory"
PUBLISH_STATUS = "Publishing funes memory"


def codex_home() -> Path:
    return paths.agent_dir("CODEX_HOME", ".codex")


def integration(plan: Plan) -> Integration:
    home = codex_home()
    skill = Path.home() / ".agents" / "skills" / "funes" / "SKILL.md"
    return Integration(
        edits=[
            Edit(
                home / "config.toml",
                lambda cur: _with_server(home / "config.toml", cur, plan),
                _without_server(home / "config.toml"),
            ),
            Edit(
                home / "hooks.json",
                lambda cur: _with_hooks(home / "hooks.json", cur, plan),
                _without_hooks(home / "hooks.json"),
            ),
            Edit(
                skill,
                lambda _cur: assets.skill("the funes `recall` tool", "the funes `get` tool"),
                lambda _c: None,
                owned=True,
                mode=0o644,
            ),
        ],
        legacy=[home / "hooks" / name for name in ("funes-index.sh", "funes-push.sh", "funes-sync.log")],
        next_step="open /hooks in Codex and trust the funes hooks (Codex runs no new hook until you do), then restart Codex",
    )


def _server_table(plan: Plan):
    import tomlkit

    table = tomlkit.table()
    if plan.url:
        table["url"] = plan.url
    else:
        argv = plan.mcp_argv()
        table["command"] = argv[0]
        table["args"] = argv[1:]
    table.add(tomlkit.nl())  # else the next [section] loses its blank line
    return table


def _with_server(path: Path, cur: str | None, plan: Plan) -> str:
    import tomlkit

    doc = toml_load(path, cur)
    want = _server_table(plan)
    servers = doc.get("mcp_servers")
    if servers is not None and servers.get("funes") is not None and servers["funes"].unwrap() == want.unwrap():
        return cur or ""
    if servers is None:
        if doc.body and not (cur or "").endswith("\n\n"):
            doc.add(tomlkit.nl())
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    servers["funes"] = want
    return tomlkit.dumps(doc)


def _without_server(path: Path):
    def strip(cur: str) -> str:
        import tomlkit

        doc = toml_load(path, cur)
        servers = doc.get("mcp_servers")
        if servers is None or "funes" not in servers:
            return cur
        del servers["funes"]
        if not servers:
            del doc["mcp_servers"]
        return tomlkit.dumps(doc)

    return strip


def _desired_hooks(plan: Plan) -> dict[str, dict]:
    def group(event: str, status: str, **extra) -> dict:
        # Codex clamps a SessionEnd hook to 3 s (and warns about a longer one); the hook needs far less
        timeout = 3 if event == "SessionEnd" else 10
        handler = {"type": "command", "command": plan.hook_line(event), "timeout": timeout, "statusMessage": status}
        return {**extra, "hooks": [handler]}

    end_status = PUBLISH_STATUS if plan.binding.remote else INDEX_STATUS
    desired = {"Stop": group("Stop", INDEX_STATUS), "SessionEnd": group("SessionEnd", end_status)}
    if plan.binding.remote:
        desired["SessionStart"] = group("SessionStart", PUBLISH_STATUS, matcher="startup|resume")
    return desired


def _with_hooks(path: Path, cur: str | None, plan: Plan) -> str:
    doc, style = json_load(path, cur)
    return json_dump(merge_hook_groups(doc, _desired_hooks(plan)), style)


def _without_hooks(path: Path):
    def strip(cur: str) -> str:
        doc, style = json_load(path, cur)
        stripped = merge_hook_groups(copy.deepcopy(doc), {})
        return cur if stripped == doc else json_dump(stripped, style)

    return strip
