"""`funes add` / `funes remove` reports as text: what changed, what ran, and the one thing left to do."""

from __future__ import annotations

LABELS = {"claude": "Claude Code", "codex": "Codex", "hermes": "Hermes", "pi": "pi"}


def add_report(result) -> str:
    rep = result.report
    lines = []
    if result.seeded is not None:
        s = result.seeded
        lines.append(
            f"indexed {s.chunks_added} chunks from {s.units_total} sessions"
            + (" (budget reached; the rest follows)" if s.budget_stopped else "")
        )
    if result.seed_note:
        lines.append(result.seed_note)
    lines += _changes(rep, f"funes is already registered with {LABELS[rep.agent]}; nothing changed")
    lines.append(f"memory: {result.memory or 'local'}")
    lines += result.extra + rep.notes
    if rep.manual:
        lines.append(f"`{rep.manual[0].split()[0]}` isn't on PATH; run these yourself:")
        lines += [f"  {c}" for c in rep.manual]
    if rep.next_step:
        lines.append(f"next: {rep.next_step}")
    return "\n".join(lines) + "\n"


def remove_report(rep) -> str:
    lines = _changes(rep, f"funes was not registered with {LABELS[rep.agent]}; nothing to remove")
    if rep.manual:
        lines.append("remove the registrations manually:")
        lines += [f"  {c}" for c in rep.manual]
    return "\n".join(lines) + "\n"


def _changes(rep, nothing: str) -> list[str]:
    lines = list(rep.changed) + [f"ran {r}" for r in rep.ran]
    return lines or [nothing]
