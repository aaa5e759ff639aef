"""Every on-disk location funes uses, derived from FUNES_HOME; and where cards/ and schemas/ live."""

from __future__ import annotations

import os
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[2]


def home() -> Path:
    """$FUNES_HOME, default ~/.funes (not created here: writers create it)."""
    env = os.environ.get("FUNES_HOME", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".funes"


def child_env() -> dict[str, str]:
    """This environment for a funes child process (the scan worker, the refresher): with the folder
    this very funes was imported from first on PYTHONPATH, so the child runs the same code (a
    checkout, an old tree on PYTHONPATH), not whatever `funes` the interpreter would find."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def memory_dir(base: Path | None = None) -> Path:
    return (base or home()) / "memory"


def chunks_table(memory: Path) -> Path:
    return memory / "chunks.lance"


def vectors_table(memory: Path) -> Path:
    return memory / "vectors.lance"


def index_dir(memory: Path) -> Path:
    return memory / "index"


def remote_dir(repo: str, base: Path | None = None) -> Path:
    """Index segments and read stamps of one remote memory (`owner/name`); its shards stay in the HF cache."""
    return (base or home()) / "remote" / Path(*repo.split("/"))


def state_file(base: Path | None = None) -> Path:
    return (base or home()) / "state.json"


def lock_file_for(memory: Path) -> Path:
    """The writer lock of the memory folder `memory`: beside it, so $FUNES_HOME/store.lock for the default.

    The name is the original's, so an old binary and funes never write at once.
    """
    return memory.parent / "store.lock"


def schemas_dir() -> Path:
    """schemas/ ships at the repo root; an installed wheel carries a copy inside the package."""
    packaged = Path(__file__).resolve().parent / "_schemas"
    return packaged if packaged.is_dir() else _REPO_ROOT / "schemas"


def cards_dir() -> Path:
    """cards/ (dataset card templates) at the repo root; an installed wheel carries a copy inside the package."""
    packaged = Path(__file__).resolve().parent / "_cards"
    return packaged if packaged.is_dir() else _REPO_ROOT / "cards"


def samples_dir() -> Path:
    """Small bundled sample sessions used by `make index` on a machine with no agent history."""
    return Path(__file__).resolve().parent / "samples"


def home_roots() -> dict[str, Path]:
    """The agent session folders funes looks for, in sweep order."""
    h = Path.home()
    return {
        "claude_code": h / ".claude" / "projects",
        "codex": h / ".codex" / "sessions",
        "pi": h / ".pi" / "agent" / "sessions",
        "hermes": h / ".hermes",
    }


def queue_file(base: Path | None = None) -> Path:
    """Hook events waiting for the worker (one JSON line each, O_APPEND)."""
    return (base or home()) / "queue" / "events.jsonl"


def run_dir(base: Path | None = None) -> Path:
    """Locks and the shared server's socket."""
    return (base or home()) / "run"


def logs_dir(base: Path | None = None) -> Path:
    return (base or home()) / "logs"


def integrations_dir(base: Path | None = None) -> Path:
    """What `funes add` changed per agent, for an exact `funes remove`."""
    return (base or home()) / "integrations"


def serve_socket(base: Path | None = None) -> Path:
    """The shared server's Unix socket; a short fallback path when FUNES_HOME is too deep for AF_UNIX."""
    sock = run_dir(base) / "mcp.sock"
    if len(str(sock)) < 100:
        return sock
    import hashlib
    import tempfile

    digest = hashlib.sha1(str(sock).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"funes-{os.getuid()}-{digest}.sock"


def agent_dir(env: str, default: str) -> Path:
    """An agent's config folder: its override variable (CLAUDE_CONFIG_DIR, CODEX_HOME, ...) or ~/<default>."""
    raw = os.environ.get(env, "").strip()
    return Path(raw).expanduser() if raw else Path.home() / default
