"""Helpers for the remote-memory tests on top of conftest's `hub` fixture (the local test Hub).

`Reader` switches this process to "another machine" (its own FUNES_HOME and an empty HF cache),
flips offline mode and the token the way the real clients read them, and counts the requests the
server saw. `publish` is the real `funes publish` of the current FUNES_HOME's local memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Remote:
    hub: object  # conftest.Hub
    monkeypatch: pytest.MonkeyPatch
    tmp: Path

    @property
    def repo(self) -> str:
        return self.hub.repo_id

    @property
    def uri(self) -> str:
        return f"hf://datasets/{self.repo}"

    @property
    def requests(self):
        return self.hub.server.requests

    def machine(self, name: str) -> Path:
        """Become machine `name`: FUNES_HOME and HF cache of its own (created empty), no warm Retrievers."""
        from huggingface_hub import constants

        from funes.retrieval import retriever

        home = self.tmp / name / ".funes"
        cache = self.tmp / name / "hf" / "hub"
        self.monkeypatch.setenv("FUNES_HOME", str(home))
        self.monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        self.monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
        self.monkeypatch.setattr(retriever, "_RETRIEVERS", {})
        self.monkeypatch.setattr(retriever, "_LAST_REMOTE", {})
        return cache

    def visit(self, name: str) -> None:
        """Switch to machine `name` again as the same process: what it holds in memory stays."""
        from huggingface_hub import constants

        cache = self.tmp / name / "hf" / "hub"
        self.monkeypatch.setenv("FUNES_HOME", str(self.tmp / name / ".funes"))
        self.monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        self.monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))

    def restart(self) -> None:
        """A new process on the same machine: nothing warm in memory, the disk caches kept."""
        from funes.retrieval import retriever

        self.monkeypatch.setattr(retriever, "_RETRIEVERS", {})
        self.monkeypatch.setattr(retriever, "_LAST_REMOTE", {})

    def offline(self, on: bool = True) -> None:
        from huggingface_hub import constants

        self.monkeypatch.setenv("HF_HUB_OFFLINE", "1" if on else "0")
        self.monkeypatch.setattr(constants, "HF_HUB_OFFLINE", on)

    def token(self, value: str | None) -> None:
        if value is None:
            self.monkeypatch.delenv("HF_TOKEN", raising=False)
        else:
            self.monkeypatch.setenv("HF_TOKEN", value)

    def env(self) -> dict[str, str]:
        """What a `funes` subprocess on the current machine needs (on top of subprocess_env)."""
        return self.hub.env(FUNES_HOME=os.environ["FUNES_HOME"], HF_HUB_CACHE=os.environ["HF_HUB_CACHE"])

    def since(self, mark: int) -> list[tuple[str, str]]:
        return [(m, p) for m, p, _ in self.requests[mark:]]

    def shard_gets(self, mark: int) -> list[str]:
        return [p for m, p in self.since(mark) if m == "GET" and "/resolve/" in p and p.endswith(".parquet")]

    def publish(self) -> str:
        from funes.commands import publish

        return publish.publish(publish.Options(memory=self.repo, create=True)).commit


class PrivateHub:
    """A test Hub of one test's own (conftest's `hub` shape: repo_id, server, env), for data that
    must not land in the session's shared server, whose tests read every Parquet file it holds."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch):
        from huggingface_hub import constants, hf_api

        from conftest import HUB_USER, HUB_WRITE_TOKEN
        from hubserver import HubServer

        self.server = HubServer(root, {HUB_WRITE_TOKEN: (HUB_USER, True)})
        self.url, self.repo_id, self.token = self.server.url, f"{HUB_USER}/traces", HUB_WRITE_TOKEN
        monkeypatch.setenv("HF_ENDPOINT", self.url)
        monkeypatch.setattr(constants, "ENDPOINT", self.url)
        monkeypatch.setattr(
            constants, "HUGGINGFACE_CO_URL_TEMPLATE", self.url + "/{repo_id}/resolve/{revision}/{filename}"
        )
        monkeypatch.setattr(hf_api.api, "endpoint", self.url)

    def env(self, **extra: str) -> dict[str, str]:
        return {"HF_ENDPOINT": self.url, "HF_TOKEN": self.token, "HF_HUB_OFFLINE": "0", **extra}

    def stop(self) -> None:
        self.server.stop()
