"""The values commands return and render turns into text: recall hits, get's turns, status, index report.

Plain dataclasses at the bottom layer (no funes imports), so every layer above, render included,
can name them in its signatures.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Neighbor:
    role: str
    block_type: str
    seq: int
    text: str


@dataclass
class Hit:
    row: int  # position in chunks.lance
    id: str
    text: str
    session_id: str
    workdir: str
    turn_uuid: str
    ts: str
    block_type: str
    seq: int
    harness: str
    role: str
    score: float  # relevance x recency x the kind prior (rerank.kind_prior), what the header prints
    relevance: float = 0.0  # sigmoid(cross-encoder logit), or the normalised fused score
    recency: float = 1.0
    ranks: dict[str, int] = field(default_factory=dict)  # leg -> rank ("vector", "bm25")
    neighbors: list[Neighbor] = field(default_factory=list)
    memory: str | None = None  # label of the memory holding it, when a recall read several


@dataclass
class RecallResult:
    query: str
    label: str  # the --memory label the `→ get` lines carry
    hits: list[Hit]
    note: str | None = None
    reranker: str | None = None  # model id when the pool was cross-encoded
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    pool: int = 0  # fused candidates considered


@dataclass
class Block:
    block_type: str
    tool_name: str | None
    text: str  # the block's pieces stitched back together


@dataclass
class Turn:
    ts: str
    role: str
    seq: int
    turn_uuid: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class GetResult:
    session_id: str
    turn_uuid: str
    label: str
    window: int
    turns: list[Turn]
    note: str | None = None


# ---- status and index ---------------------------------------------------------------------


@dataclass
class Status:
    """What `funes status` reports about one memory."""

    label: str
    state: str  # a memory.State value: ready, empty or missing (status refuses the others)
    message: str = ""  # what to do when not ready
    chunks: int = 0
    sessions: int = 0
    by_harness: dict[str, int] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)
    vectors: int = 0
    pending_vectors: int = 0
    last_indexed: float | None = None  # epoch seconds of the chunks table's head version
    index: dict[str, Any] = field(default_factory=dict)  # memory.indexes.freshness(): rows covered vs stored
    embedder: str = ""
    embedder_note: str = ""  # how it runs (models.embedder_status): backend, bulk bf16 or why not
    vector_input: str = ""  # what the vectors embed (memory/contexts.py VECTOR_INPUT, or the bare text)
    stale_vectors: int = 0  # vectors still of an older input (`funes index` re-embeds them)
    reranker: str | None = None
    reranker_note: str = ""
    held_back: int = 0  # chunks the publish gate would hold back (secrets found on the outgoing text)
    held_kinds: dict[str, int] = field(default_factory=dict)  # kind -> blocks
    gate: str = ""  # "" when the gate can run, else why publishing is blocked
    index_problem: str | None = None  # why the indexes do not answer for the tables (repaired by the next writer)
    scanners: dict[str, str] = field(default_factory=dict)  # secret scanner engine -> version or "unavailable: …"
    now: float = 0.0
    last_hook: dict[str, Any] | None = None  # the last hook worker run (commands/sync.py), None before any
    review: dict[str, int] = field(default_factory=dict)  # project memory -> local sessions waiting for review
    remote: dict[str, Any] = field(default_factory=dict)  # a remote's commit, offline, shards, published/cache bytes


@dataclass
class Tally:
    """What one harness contributed to an index run."""

    sessions: set[str] = field(default_factory=set)
    turns: int = 0
    chunks: int = 0


@dataclass
class IndexReport:
    """What `funes index` did: sources, per-harness tallies, skips, failures, redactions, timings."""

    sources: list[str] = field(default_factory=list)
    tallies: dict[str, Tally] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> lines/records skipped
    failed: list[tuple[str, str]] = field(default_factory=list)  # unit key, reason
    redacted: Counter[str] = field(default_factory=Counter)
    units_total: int = 0
    units_current: int = 0
    chunks_added: int = 0
    vectors_added: int = 0
    vectors_pending: int = 0
    vectors_reembedded: int = 0  # old vectors replaced by ones of the current input (commands/reembed.py)
    vectors_stale: int = 0  # vectors still of an older input after this run
    budget_stopped: bool = False
    searchable_at: float | None = None  # seconds until the new text was in the lexical index
    tier_done: dict[str, float] = field(default_factory=dict)  # tier -> seconds until it was searchable
    sample: bool = False
    repairs: list[str] = field(default_factory=list)  # what this run found damaged and repaired
    elapsed: float = 0.0


@dataclass
class SessionView:
    """One session waiting for review in `funes curate`, as the person sees it before deciding."""

    session_id: str
    harness: str
    workdir: str
    started: str  # the session's first timestamp, as stored
    turns: int
    user_turns: list[str] = field(default_factory=list)  # user text turns, in order
    grown: bool = False  # included once, holds more chunks since


@dataclass
class Reviewed:
    """What one interactive `funes curate` review decided."""

    total: int = 0  # sessions that waited when the review began
    included: int = 0
    excluded: int = 0
    skipped: int = 0
    left: int = 0  # not reached: quit or end of input
