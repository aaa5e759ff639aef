"""Batch stages over Arrow tables: select tiers, elide + redact whole blocks, split into chunk rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from funes import schema, vocab
from funes.ingest import chunk


def select(blocks: pa.Table, tiers: set[str], include_thinking: bool) -> pa.Table:
    """Keep the blocks of the given tiers (thinking optional); block_idx keeps its original number.
    Each tool_result carries the text of its tool call in `command` (redaction reads it), since
    the call may be in another tier pass."""
    kind = blocks["block_type"]
    types = pc.unique(kind).drop_null().to_pylist()
    blocks = with_commands(blocks, types)
    # the tier rule is vocab's; it is applied to the few distinct block types, not per row
    keep = [b for b in types if vocab.tier_of(b) in tiers and (include_thinking or b != "thinking")]
    if len(keep) == len(types) and kind.null_count == 0:
        return blocks  # every row stays: a filter per unit costs more than its parse
    return blocks.filter(pc.is_in(kind, pa.array(keep, pa.string())))


def clean(batch: pa.Table, redact) -> pa.Table:
    """Elide data-URI payloads, then redact secrets in each WHOLE block (before any split)."""
    texts = [chunk.elide_data_uris(t) for t in batch["text"].to_pylist()]
    redacted, kinds = redact(texts, _commands(batch))
    out = batch.set_column(batch.schema.get_field_index("text"), "text", pa.array(redacted, pa.string()))
    return out.append_column("redactions", pa.array(kinds, pa.list_(pa.string())))


def with_commands(blocks: pa.Table, types: list[str] | None = None) -> pa.Table:
    """`blocks` plus `command`: for a tool_result, the text of the tool_use it answers.
    `types`, when the caller has them, are the distinct block types of `blocks`."""
    if "command" in blocks.column_names:
        return blocks
    if "tool_use_id" not in blocks.column_names or (types is not None and "tool_result" not in types):
        # no call ids, or no output to pair them with
        return blocks.append_column("command", pa.nulls(blocks.num_rows, pa.string()))
    calls_mask = pc.equal(blocks["block_type"], "tool_use")
    calls = blocks.filter(calls_mask).select(["tool_use_id", "text"]).to_pylist()
    by_id = {c["tool_use_id"]: c["text"] for c in calls if c["tool_use_id"] is not None}
    kinds, ids = blocks["block_type"].to_pylist(), blocks["tool_use_id"].to_pylist()
    cmd = [by_id.get(i) if k == "tool_result" and i is not None else None for k, i in zip(kinds, ids)]
    return blocks.append_column("command", pa.array(cmd, pa.string()))


def _commands(batch: pa.Table) -> list[str | None]:
    return (batch if "command" in batch.column_names else with_commands(batch))["command"].to_pylist()


def split(batch: pa.Table) -> pa.Table:
    """Render each block, split it into <=1200-char pieces, and give each piece its coordinate id."""
    cols: dict[str, list] = {name: [] for name in schema.CHUNK_COLUMNS}
    # every chunk column but the three a piece gets of its own is the block's, copied to each piece
    carried = [c for c in schema.CHUNK_COLUMNS if c not in ("id", "text", "split_idx")]
    for r in batch.select([*carried, "text"]).to_pylist():
        pieces = chunk.split(chunk.render(r["block_type"], r["text"], r["tool_name"]))
        for split_idx, piece in enumerate(pieces):
            cols["id"].append(chunk.chunk_id(r["session_id"], r["turn_uuid"], r["block_idx"], split_idx))
            cols["text"].append(piece)
            cols["split_idx"].append(split_idx)
            for name in carried:
                cols[name].append(r[name])
    return pa.table(cols, schema=schema.arrow_schema("chunks"))
