"""The dataset card (`README.md` of a published memory): rendered from cards/dataset_card.md, stats between markers.

A card with both markers gets its stats block refreshed; a card without them (written or edited by
a person outside funes' markers) is never touched.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from funes import paths, schema

OPEN, CLOSE = "<!-- funes:stats -->", "<!-- /funes:stats -->"
_BANDS = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
_BANDS += [(10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]


@dataclass(frozen=True)
class Stats:
    chunks: int
    sessions: dict[str, int]  # harness -> sessions
    first: str  # earliest / latest turn date (YYYY-MM-DD), "" when unknown
    last: str
    embedding_model: str
    published: str  # UTC timestamp of this publish


def size_category(n: int) -> str:
    return next((band for bound, band in _BANDS if n < bound), "n>1B")


def stats_block(s: Stats) -> str:
    agents = ", ".join(f"{h} {n:,}" for h, n in sorted(s.sessions.items())) or "none"
    span = f"{s.first} → {s.last}" if s.first else "unknown"
    rows = [
        ("Chunks", f"{s.chunks:,}"),
        ("Sessions per agent", agents),
        ("Date range", span),
        ("Embedding model", f"`{s.embedding_model}`"),
        ("Last publish", s.published),
    ]
    return "\n".join(["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])


def column_table() -> str:
    cols = [*schema.spec("chunks")["columns"], *schema.spec("vectors")["columns"][2:]]
    return "\n".join(f"| `{c['name']}` | {c['type']} | {c['doc'] or ''} |" for c in cols)


def render(repo_id: str, s: Stats) -> str:
    template = string.Template((paths.cards_dir() / "dataset_card.md").read_text(encoding="utf-8"))
    return template.substitute(
        pretty_name=f"funes memory {repo_id}",
        size_category=size_category(s.chunks),
        embedding_model=s.embedding_model,
        repo_id=repo_id,
        columns=column_table(),
        stats=stats_block(s),
    )


def plan(current: str | None, repo_id: str, s: Stats) -> tuple[str | None, str]:
    """(new card text or None to leave it, note): created / refreshed / left as a person wrote it."""
    if current is None:
        return render(repo_id, s), "dataset card created"
    start, end = current.find(OPEN), current.find(CLOSE)
    if start < 0 or end < start:
        return None, "dataset card left as is (no funes:stats markers)"
    new = current[:start] + OPEN + "\n" + stats_block(s) + "\n" + current[end:]
    return (new, "dataset card refreshed") if new != current else (None, "")
