"""`funes --help` (and each subcommand's) is instant: it imports no heavy library."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "lance", "faiss", "datasets", "sentence_transformers", "bm25s", "onnxruntime", "polars", "numpy")
PROBE = """
import sys
from funes import cli
try:
    cli.main({argv!r})
except SystemExit:
    pass
print("HEAVY=" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["index", "--help"],
        ["recall", "--help"],
        ["get", "--help"],
        ["status", "--help"],
        ["add", "--help"],
        ["mcp", "--help"],
        ["serve", "--help"],
    ],
)
def test_help_imports_nothing_heavy(argv):
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "HEAVY=", f"{argv} imported {out.stdout.splitlines()[-1]}"


def test_the_hook_imports_nothing_heavy(tmp_path):
    """The per-turn hook runs inside the agent's turn: no ML, table or MCP library may load."""
    probe = PROBE.format(
        argv=["--home", str(tmp_path / "fh"), "hook", "claude", "Stop"],
        heavy=HEAVY + ("mcp", "pyarrow", "tomlkit", "ruamel"),
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FUNES_SYNC_DEBOUNCE": "0", "FUNES_SYNC_EMBED": "0"}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "HEAVY=", out.stdout
