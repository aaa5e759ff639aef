"""Hermes: mcp_servers.funes and shell hooks in config.yaml, plus their approvals in shell-hooks-allowlist.json."""

from __future__ import annotations

import time
from pathlib import Path

from funes import paths
from funes.agents.base import Edit, Integration, Plan
from funes.agents.edit import json_dump, json_load, runs_funes_hook, yaml_dump, yaml_load

TIMEOUT_S = 10


def hermes_home() -> Path:
    return paths.agent_dir("HERMES_HOME", ".hermes")


def events(plan: Plan) -> list[str]:
    # post_llm_call: once per successful turn; on_session_finalize: CLI/TUI/gateway teardown
    return ["post_llm_call", "on_session_finalize"] + (["on_session_start"] if plan.binding.remote else [])


def integration(plan: Plan) -> Integration:
    home = hermes_home()
    config, allow = home / "config.yaml", home / "shell-hooks-allowlist.json"
    return Integration(
        edits=[
            Edit(config, lambda cur: _with_funes(config, cur, plan), lambda cur: _with_funes(config, cur, None)),
            # --no-approve still strips approvals an earlier add made, so the file matches the choice
            Edit(
                allow,
                lambda cur: _approve(allow, cur, plan if plan.approve else None),
                lambda cur: _approve(allow, cur, None),
            ),
        ],
        legacy=[home / "hooks" / n for n in ("funes-index.sh", "funes-push.sh", "funes-sync.log")],
        next_step="restart Hermes; `hermes mcp list` and `hermes hooks list` should show funes"
        + ("" if plan.approve else " (approve its two hooks when Hermes asks, or they never run)"),
        notes=[
            "the funes hooks were approved in shell-hooks-allowlist.json on your behalf (so gateway and cron runs "
            "index too); `hermes hooks revoke` withdraws that, `funes add hermes --no-approve` leaves it to you"
            if plan.approve
            else "the funes hooks are not pre-approved: Hermes asks once on a terminal, and skips them in gateway/cron runs",
            "Hermes shows the tools as mcp_funes_recall, mcp_funes_get and mcp_funes_status",
        ],
    )


def _with_funes(path: Path, cur: str | None, plan: Plan | None) -> str:
    """Set (plan) or drop (None) funes's MCP server and hooks; the text is returned unchanged when nothing moves."""
    from ruamel.yaml.comments import CommentedMap

    yaml, doc = yaml_load(path, cur)
    if doc is None:
        if plan is None:
            return cur or ""
        doc = CommentedMap()
    changed = _set_server(doc, plan) | _set_hooks(doc, plan)
    return yaml_dump(yaml, doc) if changed else (cur or "")


def _set_server(doc, plan: Plan | None) -> bool:
    servers = doc.get("mcp_servers")
    if plan is None:
        if isinstance(servers, dict) and "funes" in servers:
            del servers["funes"]
            if not servers:
                del doc["mcp_servers"]
            return True
        return False
    argv = plan.mcp_argv()
    want = {"url": plan.url} if plan.url else {"command": argv[0], "args": argv[1:]}
    if servers is None:
        servers = doc["mcp_servers"] = {}
    if _plain(servers.get("funes")) == want:
        return False
    servers["funes"] = want
    return True


def _set_hooks(doc, plan: Plan | None) -> bool:
    wanted = {e: {"command": plan.hook_line(e), "timeout": TIMEOUT_S} for e in events(plan)} if plan else {}
    hooks = doc.get("hooks")
    if hooks is None:
        if not wanted:
            return False
        hooks = doc["hooks"] = {}
    changed = False
    for event in list(hooks) + [e for e in wanted if e not in hooks]:
        entries = hooks.get(event) or []
        out, placed = [], False
        for entry in entries:
            if isinstance(entry, dict) and runs_funes_hook(entry.get("command")):
                if event in wanted and not placed:
                    out.append(entry if _plain(entry) == wanted[event] else wanted[event])
                    placed = True
                continue
            out.append(entry)
        if event in wanted and not placed:
            out.append(wanted[event])
        if [_plain(e) for e in out] != [_plain(e) for e in entries]:
            changed = True
            if out:
                hooks[event] = out
            else:
                del hooks[event]
    if not hooks and changed:
        del doc["hooks"]
    return changed


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _approve(path: Path, cur: str | None, plan: Plan | None) -> str | None:
    doc, style = json_load(path, cur)
    approvals = doc.get("approvals", [])
    approvals = approvals if isinstance(approvals, list) else []
    mine = [a for a in approvals if isinstance(a, dict) and runs_funes_hook(a.get("command"))]
    wanted = [(e, plan.hook_line(e)) for e in events(plan)] if plan else []
    if [(a.get("event"), a.get("command")) for a in mine] == wanted:
        return cur
    if plan is None and not mine:
        return cur
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kept = [a for a in approvals if a not in mine]
    doc["approvals"] = kept + [
        {"event": e, "command": c, "approved_at": now, "script_mtime_at_approval": None} for e, c in wanted
    ]
    return json_dump(doc, style)
