"""What an integration is installed with: the memory binding, the funes command line, the edits to make."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from funes import paths


@dataclass(frozen=True)
class Binding:
    """The memory an integration is bound to: kind is local, path or hub; spec is what `funes` accepts."""

    kind: str
    spec: str | None = None

    @property
    def remote(self) -> bool:
        return self.kind == "hub"


def parse_memory(raw: str | None) -> Binding:
    """`local` | PATH | owner/name | hf://datasets/owner/name, by the one memory-spec parser."""
    from funes.memory import spec as specs

    parsed = specs.parse(raw)
    if parsed.kind == "hub" and parsed.repo_id:
        return Binding("hub", parsed.repo_id)  # a publish target: the revision, if any, does not apply
    if parsed.kind == "path" and parsed.path is not None:
        return Binding("path", str(parsed.path.absolute()))
    return Binding("local")


def funes_argv() -> list[str]:
    """The command agents run, fixed at `add` time: $FUNES_BIN, this console script, or this interpreter."""
    env = os.environ.get("FUNES_BIN", "").strip()
    if env:
        argv = shlex.split(env)
    else:
        script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
        if script and script.name.startswith("funes") and script.suffix != ".py" and os.access(script, os.X_OK):
            argv = [str(script.absolute())]
        else:
            argv = [sys.executable, "-m", "funes.cli"]
    if os.environ.get("FUNES_HOME", "").strip():
        # Claude's exec-form hooks carry no environment: the location has to be on the command line
        argv += ["--home", str(paths.home().absolute())]
    return argv


@dataclass
class Plan:
    """One `funes add`: which agent, bound to which memory, running which funes."""

    agent: str
    binding: Binding
    funes: list[str]
    url: str | None = None  # a `funes serve --port` endpoint instead of a stdio command
    approve: bool = True  # Hermes: pre-approve the funes hooks in its allowlist (a consent made for the user)

    def mcp_argv(self) -> list[str]:
        # a Hub binding: this host's turns are local until the session-end publish, other machines'
        # turns are on the Hub as soon as they publish, so the agent reads both as one ranking
        if self.binding.kind == "hub":
            return self.funes + ["mcp", f"local,{self.binding.spec}"]
        path = self.binding.spec if self.binding.kind == "path" else None
        return self.funes + ["mcp"] + ([path] if path else [])

    def hook_argv(self, event: str) -> list[str]:
        return self.funes + ["hook", self.agent, event]

    def hook_line(self, event: str) -> str:
        """The hook as one shell-quoted line (Codex runs it under `sh -lc`, Hermes splits it with shlex)."""
        return shlex.join(self.hook_argv(event))


@dataclass
class Edit:
    """One file `add` writes: render(current text or None) -> new text; strip(current) -> text without funes (None deletes)."""

    path: Path
    render: Callable[[str | None], str | None]  # None: leave this file alone (nothing to add, none there)
    strip: Callable[[str], str | None]
    owned: bool = False  # a file funes creates whole (plugin files, skills): remove deletes it
    mode: int = 0o600


@dataclass
class Integration:
    """Everything `add` does for one agent: file edits, legacy files to drop, CLI steps, what the user must do."""

    edits: list[Edit] = field(default_factory=list)
    legacy: list[Path] = field(default_factory=list)
    commands: list[list[str]] = field(default_factory=list)  # agent CLI calls (run when the CLI is present)
    next_step: str = ""
    notes: list[str] = field(default_factory=list)
