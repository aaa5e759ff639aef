"""Redaction on real transcripts (../shared/corpus): few, plausible redactions; stable output.

The corpus was screened for live credentials before it was shared, so almost everything found
here is a false positive (or a default credential such as `minioadmin`). On the whole corpus
(22.9 MB of block text) the combined scanner redacts ~1 value per MB; this test scans a fixed
sample and only bounds the rate loosely. Run as a script for the per-kind counts of the whole
corpus.
"""

from __future__ import annotations

import collections
import contextlib
import json
import re
import sqlite3
import sys
from pathlib import Path

import pytest

from funes.ingest.redact import redact_texts

pytestmark = pytest.mark.corpus
_SKIP_KEYS = {
    "signature",
    "encrypted_content",
    "uuid",
    "parentUuid",
    "sessionId",
    "id",
    "timestamp",
    "type",
    "cwd",
    "version",
    "gitBranch",
    "requestId",
    "tool_use_id",
    "model",
    "role",
}


def _walk(obj, out: list[str], key: str | None = None) -> None:
    """String leaves (text, thinking, tool results) and tool inputs re-serialised as JSON."""
    if isinstance(obj, str):
        if key not in _SKIP_KEYS and obj.strip():
            out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k == "input" and isinstance(v, dict):
                out.append(json.dumps(v, ensure_ascii=False))
            else:
                _walk(v, out, k)
    elif isinstance(obj, list):
        for v in obj:
            _walk(v, out, key)


def corpus_texts(root: Path) -> list[str]:
    """Approximate block texts of every transcript in the corpus (no dependency on traces/)."""
    out: list[str] = []
    for path in sorted(root.rglob("*")):
        if path.suffix in (".jsonl", ".json"):
            lines = (
                path.read_text(errors="replace").splitlines()
                if path.suffix == ".jsonl"
                else [path.read_text(errors="replace")]
            )
            for line in lines:
                with contextlib.suppress(ValueError):
                    _walk(json.loads(line), out)
        elif path.name.endswith((".db", ".db.backup")):
            try:
                con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
                out.extend(
                    t for (t,) in con.execute("select content from messages") if isinstance(t, str) and t.strip()
                )
            except sqlite3.DatabaseError:
                pass
    return out


@pytest.fixture
def sample(corpus) -> list[str]:
    texts = corpus_texts(corpus)
    return texts[::8]  # a fixed ~3 MB slice across every agent


def test_false_positives_are_rare_and_output_is_stable(sample):
    out, kinds = redact_texts(sample)
    megabytes = sum(map(len, sample)) / 1e6
    found = collections.Counter(k for ks in kinds for k in ks)
    changed = [i for i, ks in enumerate(kinds) if ks]
    assert megabytes > 1
    assert sum(found.values()) <= 5 * megabytes, found
    assert len(changed) <= 0.002 * len(sample), found
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9]{1,20}", k) for k in found)
    assert [o for i, o in enumerate(out) if i not in set(changed)] == [
        t for i, t in enumerate(sample) if i not in set(changed)
    ]
    again, kinds2 = redact_texts([out[i] for i in changed])
    assert again == [out[i] for i in changed] and not any(kinds2)


if __name__ == "__main__":  # per-kind redaction counts on the whole corpus
    import time

    root = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    texts = corpus_texts(root)
    t0, found, examples = time.time(), collections.Counter(), collections.defaultdict(list)
    for i in range(0, len(texts), 10000):
        batch = texts[i : i + 10000]
        out, kinds = redact_texts(batch)
        for _text, red, ks in zip(batch, out, kinds):
            found.update(ks)
            for k in ks:
                examples[k].append(red[max(0, red.find("[REDACTED:" + k) - 50) :][:110].replace("\n", " "))
    dt, mb = time.time() - t0, sum(map(len, texts)) / 1e6
    print(f"{len(texts)} blocks, {mb:.1f} MB in {dt:.1f}s: {len(texts) / dt:.0f} blocks/s, {mb / dt:.2f} MB/s")
    print(dict(found.most_common()))
    for k, ex in examples.items():
        print(k, *sorted(set(ex))[:10], sep="\n    ", file=sys.stdout)
