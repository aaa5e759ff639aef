"""Hermes agent's SQLite state (~/.hermes/state.db) -> one unit per session -> the turns frame.

As upstream-spec 1.6, with these changes:
- the database is opened read-only and immutable, so SQLite never creates or touches a
  -journal, -wal or -shm file next to it (not even in a read-only directory);
- unit keys are `hermes:<db path>#<session id>` (upstream keys by bare session id, so two
  databases could collide in state.json);
- columns are probed per schema version: a database without `sessions.cwd`,
  `messages.reasoning_content` (schema v6) or any other optional column reads as NULL there;
- a damaged database that can still be read by message id (a broken table b-tree under an intact
  index, as in a real `state.db.backup`) is read row by row; rows that cannot be read are counted
  as "corrupt row". A file that is not a database at all raises SourceError for that unit;
- tool results with no `tool_name` are named after their call (as for Claude and Codex);
- a session read during which the database file changed (hermes writing or checkpointing) is
  discarded and read again (counted), so a torn read never stores a phantom turn or a shifted seq.
The `<message helpers>` below are shared with hermes_logs.py (the older per-session log files).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections import Counter
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from funes.errors import SourceError
from funes.traces import Parsed, Unit
from funes.traces.frame import (
    Block,
    Turn,
    backfill_tool_names,
    blank,
    build_frame,
    compact_json,
    flatten,
    munge_workdir,
    parsed,
    str_or_none,
)

HARNESS = "hermes"
FALLBACK_WORKDIR = "hermes"  # upstream's literal fallback: hermes records no project dir
CORRUPT_ROW = "corrupt row"
CHANGED_MID_READ = "read again: database changed mid-read"
READ_ATTEMPTS = 5
_FIELDS = (
    "id", "role", "content", "tool_call_id", "tool_calls", "tool_name",
    "timestamp", "reasoning", "reasoning_content",
)  # fmt: skip
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def db_path(root: Path) -> Path:
    return root if root.is_file() else root / "state.db"


def connect(db: Path) -> sqlite3.Connection:
    """Read-only and immutable: SQLite creates no journal/WAL/SHM file and takes no lock.

    Even a plain `mode=ro` reader of a WAL database creates (or writes) `-wal`/`-shm` beside it,
    which must never happen to an agent's own state. The price: messages still sitting in a live
    hermes WAL are seen only after hermes checkpoints them (the watermark then changes).
    """
    if not db.is_file():
        raise SourceError(f"no hermes database at {db}")
    conn = sqlite3.connect(f"file:{quote(str(db.absolute()))}?mode=ro&immutable=1", uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as e:
        conn.close()
        raise SourceError(f"{db} is not a readable hermes database: {e}") from e
    return conn


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))}


def units(root: Path, limit: int | None = None) -> list[Unit]:
    """One unit per session with messages, highest message id (the watermark) first; a listing
    torn by a write landing mid-read is done again (as `read` does)."""
    db = db_path(root)
    for attempt in range(READ_ATTEMPTS):
        before = _stamp(db)
        try:
            rows = _list_sessions(db)
        except SourceError:
            if _stamp(db) == before or attempt == READ_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
            continue
        if _stamp(db) == before:
            break
        time.sleep(0.05 * (attempt + 1))
    rows.sort(key=lambda r: (-(r[1] or 0), str(r[0])))
    if limit is not None:
        rows = rows[: max(limit, 0)]
    return [session_unit(db, str(sid), watermark, last) for sid, watermark, last in rows]


def _list_sessions(db: Path) -> list:
    with closing(connect(db)) as conn:
        try:
            return conn.execute(
                "SELECT session_id, MAX(id), MAX(timestamp) FROM messages GROUP BY session_id"
            ).fetchall()
        except sqlite3.Error as e:
            raise SourceError(f"cannot list sessions in {db}: {e}") from e


def session_unit(db: Path, session: str, watermark: int | None, last: float | None) -> Unit:
    mtime = last if isinstance(last, (int, float)) else 0.0
    return Unit(f"hermes:{db}#{session}", HARNESS, db, str(watermark), float(mtime), session)


def _stamp(db: Path) -> tuple:
    """What changes when hermes writes or checkpoints: the database file and its WAL."""
    out: list[tuple[int, int, int] | None] = []
    for p in (db, db.with_name(db.name + "-wal")):
        try:
            st = p.stat()
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def read(unit: Unit) -> Parsed:
    """One session, read while the database holds still. An immutable reader takes no lock, so a
    checkpoint that lands mid-read could hand it a torn view (a row twice, a shifted seq): such a
    read is thrown away and done again, and a database that never holds still fails this unit
    alone (it stays owed, so the next index reads it)."""
    for attempt in range(READ_ATTEMPTS):
        before = _stamp(unit.path)
        try:
            result = _read_once(unit)
        except SourceError:
            if _stamp(unit.path) == before:
                raise
            result = None
        if result is not None and _stamp(unit.path) == before:
            if attempt:
                result.skipped[CHANGED_MID_READ] += attempt
            return result
        time.sleep(0.05 * (attempt + 1))
    raise SourceError(f"{unit.path} kept changing while session {unit.session} was read; it is read at the next index")


def _read_once(unit: Unit) -> Parsed:
    skipped: Counter = Counter()
    with closing(connect(unit.path)) as conn:
        rows = session_rows(conn, unit.session or "", skipped)
        cwd = session_cwd(conn, unit.session or "")
    turns = [t for t in (row_turn(r) for r in rows) if t is not None]
    backfill_tool_names(turns)
    workdir = munge_workdir(cwd) or FALLBACK_WORKDIR
    return parsed(build_frame(unit.session or "", workdir, turns, str(unit.path), HARNESS), skipped)


def select_list(conn: sqlite3.Connection) -> str:
    """The message columns this schema version has; missing optional ones read as NULL."""
    have = columns(conn, "messages")
    return ", ".join(f if f in have else f"NULL AS {f}" for f in _FIELDS)


def session_rows(conn: sqlite3.Connection, session: str, skipped: Counter) -> list[dict]:
    """Messages in id order (hermes timestamps are not monotonic); row by row if the table is damaged."""
    cols = select_list(conn)
    try:
        cur = conn.execute(f"SELECT {cols} FROM messages WHERE session_id = ? ORDER BY id", (session,))
        return [dict(zip(_FIELDS, r)) for r in cur.fetchall()]
    except sqlite3.DatabaseError:
        pass
    try:
        cur = conn.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY id", (session,))
        ids = [r[0] for r in cur.fetchall()]
    except sqlite3.DatabaseError as e:
        raise SourceError(f"cannot read session {session}: {e}") from e
    return [r for r in (_row_by_id(conn, cols, i, skipped) for i in ids) if r is not None]


def _row_by_id(conn: sqlite3.Connection, cols: str, rowid: int, skipped: Counter) -> dict | None:
    try:
        row = conn.execute(f"SELECT {cols} FROM messages WHERE id = ?", (rowid,)).fetchone()
    except sqlite3.DatabaseError:
        skipped[CORRUPT_ROW] += 1
        return None
    return dict(zip(_FIELDS, row)) if row else None


def session_cwd(conn: sqlite3.Connection, session: str) -> str | None:
    if "cwd" not in columns(conn, "sessions"):
        return None
    try:
        row = conn.execute("SELECT cwd FROM sessions WHERE id = ?", (session,)).fetchone()
    except sqlite3.DatabaseError:
        return None  # a damaged sessions table only costs the workdir
    return row[0] if row and isinstance(row[0], str) else None


def row_turn(row: dict) -> Turn | None:
    blocks = message_blocks(row)
    if blocks is None:
        return None
    return Turn(str(row["id"]), row["role"], rfc3339(row.get("timestamp")), blocks)


# <message helpers> shared by state.db rows and session-log messages (same OpenAI-chat fields)


def message_blocks(msg: dict) -> list[Block] | None:
    """Blocks of one hermes message by role; None for roles that are not conversation (system...)."""
    role = msg.get("role")
    if role == "user":
        return _text_blocks("text", msg.get("content"))
    if role == "assistant":
        # upstream parity: an empty-string reasoning_content shadows a non-empty reasoning
        thinking = msg.get("reasoning_content")
        thinking = msg.get("reasoning") if thinking is None else thinking
        blocks = _text_blocks("thinking", thinking) + _text_blocks("text", msg.get("content"))
        return blocks + tool_call_blocks(msg.get("tool_calls"))
    if role == "tool":
        name, call = msg.get("tool_name"), msg.get("tool_call_id")
        texts = _text_blocks("tool_result", msg.get("content"))
        return [Block("tool_result", b.text, str_or_none(name), str_or_none(call)) for b in texts]
    return None


def _text_blocks(kind: str, content: object) -> list[Block]:
    text = content if isinstance(content, str) else flatten(content)
    return [] if blank(text) else [Block(kind, text)]


def tool_call_blocks(raw: object) -> list[Block]:
    """`tool_calls` as stored (a JSON string in state.db, a list in logs) -> tool_use blocks."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    if not isinstance(raw, list):
        return []
    return [_call_block(c) for c in raw if isinstance(c, dict)]


def _call_block(call: dict) -> Block:
    fn: dict = call["function"] if isinstance(call.get("function"), dict) else {}
    args = fn.get("arguments")
    text = args if isinstance(args, str) else "{}" if args is None else compact_json(args)
    return Block("tool_use", text, str_or_none(fn.get("name")), str_or_none(call.get("id")))


def rfc3339(ts: object) -> str:
    """Epoch seconds -> `YYYY-MM-DDTHH:MM:SS[.mmm|.uuuuuu|.nnnnnnnnn]+00:00` (chrono's auto style)."""
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not math.isfinite(ts):
        return ""
    secs = math.floor(ts)
    nanos = min(int((ts - secs) * 1e9), 999_999_999)
    try:
        d = datetime.fromtimestamp(secs, UTC)
    except (OverflowError, OSError, ValueError):
        return ""  # outside what a datetime can hold: upstream also writes ""
    base = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
    return base + _fraction(nanos) + "+00:00"


def _fraction(nanos: int) -> str:
    if nanos == 0:
        return ""
    if nanos % 1_000_000 == 0:
        return f".{nanos // 1_000_000:03d}"
    if nanos % 1_000 == 0:
        return f".{nanos // 1_000:06d}"
    return f".{nanos:09d}"
