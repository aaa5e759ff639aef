"""Memory specs, the one parser every command uses: `local`, a path, `owner/name`, `hf://datasets/owner/name[@rev]`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from funes.errors import UsageError

_PART = r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}"
_REPO = re.compile(rf"^({_PART})/({_PART})$")
_URI = re.compile(rf"^hf://datasets/({_PART})/({_PART})(?:@([^/@\s]+))?/?$")
HINT = "a memory is `local`, a folder path, `owner/name` or `hf://datasets/owner/name[@revision]`"


@dataclass(frozen=True)
class Spec:
    kind: str  # "local" (the default memory) | "path" | "hub"
    path: Path | None = None
    repo_id: str | None = None
    revision: str | None = None

    @property
    def is_hub(self) -> bool:
        return self.kind == "hub"

    @property
    def uri(self) -> str:
        """The canonical name of a Hub memory (receipts, reports, get lines)."""
        rev = f"@{self.revision}" if self.revision else ""
        return f"hf://datasets/{self.repo_id}{rev}"


def parse(spec: str | None) -> Spec:
    """`owner/name` is a Hub repo; a relative folder with one slash must be written `./owner/name`."""
    text = (spec or "").strip()
    if text in ("", "local"):
        return Spec("local")
    if text.startswith("hf://"):
        m = _URI.match(text)
        if not m:
            raise UsageError(f"not a Hub memory: {text}", HINT)
        return Spec("hub", repo_id=f"{m[1]}/{m[2]}", revision=m[3])
    m = _REPO.match(text)
    if m and not text.startswith((".", "~")) and ".." not in text:
        return Spec("hub", repo_id=text)
    return Spec("path", path=Path(text).expanduser())
