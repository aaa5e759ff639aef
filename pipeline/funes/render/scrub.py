"""The `funes scrub` report: value in, text out."""

from __future__ import annotations


def scrub_summary(r) -> str:
    if r.state == "missing":
        return "no local memory to scrub\n"
    if r.state == "empty":
        return "memory is empty\n"
    if not r.rewritten:
        return f"memory is already clean ({r.rows:,} chunks)\n"
    kinds = ", ".join(f"{k}×{n}" for k, n in sorted(r.kinds.items()))
    return (
        f"scrubbed {r.rows:,} rows: redacted {r.secrets} secret(s) ({kinds}) in {r.blocks} block(s); "
        f"{r.rewritten} row(s) rewritten, {r.reembedded} re-embedded; older versions and index segments deleted\n"
    )
