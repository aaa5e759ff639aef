"""A cold `funes recall` / `funes get` imports only what the read path uses (no pandas via lance), and
`funes index --no-embed` (the text tier, day zero's first run) nothing it does not use: no datasets, no
pandas (pyarrow's probe finds none), no torch or sentence-transformers."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import subprocess_env
from funes import paths

NOT_ON_READ_PATH = ("pandas", "torch", "datasets", "sentence_transformers", "polars")
NOT_ON_TEXT_PATH = ("pandas", "datasets", "torch", "sentence_transformers", "transformers")
PROBE = """
import sys
from funes import cli
code = cli.main({argv!r})
print("MODULES=" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _run(env, argv, heavy=NOT_ON_READ_PATH):
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, heavy=heavy)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    *body, last = out.stdout.splitlines()
    return "\n".join(body), last


def test_cold_recall_and_get_skip_pandas(funes_home):
    env = subprocess_env(funes_home)
    samples = paths.samples_dir()
    subprocess.run(
        [sys.executable, "-m", "funes.cli", "index", str(samples), "--no-embed"],
        env=env,
        check=True,
        capture_output=True,
    )
    body, modules = _run(env, ["recall", "streaming parser decision", "--json"])
    assert modules == "MODULES=", modules
    hits = json.loads(body)["hits"]
    assert hits and "parser" in hits[0]["text"]
    h = hits[0]
    body, modules = _run(env, ["get", h["session_id"], h["turn_uuid"], "--format", "agent"])
    assert modules == "MODULES=", modules
    assert h["text"].splitlines()[0] in body


def test_the_text_tier_imports_no_pandas_datasets_or_torch(funes_home):
    env = subprocess_env(funes_home)
    body, modules = _run(env, ["index", str(paths.samples_dir()), "--no-embed"], NOT_ON_TEXT_PATH)
    assert modules == "MODULES=", modules
    assert "new chunks" in body
    found = subprocess.run(
        [sys.executable, "-m", "funes.cli", "recall", "streaming parser decision", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0 and "parser" in found.stdout, found.stderr
