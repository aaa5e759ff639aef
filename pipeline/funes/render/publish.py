"""The `funes publish` report: value in, text out (one line, then notes)."""

from __future__ import annotations


def publish_summary(r) -> str:
    short = r.commit[:10]
    if r.published:
        head = f"{r.repo_id}: published {r.published:,} chunks in {r.shards} shard{'s' if r.shards != 1 else ''} (commit {short})"
    elif r.held.rows:
        head = (
            f"{r.repo_id}: nothing published — held back {r.held.rows:,} row(s) with secrets ({r.held.summary()}); "
            "run `funes scrub`, then publish again"
        )
    else:
        head = f"{r.repo_id}: already up to date ({r.remote_chunks:,} chunks, commit {short})"
    lines = [head]
    if r.created:
        lines.append(f"  created {r.repo_id} as a private dataset")
    if r.card_note:
        lines.append(f"  {r.card_note}")
    if r.curation is not None and (r.curation.undecided or r.curation.grown):
        n = len(r.curation.undecided) + len(r.curation.grown)
        lines.append(f"  project memory: {n} session(s) wait for review (`funes curate {r.repo_id} --include SESSION`)")
    if r.pending:
        lines.append(
            f"  {r.pending:,} chunk(s) still wait for a vector and were not published (`funes index` embeds them)"
        )
    if r.held.rows and r.published:
        lines.append(
            f"  ⚠ held back {r.held.rows:,} row(s) containing secrets ({r.held.summary()}) — run `funes scrub`, then publish again"
        )
    for session, kinds in sorted(r.held.sessions.items())[:10]:
        lines.append(f"    session {session}: {', '.join(sorted(kinds))}")
    if len(r.held.sessions) > 10:
        lines.append(f"    … and {len(r.held.sessions) - 10} more session(s)")
    return "\n".join(lines) + "\n"
