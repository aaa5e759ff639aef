"""Write benchmark sessions to disk as real Claude Code and Codex transcripts, alternating formats.

Layout under a fake home: `.claude/projects/<munged-cwd>/<session-id>.jsonl` (file stem = session
id) and `.codex/sessions/YYYY/MM/DD/rollout-<ts>-<session-id>.jsonl` (session_meta id = session id).
Turn timestamps start at the session's benchmark date, 20 s apart. Blank turns are not written, so
the parser's `seq` (0-based among retained turns, both formats) maps back to a benchmark turn; the
writer returns that map.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from quality_data import Session

TURN_STEP = timedelta(seconds=20)
CLAUDE_VERSION = "2.1.90"
CODEX_VERSION = "0.98.0"
_NS = uuid.UUID("6f1e0a52-2c1b-4d8e-9a57-0f3c5b7e9d11")


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def munge(cwd: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


def claude_root(home: Path) -> Path:
    return home / ".claude" / "projects"


def codex_root(home: Path) -> Path:
    return home / ".codex" / "sessions"


def _kept(session: Session):
    """(seq, turn, ts) for the turns a parser retains (non-blank text)."""
    kept = [t for t in session.turns if t.text.strip()]
    return [(i, t, session.date + i * TURN_STEP) for i, t in enumerate(kept)]


def _dump(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_claude(home: Path, session: Session, cwd: str) -> dict[int, str]:
    records, parent = [], None
    kept = _kept(session)
    for seq, turn, ts in kept:
        uid = str(uuid.uuid5(_NS, f"{session.sid}:{seq}"))
        content = turn.text if turn.role == "user" else [{"type": "text", "text": turn.text}]
        message = {"role": turn.role, "content": content}
        if turn.role == "assistant":
            message = {
                "id": f"msg_{uid.replace('-', '')[:24]}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": content,
                "stop_reason": "end_turn",
            }
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session.sid,
                "version": CLAUDE_VERSION,
                "gitBranch": "main",
                "type": turn.role,
                "message": message,
                "uuid": uid,
                "timestamp": iso(ts),
            }
        )
        parent = uid
    _dump(claude_root(home) / munge(cwd) / f"{session.sid}.jsonl", records)
    return {seq: t.ref for seq, t, _ in kept}


def write_codex(home: Path, session: Session, cwd: str) -> dict[int, str]:
    start = session.date
    records = [
        {
            "timestamp": iso(start),
            "type": "session_meta",
            "payload": {
                "id": session.sid,
                "timestamp": iso(start),
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": CODEX_VERSION,
            },
        }
    ]
    kept = _kept(session)
    for _, turn, ts in kept:
        kind = "input_text" if turn.role == "user" else "output_text"
        records.append(
            {
                "timestamp": iso(ts),
                "type": "response_item",
                "payload": {"type": "message", "role": turn.role, "content": [{"type": kind, "text": turn.text}]},
            }
        )
    day = codex_root(home) / f"{start:%Y}" / f"{start:%m}" / f"{start:%d}"
    _dump(day / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{session.sid}.jsonl", records)
    return {seq: t.ref for seq, t, _ in kept}


def write_haystack(home: Path, sessions: list[Session], cwd: str) -> tuple[dict[tuple[str, int], str], dict[str, int]]:
    """Even-numbered sessions as Claude Code, odd as Codex. Returns ((session, seq) -> turn ref, counts)."""
    turn_map: dict[tuple[str, int], str] = {}
    counts = {"claude_code": 0, "codex": 0}
    for i, s in enumerate(sessions):
        if i % 2 == 0:
            m, counts["claude_code"] = write_claude(home, s, cwd), counts["claude_code"] + 1
        else:
            m, counts["codex"] = write_codex(home, s, cwd), counts["codex"] + 1
        turn_map.update({(s.sid, seq): r for seq, r in m.items()})
    return turn_map, counts
