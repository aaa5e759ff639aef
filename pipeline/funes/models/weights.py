"""Find a model's weights file and check its sha256, remembering verified files by path, size and mtime."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from funes.errors import FunesError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_SEEN: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256, this process


def cache_dir() -> Path:
    """Derived, rebuildable model files (ONNX exports, verified hashes), shared by every FUNES_HOME:
    $FUNES_MODEL_CACHE, else $XDG_CACHE_HOME/funes/models, else ~/.cache/funes/models."""
    env = os.environ.get("FUNES_MODEL_CACHE", "").strip()
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "funes" / "models"


def weights_file(model_dir: Path) -> Path:
    for name in WEIGHT_FILES:
        if (model_dir / name).is_file():
            return model_dir / name
    raise FunesError(
        f"no weights in {model_dir} (expected one of {', '.join(WEIGHT_FILES)})",
        hint="reinstall or re-download the model",
    )


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _stamp(path: Path) -> tuple[str, int, int]:
    real = path.resolve()
    st = real.stat()
    return str(real), st.st_size, st.st_mtime_ns


def known_sha256(path: Path) -> str | None:
    """The sha256 recorded for this exact file (same path, size, mtime) — never hashes."""
    key = _stamp(path)
    if key not in _SEEN:
        entry = _load().get(key[0])
        if entry and (entry.get("size"), entry.get("mtime_ns")) == key[1:]:
            _SEEN[key] = entry["sha256"]
    return _SEEN.get(key)


def file_sha256(path: Path) -> str:
    """sha256 of a weights file, hashed once per (path, size, mtime) and remembered on disk."""
    sha = known_sha256(path)
    if sha is None:
        key = _stamp(path)
        sha = _SEEN[key] = sha256_file(path)
        _record(key, sha)
    return sha


def verify(model_dir: Path, expected: str, model_id: str, fix: str = "re-download the model") -> str:
    """Refuse weights whose sha256 differs from the pinned one; returns the sha."""
    path = weights_file(model_dir)
    sha = file_sha256(path)
    if sha != expected:
        raise FunesError(
            f"{path} does not match the pinned {model_id} (sha256 {sha[:12]}…, expected {expected[:12]}…)",
            hint=f"the file is corrupt or was replaced: {fix}",
        )
    return sha


def _ledger() -> Path:
    return cache_dir() / "verified.json"


def _load() -> dict:
    try:
        data = json.loads(_ledger().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _record(key: tuple[str, int, int], sha: str) -> None:
    """Best effort: an unwritable cache only costs a re-hash next run."""
    data = _load()
    data[key[0]] = {"size": key[1], "mtime_ns": key[2], "sha256": sha}
    ledger = _ledger()
    try:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        tmp = ledger.with_name(f".{ledger.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, ledger)
    except OSError:
        pass
