"""Batch stages over Arrow tables: select tiers, elide + redact whole blocks, split into chunk rows."""

from __future__ import annotations

import pyarrow as pa

from funes import schema, vocab
from funes.ingest import chunk


def select(blocks: pa.Table, tiers: set[str], include_thinking: bool) -> pa.Table:
    """Keep the blocks of the given tiers (thinking optional); block_idx keeps its original number.
    Each tool_result carries the text of its tool call in `command` (redaction reads it), since
    the call may be in another tier pass. The rule is `select_lists`' (`_kept_at`, `_commands_of`),
    computed from the block types and call ids only: the table is filtered with `take`, and only
    the tool calls' texts are read, so a large unit's text never becomes Python strings."""
    kinds = blocks["block_type"].to_pylist()
    keep, at = _kept_at(kinds, tiers, include_thinking)
    kept = blocks if at is None else blocks.take(pa.array(at, pa.int64()))
    if "command" in blocks.column_names:
        return kept
    command = _commands_of(keep, kinds, _call_ids(blocks), at, _texts_at(blocks))
    return kept.append_column(pa.field("command", pa.string()), pa.array(command, pa.string()))


def select_lists(cols: dict[str, list], tiers: set[str], include_thinking: bool) -> dict[str, list]:
    """`select` over a unit's rows as column lists (turns columns, `command` optional): the kept
    rows, and `command` (a given one is kept as is), before any Arrow is built (ingest/blocks.py
    builds it per flush)."""
    kinds = cols["block_type"]
    keep, at = _kept_at(kinds, tiers, include_thinking)
    kept = dict(cols) if at is None else {c: [v[i] for i in at] for c, v in cols.items()}
    if "command" in cols:
        return kept
    texts = cols["text"]
    kept["command"] = _commands_of(keep, kinds, cols.get("tool_use_id"), at, lambda rows: [texts[i] for i in rows])
    return kept


def _kept_at(kinds: list, tiers: set[str], include_thinking: bool) -> tuple[set, list[int] | None]:
    """(the block types kept, the kept rows' positions; None when every row is kept)."""
    types = set(kinds)
    keep = kept_types(types, tiers, include_thinking)
    return keep, (None if keep == types else [i for i, k in enumerate(kinds) if k in keep])


def _commands_of(keep: set, kinds: list, ids: list | None, at: list[int] | None, texts_at) -> list[str | None]:
    """`command` of the kept rows: the call a kept tool_result answers may be in a dropped tier,
    so they are paired over every row. `texts_at(positions)`: those rows' texts."""
    n = len(kinds) if at is None else len(at)
    if "tool_result" not in keep or ids is None:
        return [None] * n
    by_id = _calls(kinds, ids, texts_at)
    if at is not None:
        kinds, ids = [kinds[i] for i in at], [ids[i] for i in at]
    return _answered(by_id, kinds, ids)


def kept_types(types: set, tiers: set[str], include_thinking: bool) -> set:
    # the tier rule is vocab's; it is applied to the few distinct block types, not per row
    return {b for b in types if b is not None and vocab.tier_of(b) in tiers and (include_thinking or b != "thinking")}


def clean(batch: pa.Table, redact, inputs: tuple[list[str], list[str | None]] | None = None) -> pa.Table:
    """Elide data-URI payloads, then redact secrets in each WHOLE block (before any split).
    `inputs`: `scan_inputs(batch)`, when the caller has them already."""
    redacted, kinds = redact(*(inputs if inputs is not None else scan_inputs(batch)))
    out = batch.set_column(batch.schema.get_field_index("text"), "text", pa.array(redacted, pa.string()))
    return out.append_column("redactions", pa.array(kinds, pa.list_(pa.string())))


def scan_inputs(batch: pa.Table) -> tuple[list[str], list[str | None]]:
    """What `clean` hands the redactor: the texts with data-URI payloads elided, and each one's
    tool call (a caller may start the scan of a batch before `clean` runs over it)."""
    return [chunk.elide_data_uris(t) for t in batch["text"].to_pylist()], _commands(batch)


def _call_ids(blocks: pa.Table) -> list | None:
    return blocks["tool_use_id"].to_pylist() if "tool_use_id" in blocks.column_names else None


def _texts_at(blocks: pa.Table):
    """`texts_at` of `_commands_of` over a table: only the rows asked for become Python strings."""
    return lambda rows: blocks["text"].take(pa.array(rows, pa.int64())).to_pylist()


def _calls(kinds: list, ids: list, texts_at) -> dict:
    """call id -> the text of its tool_use (the last one wins); `texts_at(positions)`: their texts."""
    at = [i for i, (k, c) in enumerate(zip(kinds, ids)) if k == "tool_use" and c is not None]
    return dict(zip([ids[i] for i in at], texts_at(at)))


def _answered(by_id: dict, kinds: list, ids: list) -> list[str | None]:
    return [by_id.get(i) if k == "tool_result" and i is not None else None for k, i in zip(kinds, ids)]


def _commands(batch: pa.Table) -> list[str | None]:
    """Each row's `command` (the text of the tool call a tool_result answers): given, else paired over the batch."""
    if "command" in batch.column_names:
        return batch["command"].to_pylist()
    return _commands_of({"tool_result"}, batch["block_type"].to_pylist(), _call_ids(batch), None, _texts_at(batch))


def split(batch: pa.Table) -> pa.Table:
    """Render each block, split it into <=1200-char pieces, and give each piece its coordinate id."""
    out = schema.arrow_schema("chunks")
    cols = [batch[c].to_pylist() for c in ("block_type", "text", "tool_name", "session_id", "turn_uuid", "block_idx")]
    ids: list[str] = []
    texts: list[str] = []
    split_idx: list[int] = []
    owner: list[int] = []  # the block each piece comes from
    make_id, trim, tools, most = chunk.chunk_id, chunk.trim, ("tool_use", "tool_result"), chunk.MAX_CHARS
    # `chunk.render` and `chunk.split` skipped for the usual block, one piece of prose: per-block
    # calls were most of this stage; ids and trimming are chunk's own (one definition of an id)
    for i, (kind, text, tool, sid, turn, block) in enumerate(zip(*cols)):
        whole = trim(chunk.render(kind, text, tool) if kind in tools else text)
        if not whole:
            continue
        pieces = [whole] if len(whole) <= most else chunk.split(whole)
        for j, piece in enumerate(pieces):
            ids.append(make_id(sid, turn, block, j))
            texts.append(piece)
            split_idx.append(j)
            owner.append(i)
    # every chunk column but the three a piece gets of its own is the block's: one take, not a copy
    # per piece, of those columns only (the block texts and commands are most of the bytes)
    own = {"id": ids, "text": texts, "split_idx": split_idx}
    rows = batch.select([f.name for f in out if f.name not in own]).take(pa.array(owner, pa.int64()))
    arrays = [
        pa.array(own[f.name], f.type) if f.name in own else rows[f.name].cast(f.type).combine_chunks() for f in out
    ]
    return pa.Table.from_arrays(arrays, schema=out)
