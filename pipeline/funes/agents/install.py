"""Apply an Integration (stage every edit first, then write atomically) and undo it from the manifest."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from funes.agents import manifest
from funes.agents.base import Edit, Integration, Plan
from funes.agents.edit import MalformedConfig, read, sha, write_atomic


@dataclass
class Report:
    agent: str
    changed: list[str] = field(default_factory=list)  # "wrote PATH", "restored PATH", "deleted PATH"
    ran: list[str] = field(default_factory=list)  # agent CLI calls and how they ended
    manual: list[str] = field(default_factory=list)  # commands the user must run (agent CLI not on PATH)
    notes: list[str] = field(default_factory=list)
    next_step: str = ""
    errors: list[str] = field(default_factory=list)


def install(plan: Plan, integration: Integration) -> Report:
    report = Report(plan.agent, next_step=integration.next_step, notes=list(integration.notes))
    doc = manifest.load(plan.agent) or {}
    staged = [(e, cur, e.render(cur)) for e in integration.edits for cur in [read(e.path)]]
    for edit, cur, new in staged:
        if new is None:
            continue
        manifest.record_before(plan.agent, doc, edit.path, cur)
        _remember_dirs(doc, edit.path)
        if _write_checked(edit, cur, new):
            report.changed.append(f"wrote {edit.path}")
        doc["files"][str(edit.path)].update(after=sha(read(edit.path)), owned=edit.owned)
    for path in integration.legacy:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.is_file():
            path.unlink()
        else:
            continue
        report.changed.append(f"deleted {path} (the original funes's integration)")
        _rmdir_empty(path.parent)
    _run_all(integration.commands, report)
    doc.update(agent=plan.agent, memory=plan.binding.spec, kind=plan.binding.kind, funes=plan.funes, url=plan.url)
    manifest.save(plan.agent, doc)
    return report


def uninstall(agent: str, integration: Integration) -> Report:
    """Exact restore where a file is as `add` left it; otherwise strip only funes's entries."""
    report = Report(agent)
    doc = manifest.load(agent)
    files = doc.get("files", {}) if doc else {str(e.path): {"after": "?", "owned": e.owned} for e in integration.edits}
    strips = {str(e.path): e.strip for e in integration.edits}
    for name, entry in files.items():
        try:
            _undo_file(Path(name), entry, strips.get(name), report)
        except MalformedConfig as e:
            report.errors.append(e.message)
    for d in sorted(doc.get("dirs", []) if doc else [], key=len, reverse=True):
        _rmdir_empty(Path(d), stop_at=None)
    _run_all(integration.commands, report)
    if doc and not report.errors:
        manifest.drop(agent)
    return report


def _undo_file(path: Path, entry: dict, strip, report: Report) -> None:
    cur = read(path)
    if cur is None:
        return
    if sha(cur) == entry.get("after") and "before" in entry:
        target = manifest.original(entry)
        verb = "restored"
    elif entry.get("owned"):
        target, verb = None, "deleted"
    elif strip is not None:
        target, verb = strip(cur), "removed funes from"
    else:
        return
    if target is None:
        path.unlink()
        report.changed.append(f"deleted {path}")
    elif target != cur:
        write_atomic(path, target)
        report.changed.append(f"{verb} {path}")


def _write_checked(edit: Edit, cur: str | None, new: str | None) -> bool:
    """Optimistic concurrency: if the agent rewrote the file since we read it, re-apply on its new text."""
    for _ in range(3):
        now = read(edit.path)
        if now != cur:
            cur, new = now, edit.render(now)
            continue
        return new is not None and write_atomic(edit.path, new, edit.mode)
    raise MalformedConfig(f"{edit.path} keeps changing while funes edits it; close the agent and retry")


def _remember_dirs(doc: dict, path: Path) -> None:
    d, created = path.parent, doc.setdefault("dirs", [])
    while not d.exists():
        if str(d) not in created:
            created.append(str(d))
        d = d.parent


def _rmdir_empty(d: Path, stop_at: Path | None = None) -> None:
    try:
        if d.is_dir() and not any(d.iterdir()) and d != stop_at:
            d.rmdir()
    except OSError:
        pass


def _run_all(commands: list[list[str]], report: Report) -> None:
    for argv in commands:
        if shutil.which(argv[0]) is None:
            report.manual.append(" ".join(argv))
            continue
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            report.ran.append(f"{' '.join(argv)} (exit {out.returncode})")
        except (OSError, subprocess.TimeoutExpired) as e:
            report.ran.append(f"{' '.join(argv)} (failed: {e})")
