"""What `funes curate` prints: the decision summary, the list of sessions waiting, one session's preview."""

from __future__ import annotations

from funes.render.agent import field, preview
from funes.results import Reviewed, SessionView

PREVIEW_TURNS = 4  # user turns shown per session: enough to recognise it, short enough to decide fast
PREVIEW_WIDTH = 100
PROMPT = "include, exclude, skip or quit? [i/e/s/q] "


def summary(ship: int, waiting: int, grown: int, excluded: int) -> str:
    return f"ships {ship} sessions; {waiting} wait for review ({grown} grew since); {excluded} excluded\n"


def waiting_list(remote: str, sessions: list[str]) -> str:
    """Not on a terminal: name what waits and how to decide it, so a script never hangs on a question."""
    if not sessions:
        return ""
    lines = [f"  review: {field(s)}\n" for s in sessions]
    lines.append(f"decide with `funes curate {remote} --include SESSION` or `--exclude SESSION`,\n")
    lines.append(f"or run `funes curate {remote}` on a terminal to review each session's user turns\n")
    return "".join(lines)


def session_preview(v: SessionView, index: int, total: int) -> str:
    when = field(v.started[:16].replace("T", " ")) or "no time"
    grew = "  (grew since review)" if v.grown else ""
    out = [
        f"\n[{index}/{total}] {field(v.harness)}  {field(v.workdir)}  {when}  {v.turns} turns{grew}\n",
        f"  session {field(v.session_id)}\n",
    ]
    for text in v.user_turns[:PREVIEW_TURNS]:
        line = preview(text, PREVIEW_WIDTH)
        out.append(f"  > {line}{'…' if len(' '.join(text.split())) > PREVIEW_WIDTH else ''}\n")
    if not v.user_turns:
        out.append("  (no user text)\n")
    elif len(v.user_turns) > PREVIEW_TURNS:
        out.append(f"  … {len(v.user_turns) - PREVIEW_TURNS} more user turns (funes get shows them)\n")
    return "".join(out)


def review_summary(r: Reviewed) -> str:
    if not r.total:
        return "nothing waits for review\n"
    tail = f"; {r.left} not reviewed (run it again to continue)" if r.left else ""
    return f"reviewed: {r.included} included, {r.excluded} excluded, {r.skipped} skipped{tail}\n"
