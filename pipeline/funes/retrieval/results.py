"""The values recall and get return (plain dataclasses; render.py turns them into text)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    score: float  # relevance x recency, what the header prints
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
