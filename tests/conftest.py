"""Shared fixtures: an isolated FUNES_HOME/HOME for every test (autouse) and the optional ../shared data."""

from __future__ import annotations

import itertools
import os
import socket
import sys
import tempfile
from pathlib import Path

import pytest

# ONNX exports of the models are derived and keyed by weights sha: build them once per machine,
# not once per test (every test gets a fresh HOME, which would otherwise re-export each time)
os.environ.setdefault("FUNES_MODEL_CACHE", str(Path(tempfile.gettempdir()) / f"funes-test-models-{os.getuid()}"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The HF clients read these when first imported, so they are set before any test imports them: the
# local test Hub's address (the server starts on first use), Xet off (the test Hub speaks LFS), no
# telemetry or download counters, and an HF_HOME of our own (no developer token, a private cache).
HUB_URL = f"http://127.0.0.1:{_free_port()}"
os.environ.update(
    HF_ENDPOINT=HUB_URL,
    HF_HUB_DISABLE_XET="1",
    HF_HUB_DISABLE_TELEMETRY="1",
    HF_UPDATE_DOWNLOAD_COUNTS="0",
    HF_HUB_DISABLE_PROGRESS_BARS="1",
    HF_HOME=tempfile.mkdtemp(prefix="funes-test-hf-"),
    NO_PROXY="127.0.0.1,localhost",
)
HUB_USER, HUB_WRITE_TOKEN, HUB_READ_TOKEN = "acme", "hf_test_write_token", "hf_test_read_token"
_repo_numbers = itertools.count(1)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def funes_home(tmp_path, monkeypatch) -> Path:
    """An empty FUNES_HOME and HOME for every test (autouse), so none can reach the developer's real sessions."""
    home = tmp_path / "home"
    home.mkdir()
    fh = home / ".funes"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FUNES_HOME", str(fh))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return fh


@pytest.fixture
def corpus() -> Path:
    """../shared/corpus, or skip cleanly when the shared data is not beside the repo."""
    path = SHARED / "corpus"
    if not path.is_dir():
        pytest.skip("../shared/corpus is not present")
    return path


@pytest.fixture
def benchdata() -> Path:
    path = SHARED / "benchdata"
    if not path.is_dir():
        pytest.skip("../shared/benchdata is not present")
    return path


def subprocess_env(funes_home: Path, **extra: str) -> dict[str, str]:
    """Environment for running the real `funes` console script in a subprocess."""
    env = dict(os.environ)
    env.update({"FUNES_HOME": str(funes_home), "HOME": str(funes_home.parent), "HF_HUB_OFFLINE": "1"})
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def minilm(request, tmp_path_factory):
    """The real default embedder (auto backend), loaded once. Its ONNX export is kept in pytest's cache
    folder between runs (exports are keyed by the weights sha, so a stale one is never used)."""
    from funes import models

    try:
        cache = Path(request.config.cache.mkdir("funes-model-cache"))
    except (AttributeError, OSError):
        cache = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as mp:
        for var in ("FUNES_EMBED_MODEL", "FUNES_EMBED_BACKEND"):
            mp.delenv(var, raising=False)
        mp.setenv("FUNES_MODEL_CACHE", str(cache))
        yield models.load_embedder()


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory):
    """The local Hub-compatible server (tests/hubserver.py) at HF_ENDPOINT, for the whole session."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hubserver import HubServer

    tokens = {HUB_WRITE_TOKEN: (HUB_USER, True), HUB_READ_TOKEN: (HUB_USER, False)}
    server = HubServer(tmp_path_factory.mktemp("hub"), tokens, port=int(HUB_URL.rsplit(":", 1)[1]))
    yield server
    server.stop()


class Hub:
    """One test's view of the local Hub: a fresh repo name, the write token set, faults cleared."""

    def __init__(self, server, repo_id: str):
        self.server, self.repo_id, self.url = server, repo_id, server.url

    def env(self, **extra: str) -> dict[str, str]:
        """What a `funes` subprocess needs to talk to this Hub (on top of subprocess_env)."""
        return {"HF_ENDPOINT": self.url, "HF_TOKEN": HUB_WRITE_TOKEN, "HF_HUB_OFFLINE": "0", **extra}

    def files(self, revision: str = "main") -> dict[str, dict]:
        repo = self.server.store.load(*self.repo_id.split("/"))
        return {} if repo is None else repo["commits"][repo["refs"][revision]]["files"]

    def commits(self) -> int:
        repo = self.server.store.load(*self.repo_id.split("/"))
        return 0 if repo is None else len(repo["commits"])


@pytest.fixture
def hub(hub_server, funes_home, monkeypatch) -> Hub:
    """The real HF clients of this process pointed at the local Hub, online, with the write token."""
    monkeypatch.setenv("HF_TOKEN", HUB_WRITE_TOKEN)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    # funes_home sets HF_HUB_OFFLINE=1; a client imported under it keeps that in module constants
    if "huggingface_hub.constants" in sys.modules:
        monkeypatch.setattr(sys.modules["huggingface_hub.constants"], "HF_HUB_OFFLINE", False)
    if "datasets.config" in sys.modules:
        monkeypatch.setattr(sys.modules["datasets.config"], "HF_HUB_OFFLINE", False)
    hub_server.faults.clear()
    return Hub(hub_server, f"{HUB_USER}/mem{next(_repo_numbers)}")
