"""Fixed probe texts that gate an int8 export: it must agree with the fp32 model on these before use."""

from __future__ import annotations

PASSAGES = [
    "I'll start by reading the failing test to see what it expects from the parser. The assertion compares the "
    "number of turns after a compaction record, so the bug is probably in how we skip summary lines.",
    '[tool_use Bash] {"command": "pytest -q tests/test_parser.py -k compaction", "description": "Run the '
    'compaction tests"}',
    "[tool_result Bash] ============================= test session starts ==============================\n"
    "collected 14 items / 12 deselected / 2 selected\n\ntests/test_parser.py F.                                   "
    "[100%]\n\n=================================== FAILURES ===================================\n"
    "___________________________ test_skips_summary_lines ___________________________\n\n    def "
    "test_skips_summary_lines(tmp_path):\n>       assert len(turns) == 3\nE       assert 4 == 3\nE        +  where 4 "
    "= len([Turn(uuid='a1'), Turn(uuid='a2'), Turn(uuid='s0'), Turn(uuid='a3')])\n\ntests/test_parser.py:88: "
    "AssertionError\n=========================== short test summary info ============================",
    'def read_unit(path: Path) -> pl.DataFrame:\n    rows = []\n    with path.open(encoding="utf-8", errors='
    '"replace") as fh:\n        for lineno, line in enumerate(fh, 1):\n            try:\n                record = '
    'json.loads(line)\n            except ValueError:\n                skipped["bad_json"] += 1\n                '
    'continue\n            if record.get("type") == "summary":\n                continue\n            rows.extend'
    "(blocks_of(record, lineno))\n    return pl.DataFrame(rows, schema=TURNS)",
    "We decided to keep vectors in a separate Lance table so that text is searchable before it is embedded. "
    "The first index run writes chunks immediately and BM25 answers recall within seconds; a background step "
    "backfills vectors in bounded batches, and recall fuses both legs once the vectors exist.",
    'Traceback (most recent call last):\n  File "/usr/lib/python3.11/site-packages/lance/dataset.py", line '
    '2410, in create_index\n    raise ValueError("KMeans cannot train 256 centroids with 31 vectors")\nValueError: '
    "KMeans cannot train 256 centroids with 31 vectors. Choose a smaller number of partitions.",
    "diff --git a/src/index.ts b/src/index.ts\n@@ -12,7 +12,9 @@ export async function main(argv: string[]) {\n-  "
    "const cfg = loadConfig()\n+  const cfg = loadConfig(argv.includes('--local'))\n+  if (!cfg.token) {\n+    "
    "throw new Error('HF token missing: run `hf auth login`')\n+  }\n   await sync(cfg)\n }",
    '{"name": "funes", "version": "0.1.0", "dependencies": {"polars": ">=1.0", "pyarrow": ">=15"}, '
    '"scripts": {"test": "pytest -q", "check": "lint-imports"}, "private": true}',
    "Sure — the quickest fix is to pin the embedding model and refuse to open a memory built with another one; "
    "rebuilding from transcripts is cheap compared with silently mixing two vector spaces.",
    "ユーザーのログイン状態を確認してから、カードのコレクション画面を表示します。未ログインの場合は LINE ログインへ"
    "リダイレクトします。",
    "SELECT session_id, count(*) AS n FROM chunks WHERE harness = 'codex' AND ts > '2025-01-01' GROUP BY "
    "session_id ORDER BY n DESC LIMIT 20;",
    "ok",
]

QUERIES = [
    "why did the compaction test fail",
    "how are vectors backfilled after indexing",
    "lance kmeans error with few vectors",
]
