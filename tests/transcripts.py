"""Writers for small synthetic Claude Code transcripts used by the index tests."""

from __future__ import annotations

import json
from pathlib import Path


def claude_record(sid: str, i: int, text: str, cwd: str = "/home/u/proj", role: str | None = None) -> dict:
    role = role or ("user" if i % 2 == 0 else "assistant")
    content = text if role == "user" else [{"type": "text", "text": text}]
    return {
        "type": role,
        "sessionId": sid,
        "cwd": cwd,
        "uuid": f"{sid}-u{i}",
        "parentUuid": f"{sid}-u{i - 1}" if i else None,
        "timestamp": f"2026-05-{1 + i % 28:02d}T10:{i % 60:02d}:00.000Z",
        "message": {"role": role, "content": content},
    }


def write_claude_session(root: Path, sid: str, texts: list[str], project: str = "-home-u-proj") -> Path:
    path = root / project / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps(claude_record(sid, i, t)) + "\n")
    return path


def append_claude_turn(path: Path, sid: str, i: int, text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(claude_record(sid, i, text)) + "\n")


def prose(seed: int, words: int) -> str:
    vocab = [
        "parser",
        "streaming",
        "batch",
        "index",
        "memory",
        "recall",
        "session",
        "turn",
        "decision",
        "latency",
        "import",
        "bank",
        "statement",
        "ledger",
        "flaky",
        "coupon",
        "fixture",
        "expiry",
        "checkout",
        "cache",
        "vector",
        "lexical",
        "fusion",
    ]
    return " ".join(vocab[(seed * 7 + k * 13) % len(vocab)] + ("." if k % 17 == 16 else "") for k in range(words))
