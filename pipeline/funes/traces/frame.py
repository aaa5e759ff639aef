"""The canonical Turn/Block model and its one conversion to the turns frame (schemas/turns.json).

Every parser builds `Turn`s and hands them to `build_frame`, so the columns, dtypes, seq
numbering, tool-name backfill and turn_uuid uniqueness are decided in one place.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cache

import polars as pl
import pyarrow as pa

from funes.schema import arrow_schema, columns
from funes.traces import Parsed

# Rust's str::trim strips Unicode White_Space; Python's str.strip() would also strip U+001C..U+001F,
# so "blank" would disagree with upstream on text made of those separators.
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# counted when a readable unit yields nothing, so a report can say why it added no rows
NO_TURNS = "no turns"

_POLARS_TYPES = {"string": pl.String, "int64": pl.Int64}


@dataclass(slots=True)
class Block:
    block_type: str  # text | thinking | tool_use | tool_result
    text: str
    tool_name: str | None = None
    tool_use_id: str | None = None


@dataclass(slots=True)
class Turn:
    """One retained record. `seq` is assigned by build_frame, never by a parser."""

    turn_uuid: str
    role: str
    ts: str
    blocks: list[Block]
    parent_uuid: str | None = None
    seq: int = field(default=-1)


def text_blocks(content: object, part_types: tuple[str, ...] = ("text",)) -> list[Block]:
    """A message's text: a string is one block; a list yields its non-blank parts whose type is in `part_types`."""
    if isinstance(content, str):
        return [] if blank(content) else [Block("text", content)]
    if not isinstance(content, list):
        return []
    return [
        Block("text", e["text"])
        for e in content
        if isinstance(e, dict) and e.get("type") in part_types and not blank(e.get("text"))
    ]


def str_or_none(value: object) -> str | None:
    """A JSON value that must be a string, else None (parsers never trust a field's type)."""
    return value if isinstance(value, str) else None


def blank(text: object) -> bool:
    """True for non-strings and for strings that are empty after a Rust-style trim."""
    return not isinstance(text, str) or not text.strip(WHITESPACE)


def munge_workdir(cwd: object) -> str | None:
    """Claude Code's projects/<dir> naming: every non-ASCII-alphanumeric char becomes '-'."""
    if not isinstance(cwd, str):
        return None
    munged = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd.strip(WHITESPACE))
    return munged if munged.strip("-") else None


def compact_json(value: object) -> str:
    """serde_json's default serialisation: no spaces, key order kept, non-ASCII literal."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def flatten(content: object) -> str:
    """Tool-result content as text: a string as-is; list text parts and bare strings joined by \\n."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for e in content:
        if isinstance(e, str):
            parts.append(e)
        elif isinstance(e, dict) and e.get("type") == "text" and isinstance(e.get("text"), str):
            parts.append(e["text"])
    return "\n".join(parts)


def backfill_tool_names(turns: list[Turn]) -> None:
    """Name every unnamed tool_result after the tool_use with the same call id (last one wins)."""
    names = {
        b.tool_use_id: b.tool_name
        for t in turns
        for b in t.blocks
        if b.block_type == "tool_use" and b.tool_use_id is not None
    }
    for t in turns:
        for b in t.blocks:
            if b.block_type == "tool_result" and b.tool_name is None and b.tool_use_id in names:
                b.tool_name = names[b.tool_use_id]


def number(turns: list[Turn], session_id: str) -> list[Turn]:
    """Keep turns with blocks, give them seq 0..n, and make every turn_uuid unique in the unit.

    An empty or repeated uuid would make two turns share chunk ids (upstream stores only the
    first); such a turn gets the deterministic `<session>-<seq>` instead.
    """
    kept = [t for t in turns if t.blocks]
    seen: set[str] = set()
    for seq, t in enumerate(kept):
        t.seq = seq
        if not t.turn_uuid or t.turn_uuid in seen:
            t.turn_uuid = f"{session_id}-{seq}"
        seen.add(t.turn_uuid)
    return kept


def polars_schema() -> dict[str, type[pl.DataType]]:
    return {f.name: _POLARS_TYPES[str(f.type)] for f in arrow_schema("turns")}


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema())


def path_text(s: str) -> str:
    """A name taken from the file system as valid UTF-8: undecodable bytes (kept by Python as
    surrogate escapes, which Arrow cannot encode) are written `\\xe9`, so two odd names stay
    distinct and the text is printable."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def build_frame(session_id: str, workdir: str, turns: list[Turn], source_path: str, harness: str) -> pl.DataFrame:
    """Retained turns of one session -> one row per block; seq and uuids fixed by `number`."""
    return pl.DataFrame(_columns(session_id, workdir, turns, source_path, harness), schema=polars_schema())


@dataclass(slots=True)
class Rows:
    """The same rows again as plain column lists (schemas/turns.json order), not yet Arrow: the
    indexer selects a unit's tiers over these lists and builds one Arrow table per flush, where a
    table per transcript and an Arrow filter per tier were ~40 % of reading it (bench/README.md
    "## Day zero")."""

    columns: dict[str, list]
    source: bytes | None = None  # the transcript's bytes, so its repo is found without reading it again

    def __len__(self) -> int:
        return len(self.columns["session_id"])

    def table(self) -> pa.Table:
        return pa.Table.from_pydict(self.columns, schema=turns_schema())


def build_rows(
    session_id: str, workdir: str, turns: list[Turn], source_path: str, harness: str, source: bytes | None = None
) -> Rows:
    """The rows of `build_frame` as `Rows` (what the indexer reads); `source`: the file's bytes."""
    return Rows(_columns(session_id, workdir, turns, source_path, harness), source)


@cache
def turns_schema() -> pa.Schema:
    # built once: building it from the spec costs ~20 us, paid per transcript read
    return arrow_schema("turns")


def _columns(session_id: str, workdir: str, turns: list[Turn], source_path: str, harness: str) -> dict[str, list]:
    session_id, workdir, source_path = path_text(session_id), path_text(workdir), path_text(source_path)
    rows = [(t, idx, b) for t in number(turns, session_id) for idx, b in enumerate(t.blocks)]
    n = len(rows)
    cols: dict[str, list] = {
        "session_id": [session_id] * n,
        "workdir": [workdir] * n,
        "turn_uuid": [t.turn_uuid for t, _, _ in rows],
        "parent_uuid": [t.parent_uuid for t, _, _ in rows],
        "seq": [t.seq for t, _, _ in rows],
        "ts": [t.ts for t, _, _ in rows],
        "role": [t.role for t, _, _ in rows],
        "block_idx": [idx for _, idx, _ in rows],
        "block_type": [b.block_type for _, _, b in rows],
        "text": [b.text for _, _, b in rows],
        "tool_name": [b.tool_name for _, _, b in rows],
        "tool_use_id": [b.tool_use_id for _, _, b in rows],
        "source_path": [source_path] * n,
        "harness": [harness] * n,
    }
    return {c: cols[c] for c in columns("turns")}


def concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="vertical") if frames else empty_frame()


def as_arrow(frame: pl.DataFrame) -> pa.Table:
    """The frame as an Arrow table with exactly the schemas/turns.json schema (string, not large_string)."""
    return frame.to_arrow().cast(arrow_schema("turns"))


def parsed(frame: pl.DataFrame | pa.Table | Rows, skipped: Counter) -> Parsed:
    """Wrap a unit's frame (or table); a unit with no rows and no other reason is counted as "no turns"."""
    if not len(frame) and not skipped:
        skipped[NO_TURNS] += 1
    return Parsed(frame, skipped)
