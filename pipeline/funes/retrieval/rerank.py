"""Final scores: cross-encoder relevance of the fused pool (or fused order without one), times recency,
times a prior by block type (`kind_prior`).

Relevance is `sigmoid(logit)` of the cross-encoder on (query, passage) with the passage cut to
RERANK_CHARS; without a reranker it is the fused score on [0, 1] (retrieval/hybrid.py).

Recency is a gentle multiplier, not a sort key: `floor + (1 - floor) * 0.5 ** (age_days / half_life)`.
The original used floor 0 with a 30-day half-life, so a right answer from three months ago lost
88 % of its score to any fresh near-miss; with the default floor the oldest hit keeps
RECENCY_FLOOR of its score, so recency decides between near-equals and never buries a clearly
better passage. `half_life <= 0` disables it; rows with an empty or unparseable timestamp get 1.0
(the original's rule). The floor is a parameter so benchmarks can compare (bench/README.md).
"""

from __future__ import annotations

import re
import time

import numpy as np

from funes import vocab

RERANK_CHARS = 1000  # ~250 word-piece tokens of prose; chunks are <= 1200 chars anyway
RERANK_BATCH = 32
HALF_LIFE_DAYS = 30.0
# bench/README.md "Retrieval quality": on LoCoMo session hit@1 is 55.7 without recency, 55.1 at
# floor 0.98, 50.9 at 0.9 and 15.9 with the original's pure decay; 0.98 keeps recency a tie-breaker
RECENCY_FLOOR = 0.98
# tool calls and tool output weigh this much against prose (text, thinking) of equal relevance: they
# are ~77% of a coding memory's chunks and crowd out the prose that holds the decisions and reasons
# users ask about. Chosen on half A of the dev set (hit@1 + hit@8; 1.0 to 0.3 tried), it lifts
# passage hit@8 55.6 -> 63.6; tool-output passages keep their hit@8 and lose rank within the 8
# (bench/README.md "A prior for prose"); the public suites hold prose only. 1.0 turns it off, and a
# question that names tool output gets 1.0 (RecallRequest.output_cues, asks_for_output).
TOOL_PRIOR = 0.4
# thinking restates the question and plans the answer that the text after it states: a little less
# than text, so the conclusion comes first (same rule, 1.0 to 0.4 tried, after the tool prior: hit@1
# 29.8 -> 32.5, both halves up, the thinking passages too)
THINKING_PRIOR = 0.9


# Nouns and verbs that ask for what a tool printed rather than what was said: a question naming one
# of them ("what error …", "what did the log say …") is about tool output, so recall weighs tool
# blocks as prose (kind_prior gets tool_prior 1.0). Written down once, then measured (bench/README.md
# "A prior for prose" says what it was chosen from); whole lowercase words of the question.
OUTPUT_CUES = frozenset(
    [
        "error",
        "errors",
        "exception",
        "traceback",
        "stacktrace",
        "log",
        "logs",
        "logged",
        "output",
        "printed",
        "print",
        "prints",
        "stderr",
        "stdout",
        "warning",
        "warnings",
    ]
)


def asks_for_output(text: str) -> bool:
    """True when the question names tool output (OUTPUT_CUES)."""
    return any(w in OUTPUT_CUES for w in re.findall(r"[a-z]+", text.lower()))


def truncate(text: str, limit: int = RERANK_CHARS) -> str:
    """The passage as the cross-encoder sees it: the first `limit` chars, cut at a space when one is near."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit - 100, limit)
    return text[: cut if cut > 0 else limit]


def relevance(reranker, query: str, passages: list[str], batch: int = RERANK_BATCH) -> np.ndarray:
    """sigmoid of the cross-encoder logits, batched."""
    if not passages:
        return np.empty(0, dtype=np.float64)
    logits = [
        np.asarray(reranker.score(query, [truncate(p) for p in passages[i : i + batch]]), dtype=np.float64)
        for i in range(0, len(passages), batch)
    ]
    return 1.0 / (1.0 + np.exp(-np.concatenate(logits)))


def recency(
    ts_epoch: np.ndarray, half_life: float = HALF_LIFE_DAYS, floor: float = RECENCY_FLOOR, now: float | None = None
) -> np.ndarray:
    """Multiplier per row in [floor, 1]; 1.0 when disabled or the timestamp is unknown."""
    ts = np.asarray(ts_epoch, dtype=np.float64)
    if half_life is None or half_life <= 0 or not len(ts):
        return np.ones(len(ts))
    now = time.time() if now is None else now
    age_days = np.floor(np.maximum(now - ts, 0.0)) / 86400.0
    decay = np.power(0.5, age_days / half_life)
    floor = min(max(floor, 0.0), 1.0)
    out = floor + (1.0 - floor) * decay
    out[np.isnan(ts)] = 1.0
    return out


def kind_prior(
    codes: np.ndarray, block_types: list[str], tool_prior: float = TOOL_PRIOR, thinking_prior: float = THINKING_PRIOR
) -> np.ndarray:
    """Multiplier per row by block type: `tool_prior` for tool calls and output (their own indexing
    tiers, `vocab.tier_of`), `thinking_prior` for thinking, 1.0 for text."""
    codes = np.asarray(codes)
    if not len(codes):
        return np.ones(0)
    per_code = [
        tool_prior if vocab.tier_of(name) != "text" else thinking_prior if name == "thinking" else 1.0
        for name in block_types
    ]
    return np.asarray(per_code, dtype=np.float64)[codes]
