"""Check the dev set against the corpus as funes parses and chunks it; exit 1 on any miss.

    .venv/bin/python bench/devset/validate.py [--corpus ../shared/corpus] [--questions FILE]

Every transcript under the corpus is read with funes' own sources and parsers
(`funes.traces.source.resolve`, the same dispatch `funes index` uses), and every block is rendered,
stripped of data-URI payloads and split exactly as ingest does (`funes.ingest.chunk`). A question
passes when its evidence (whitespace-normalised) lies inside one chunk of its session and the
session's harness is the one the question names. Redaction is not applied: it only replaces
secrets, and an evidence snippet that spans one would be a bad snippet anyway.

Also printed, so a reviewer can judge how distinctive each snippet is: the number of chunks
containing the evidence in its own session and in other sessions.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from devset.questions import MAX_EVIDENCE, QUESTIONS, load, normalise  # noqa: E402

CORPUS = HERE.parents[2] / "shared" / "corpus"
MIN_QUESTIONS = 60


def corpus_chunks(corpus: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """session id -> its chunk texts (whitespace-normalised), and session id -> harness."""
    from funes.ingest import chunk
    from funes.traces import source

    chunks: dict[str, list[str]] = defaultdict(list)
    harness: dict[str, str] = {}
    for src in source.resolve(corpus):
        for unit in src.units():
            frame = src.read(unit).frame
            for r in frame.select(["session_id", "block_type", "text", "tool_name", "harness"]).iter_rows(named=True):
                rendered = chunk.render(r["block_type"], chunk.elide_data_uris(r["text"]), r["tool_name"])
                chunks[r["session_id"]].extend(normalise(p) for p in chunk.split(rendered))
                harness[r["session_id"]] = r["harness"]
    return chunks, harness


def check(questions, chunks, harness) -> list[str]:
    """One line per failed question; prints the spread of each evidence snippet."""
    failures = []
    for q in questions:
        ev = normalise(q.evidence)
        own = sum(ev in c for c in chunks.get(q.session_id, []))
        other = sum(ev in c for s, cs in chunks.items() if s != q.session_id for c in cs)
        print(f"{q.id:6} {q.kind:12} own={own:<3} other={other:<3} {q.session_id[:48]}")
        if q.session_id not in chunks:
            failures.append(f"{q.id}: no session {q.session_id} in the corpus")
        elif own == 0:
            failures.append(f"{q.id}: evidence not in any chunk of {q.session_id}: {q.evidence[:80]!r}")
        elif harness[q.session_id] != q.harness:
            failures.append(f"{q.id}: session {q.session_id} is {harness[q.session_id]}, not {q.harness}")
    return failures


def summary(questions) -> str:
    kinds = Counter(q.kind for q in questions)
    long = sum(q.long_session for q in questions)
    by_harness = Counter(q.harness for q in questions)
    return (
        f"{len(questions)} questions; long sessions {long} ({100 * long / max(len(questions), 1):.0f}%); "
        f"kinds {dict(sorted(kinds.items()))}; harnesses {dict(sorted(by_harness.items()))}; "
        f"sessions {len({q.session_id for q in questions})}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"devset: no corpus at {args.corpus}", file=sys.stderr)
        return 2
    try:
        questions = load(args.questions)
    except (OSError, ValueError) as e:
        print(f"devset: {e}", file=sys.stderr)
        return 1
    chunks, harness = corpus_chunks(args.corpus)
    failures = check(questions, chunks, harness)
    if len(questions) < MIN_QUESTIONS:
        failures.append(f"only {len(questions)} questions (at least {MIN_QUESTIONS})")
    print(summary(questions))
    for f in failures:
        print(f"devset: {f}", file=sys.stderr)
    print(f"{len(questions) - len(failures)} ok, {len(failures)} failed (evidence <= {MAX_EVIDENCE} chars)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
