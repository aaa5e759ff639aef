"""`funes index --no-embed` (the text tier, day zero's first run) imports nothing it does not use:
no datasets, no pandas (pyarrow's probe finds none), no torch or sentence-transformers."""

from __future__ import annotations

import subprocess
import sys

from conftest import subprocess_env
from funes import paths

NOT_ON_TEXT_PATH = ("pandas", "datasets", "torch", "sentence_transformers", "transformers")
PROBE = """
import sys
from funes import cli
code = cli.main({argv!r})
print("MODULES=" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _index(env, *extra: str) -> tuple[str, str]:
    argv = ["index", str(paths.samples_dir()), *extra]
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, heavy=NOT_ON_TEXT_PATH)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    *body, last = out.stdout.splitlines()
    return "\n".join(body), last


def test_the_text_tier_imports_no_pandas_datasets_or_torch(funes_home):
    env = subprocess_env(funes_home)
    body, modules = _index(env, "--no-embed")
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
