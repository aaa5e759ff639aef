"""The `funes index` summary: what was stored, embedded, redacted, skipped; value in, text out."""

from __future__ import annotations

from funes import vocab
from funes.results import IndexReport


def index_summary(report: IndexReport) -> str:
    lines = []
    if report.sample:
        lines.append("no agent sessions found on this machine — indexed the bundled sample sessions")
    for h, t in sorted(report.tallies.items()):
        lines.append(f"{vocab.cli_name(h):<7} sessions={len(t.sessions)} turns={t.turns} new chunks={t.chunks}")
    cur = report.units_current
    lines.append(
        f"indexed: {report.chunks_added} new chunks, {report.vectors_added} embedded "
        f"({report.units_total} sources, {cur} already current) in {report.elapsed:.1f}s"
    )
    if report.redacted:
        summary = ", ".join(f"{k}×{n}" for k, n in sorted(report.redacted.items()))
        lines.append(f"redacted: {sum(report.redacted.values())} secret(s) ({summary})")
    if report.skipped:
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(report.skipped.items()))
        lines.append(f"skipped: {reasons}")
    for line in report.repairs:
        lines.append(f"repaired: {line}")
    for key, why in report.failed[:10]:
        lines.append(f"unreadable: {key} — {why}")
    if len(report.failed) > 10:
        lines.append(f"unreadable: {len(report.failed) - 10} more")
    if report.vectors_pending:
        lines.append(
            f"waiting for vectors: {report.vectors_pending} chunks (searchable by keyword now; "
            "later runs embed them, or `funes index --yes` does it at once)"
        )
    if report.vectors_reembedded or report.vectors_stale:
        lines.append(
            f"re-embedded: {report.vectors_reembedded} vectors with their context line"
            + (f" ({report.vectors_stale} still of the bare text: later runs continue)" if report.vectors_stale else "")
        )
    if report.budget_stopped:
        lines.append("stopped at the time budget — run `funes index --yes` to finish, or let later runs continue")
    return "\n".join(lines) + "\n"
