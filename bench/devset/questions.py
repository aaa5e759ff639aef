"""The dev set's questions: the record format, loading it, and the whitespace rule both checkers share.

One JSON object per line of questions.jsonl: {id, question, session_id, evidence, harness, kind,
long_session}. `evidence` is a short verbatim piece of one stored chunk of that session; a hit
counts when it comes from `session_id` and its text contains the evidence after both are
whitespace-normalised (runs of whitespace -> one space), so re-wrapped output still matches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parent / "questions.jsonl"
KINDS = ("why", "how", "when", "what", "identifier", "multilingual")
HARNESSES = ("claude_code", "codex", "pi", "hermes")
FIELDS = ("id", "question", "session_id", "evidence", "harness", "kind", "long_session")
MAX_EVIDENCE = 200


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    session_id: str
    evidence: str
    harness: str
    kind: str
    long_session: bool


def normalise(text: str) -> str:
    return " ".join(text.split())


def problems(record: dict) -> list[str]:
    """What is wrong with one record's shape (empty when it is well-formed)."""
    out = [f"missing field {f}" for f in FIELDS if f not in record]
    out += [f"unknown field {f}" for f in record if f not in FIELDS]
    if out:
        return out
    if not all(isinstance(record[f], str) and record[f].strip() for f in FIELDS[:6]):
        out.append("id, question, session_id, evidence, harness and kind must be non-empty strings")
    elif len(record["evidence"]) > MAX_EVIDENCE:
        out.append(f"evidence is {len(record['evidence'])} chars (at most {MAX_EVIDENCE})")
    if record.get("kind") not in KINDS:
        out.append(f"kind {record.get('kind')!r} is not one of {', '.join(KINDS)}")
    if record.get("harness") not in HARNESSES:
        out.append(f"harness {record.get('harness')!r} is not one of {', '.join(HARNESSES)}")
    if not isinstance(record.get("long_session"), bool):
        out.append("long_session must be true or false")
    return out


def load(path: Path = QUESTIONS) -> list[Question]:
    """Every question of the file; raises ValueError naming the first malformed or duplicate line."""
    out, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            raise ValueError(f"{path.name}:{n}: not JSON ({e})") from None
        bad = problems(record) if isinstance(record, dict) else ["not a JSON object"]
        if bad:
            raise ValueError(f"{path.name}:{n}: {'; '.join(bad)}")
        if record["id"] in seen:
            raise ValueError(f"{path.name}:{n}: duplicate id {record['id']}")
        seen.add(record["id"])
        out.append(Question(**record))
    return out


def is_hit(q: Question, session_id: str, text: str) -> bool:
    return session_id == q.session_id and normalise(q.evidence) in normalise(text)
