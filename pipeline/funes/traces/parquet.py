"""Agent-traces Parquet (one row per session, `messages` = JSON strings) -> the turns frame.

As upstream-spec 1.7: `session_id` and a `messages` column of type list<string> are required;
`sent_at`, `harness`, `file_path`, `metadata` are optional string columns. No tool_result block
is ever derived (a role:"tool" message's content is text). Changed from upstream: rows repeating
a session id continue that session (seq and the parent chain run on) instead of restarting at
`<session>-0` and colliding; unparseable message elements are counted as "malformed json". The
unit signature is `<size>:<mtime_ns>` (upstream always re-reads). `parse_table` is the entry
point for Hub shards too (the fallback workdir is then the shard's stem).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from funes.errors import SourceError
from funes.traces import Parsed, Unit
from funes.traces.frame import Block, Turn, blank, build_frame, compact_json, concat, munge_workdir, parsed
from funes.traces.jsonl import MALFORMED, file_signature

HARNESS = "parquet"  # the unit's kind; each row's own `harness` fills the column
_OPTIONAL = ("sent_at", "harness", "file_path", "metadata")


def units(root: Path, limit: int | None = None) -> list[Unit]:
    sig, mtime = file_signature(root)
    return [Unit(key=str(root), harness=HARNESS, path=root, signature=sig, mtime=mtime)]


def read(unit: Unit) -> Parsed:
    return read_file(unit.path)


def read_file(path: Path, source: str | None = None) -> Parsed:
    """One Parquet file; `source` names it in source_path when a row has no file_path (a Hub shard's URI)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise SourceError(f"cannot read parquet {source or path}: {e}") from e
    return parse_table(table, path, source)


@dataclass
class ShardsSource:
    """A dataset's Parquet shards fetched one at a time (a Hub trace import); one unit per shard.

    The unit's signature is the shard's content id, so a re-run skips every shard it imported;
    `fetch(path_in_repo)` returns a local copy (the HF cache), called only for shards still owed.
    """

    uri: str  # hf://datasets/owner/name
    shards: list[tuple[str, str]]  # (path in the repo, content id), sorted by path
    fetch: Callable[[str], Path]
    harness: str = field(default=HARNESS, init=False)

    @property
    def root(self) -> str:
        return self.uri

    def describe(self) -> str:
        return f"importing {len(self.shards)} parquet shard(s) of {self.uri}"

    def units(self, limit: int | None = None) -> list[Unit]:
        return [Unit(key=f"{self.uri}/{p}", harness=HARNESS, path=Path(p), signature=oid) for p, oid in self.shards]

    def read(self, unit: Unit) -> Parsed:
        return read_file(self.fetch(str(unit.path)), unit.key)


def check_schema(schema: pa.Schema) -> None:
    if "session_id" not in schema.names:
        raise SourceError("parquet has no session_id column")
    if "messages" not in schema.names:
        raise SourceError("parquet has no messages column")
    kind = schema.field("messages").type
    if not pa.types.is_list(kind) or not _is_string(kind.value_type):  # a LargeList is refused, as upstream
        raise SourceError(f"parquet messages column must be list<string>, not {kind}")


def parse_table(table: pa.Table, path: Path, source: str | None = None) -> Parsed:
    """Every row of an agent-traces table; rows of one session id are read as one session.

    Fallbacks: workdir = the file's stem, source_path = `source` or the file's path.
    """
    check_schema(table.schema)
    skipped: Counter = Counter()
    sessions: dict[str, dict] = {}
    for row in table.select(_columns(table.schema)).to_pylist():
        sid, messages = row.get("session_id"), row.get("messages")
        if isinstance(sid, str) and messages is not None:
            session = sessions.setdefault(sid, _session_of(row, path, source))
            session["turns"].extend(row_turns(messages, row.get("sent_at") or "", skipped))
    frames = [_frame(sid, s) for sid, s in sessions.items()]
    return parsed(concat(frames), skipped)


def _columns(schema: pa.Schema) -> list[str]:
    optional = [c for c in _OPTIONAL if c in schema.names and _is_string(schema.field(c).type)]
    return ["session_id", "messages", *optional]


def _is_string(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _session_of(row: dict, path: Path, source: str | None) -> dict:
    """A session's constant fields come from its first row."""
    return {
        "workdir": metadata_workdir(row.get("metadata")) or path.stem,
        "source_path": row.get("file_path") or source or str(path),
        "harness": row.get("harness") or "",
        "turns": [],
    }


def _frame(sid: str, session: dict):
    turns = session["turns"]
    for seq, t in enumerate(turns):  # turns here all have blocks, so seq is final
        t.turn_uuid = f"{sid}-{seq}"
        t.parent_uuid = f"{sid}-{seq - 1}" if seq else None
    return build_frame(sid, session["workdir"], turns, session["source_path"], session["harness"])


def metadata_workdir(metadata: object) -> str | None:
    try:
        meta = json.loads(metadata) if isinstance(metadata, str) else None
    except ValueError:
        return None
    return munge_workdir(meta.get("cwd")) if isinstance(meta, dict) else None


def row_turns(messages: list, ts: str, skipped: Counter) -> list[Turn]:
    turns = []
    for element in messages:
        if element is None:
            continue
        try:
            message = json.loads(element)
        except ValueError:
            skipped[MALFORMED] += 1
            continue
        blocks = message_blocks(message) if isinstance(message, dict) else []
        if blocks:
            role = message.get("role")
            turns.append(Turn("", role if isinstance(role, str) else "", ts, blocks))
    return turns


def message_blocks(message: dict) -> list[Block]:
    blocks = []
    if not blank(message.get("reasoning_content")):
        blocks.append(Block("thinking", message["reasoning_content"]))
    if not blank(message.get("content")):
        blocks.append(Block("text", message["content"]))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        fn: dict = call["function"] if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
        args = fn.get("arguments")
        text = args if isinstance(args, str) else "{}" if args is None else compact_json(args)
        name = fn.get("name")
        blocks.append(Block("tool_use", text, name if isinstance(name, str) else None, None))
    return blocks
