"""The words funes stores and accepts: harness facets and their CLI spellings, block types, indexing tiers.

Defined once here and imported everywhere (parsers, index, recall, render, cli). Pure Python with
no imports beyond `funes.errors`, so `cli.py` can build its choices from it without slowing `--help`.
Adding an agent is one line in `CLI_NAMES` (plus its parser module).
"""

from __future__ import annotations

from funes.errors import UsageError

# the stored `harness` facet -> how the CLI and every human-facing line spell it, in sweep order
CLI_NAMES = {"claude_code": "claude", "codex": "codex", "pi": "pi", "hermes": "hermes"}
FACETS = tuple(CLI_NAMES)
# every spelling the CLI accepts -> the stored facet (the facet itself is accepted too)
HARNESSES = {**{cli: facet for facet, cli in CLI_NAMES.items()}, **{facet: facet for facet in CLI_NAMES}}
PARQUET = "parquet"  # the harness of a unit read from a Parquet trace export (rows keep their own)

BLOCK_TYPES = ("text", "thinking", "tool_use", "tool_result")
# indexing tiers in the order a budgeted run stores them; a unit's ledger level is the last tier it holds
TIERS = ("text", "tool_use", "tool_result")


def parse_harness(value: str | None) -> str | None:
    """A CLI spelling -> the stored facet (`claude` and `claude_code` -> `claude_code`); blank -> None."""
    if value is None or not value.strip():
        return None
    facet = HARNESSES.get(value.strip().lower())
    if facet is None:
        raise UsageError(f'unknown harness "{value}" (expected {_listing(tuple(CLI_NAMES.values()), "or")})')
    return facet


def cli_name(facet: str | None) -> str:
    """How a stored facet is shown to people (`claude_code` -> `claude`); unknown facets as they are."""
    return CLI_NAMES.get(facet or "", facet or "unknown")


def parse_block_type(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    if value.strip() not in BLOCK_TYPES:
        raise UsageError(f'unknown block type "{value}" (expected {", ".join(BLOCK_TYPES)})')
    return value.strip()


def tier_of(block_type: str) -> str:
    """The indexing tier a block is stored in: tool calls and tool output are their own, the rest is text."""
    return block_type if block_type in ("tool_use", "tool_result") else "text"


def _listing(words: tuple[str, ...], last: str) -> str:
    return ", ".join(words[:-1]) + f", {last} {words[-1]}"
