"""Benchmark loaders: LoCoMo and LongMemEval files -> haystacks of dated sessions and gold-labelled questions.

Read-only over /work/shared/benchdata (or $FUNES_BENCHDATA); nothing here is copied into the repo.
Mapping rules follow the SOURCE.md notes shipped next to each data set:
- LoCoMo: one haystack per conversation; session `locomo-<sample>-s<N>`; turn text
  `"<speaker>: <text>"` (+ `" [image: <blip caption>]"`); speaker_a -> user, speaker_b -> assistant;
  gold turns = repaired dia_ids (`D:?(\\d+):(\\d+)`), unknown ids dropped; questions with no gold skipped;
  no question date, so "now" = the conversation's last session date.
- LongMemEval: gold sessions = answer_session_ids, gold turns = `has_answer` turns; `_abs`
  (abstention) questions excluded; "now" = question_date. Pooled haystacks dedupe sessions by id and
  keep the earliest date.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

BENCHDATA = Path(os.environ.get("FUNES_BENCHDATA", "/work/shared/benchdata"))
LME_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)


@dataclass
class Turn:
    role: str  # user | assistant
    text: str
    ref: str  # benchmark turn id: "<session>#<0-based index in the benchmark session>"


@dataclass
class Session:
    sid: str
    date: datetime
    turns: list[Turn]


@dataclass
class Question:
    qid: str
    text: str
    category: str
    gold_sessions: set[str]
    gold_turns: set[str] = field(default_factory=set)  # Turn.ref values; empty = no turn-level gold
    now: datetime | None = None  # the question's own date (recency "now")


@dataclass
class Haystack:
    name: str
    sessions: list[Session]
    questions: list[Question]


def ref(sid: str, index: int) -> str:
    return f"{sid}#{index}"


# ---- LoCoMo ---------------------------------------------------------------------------------

_DIA = re.compile(r"D:?(\d+):(\d+)")


def locomo_date(text: str) -> datetime:
    """`"1:56 pm on 8 May, 2023"` -> aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_haystacks(path: Path | None = None) -> list[Haystack]:
    samples = json.loads((path or BENCHDATA / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    return [_locomo_haystack(s) for s in samples]


def _locomo_haystack(sample: dict) -> Haystack:
    conv, name = sample["conversation"], sample["sample_id"]
    roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
    sessions, dia = [], {}  # dia: "D<N>:<k>" -> turn ref
    n_max = max(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    for n in range(1, n_max + 1):
        turns_raw = conv.get(f"session_{n}")
        if not turns_raw:  # conv-26 has dates for sessions with no content
            continue
        sid = f"locomo-{name}-s{n:02d}"
        turns = []
        for i, t in enumerate(turns_raw):
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [image: {t['blip_caption']}]"
            turns.append(Turn(roles.get(t["speaker"], "user"), text, ref(sid, i)))
            dia[t["dia_id"]] = ref(sid, i)
        sessions.append(Session(sid, locomo_date(conv[f"session_{n}_date_time"]), turns))
    now = max(s.date for s in sessions)
    questions = []
    for i, qa in enumerate(sample["qa"]):
        ids = {f"D{int(a)}:{int(b)}" for e in qa.get("evidence", []) for a, b in _DIA.findall(e)}
        gold = {dia[d] for d in ids if d in dia}
        if not gold:
            continue
        questions.append(
            Question(
                qid=f"{name}/q{i:03d}",
                text=str(qa["question"]),
                category=f"cat{qa['category']}",
                gold_sessions={g.split("#")[0] for g in gold},
                gold_turns=gold,
                now=now,
            )
        )
    return Haystack(f"locomo/{name}", sessions, questions)


# ---- LongMemEval ------------------------------------------------------------------------------


def lme_date(text: str) -> datetime:
    """`"2023/05/30 (Tue) 23:40"` -> aware UTC datetime."""
    return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def lme_files(split: str) -> list[Path]:
    """Question files of `oracle` or `s_subset`, in question_id order."""
    files = (BENCHDATA / "longmemeval" / split).glob("*.json")
    return sorted(files, key=lambda p: p.stem.split("_", 1)[1])


def lme_question_and_sessions(path: Path) -> tuple[dict, list[Session]]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    for sid, date, turns in zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]):
        sessions.append(
            Session(sid, lme_date(date), [Turn(t["role"], str(t["content"]), ref(sid, i)) for i, t in enumerate(turns)])
        )
    return raw, sessions


def _lme_question(raw: dict, sessions: list[Session]) -> Question | None:
    if raw["question_id"].endswith("_abs"):
        return None
    gold_sessions = set(raw["answer_session_ids"])
    gold_turns = set()
    for s, turns in zip(sessions, raw["haystack_sessions"]):
        if s.sid in gold_sessions:
            gold_turns |= {ref(s.sid, i) for i, t in enumerate(turns) if t.get("has_answer")}
    return Question(
        qid=raw["question_id"],
        text=str(raw["question"]),
        category=raw["question_type"],
        gold_sessions=gold_sessions,
        gold_turns=gold_turns,
        now=lme_date(raw["question_date"]),
    )


def lme_sample(files: list[Path], per_type: int | None) -> list[Path]:
    """The first `per_type` answerable files of each question type (None = all), type order kept."""
    if per_type is None:
        return files
    picked, counts = [], {}
    for f in files:
        qid = f.stem.split("_", 1)[1]
        if qid.endswith("_abs"):
            continue
        kind = json.loads(f.read_text(encoding="utf-8"))["question_type"]
        if counts.get(kind, 0) < per_type:
            counts[kind] = counts.get(kind, 0) + 1
            picked.append(f)
    return picked


def lme_per_question(files: list[Path]) -> list[Haystack]:
    """One haystack per question (the benchmark as designed)."""
    out = []
    for f in files:
        raw, sessions = lme_question_and_sessions(f)
        q = _lme_question(raw, sessions)
        if q is not None:
            out.append(Haystack(f"lme-s/{q.qid}", _dedupe(sessions), [q]))
    return out


def lme_pooled(files: list[Path], name: str) -> Haystack:
    """Every question's sessions in one haystack (dedupe by id, earliest date wins)."""
    pool: dict[str, Session] = {}
    questions = []
    for f in files:
        raw, sessions = lme_question_and_sessions(f)
        for s in sessions:
            if s.sid not in pool or s.date < pool[s.sid].date:
                pool[s.sid] = s
        q = _lme_question(raw, sessions)
        if q is not None:
            questions.append(q)
    ordered = sorted(pool.values(), key=lambda s: (s.date, s.sid))
    return Haystack(name, ordered, questions)


def _dedupe(sessions: list[Session]) -> list[Session]:
    seen, out = set(), []
    for s in sessions:
        if s.sid not in seen:
            seen.add(s.sid)
            out.append(s)
    return out
