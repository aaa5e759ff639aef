"""Which git repository a unit was recorded in: `owner/name` from `git remote -v` (upstream-spec 1.8).

One `git` subprocess per distinct cwd per process (cached), and none at all for a cwd that is not
an existing directory. Any failure yields "" (attribution is a nicety, never a reason to fail).
Changed from upstream: a hermes state.db unit's cwd comes from `sessions.cwd` (upstream opened
the bare session id as a file and always got ""), and the transcript scan stops at the first
line that mentions `"cwd"` without parsing every line before it.
"""

from __future__ import annotations

import json
import subprocess
from contextlib import closing
from functools import lru_cache
from pathlib import Path

from funes.traces import Unit, hermes

_GIT_TIMEOUT_S = 5


def repo_for_unit(unit: Unit) -> str:
    """The `repo` value stamped on every chunk of a unit."""
    return repo_of_cwd(cwd_of_unit(unit))


def cwd_of_unit(unit: Unit) -> str | None:
    if unit.session is not None:
        return _hermes_cwd(unit)
    if unit.harness == "parquet":
        return None  # rows name their own cwd in metadata; a binary file has no cwd line
    return cwd_of_transcript(unit.path)


def cwd_of_transcript(path: Path, data: bytes | None = None) -> str | None:
    """The first line's top-level `cwd` or `payload.cwd` string (only lines naming "cwd" are parsed).
    `data`: the file's bytes when the caller has read them already (the lines are the same: a
    binary file iterates on b"\n" too, and a line's trailing newline is JSON whitespace)."""
    if data is not None:
        return _first_cwd(_cwd_lines(data))
    try:
        with path.open("rb") as f:
            return _first_cwd(f)
    except OSError:
        return None


def _cwd_lines(data: bytes):
    """The lines of `data` (split on b"\n") that name "cwd", in order: found by searching the bytes,
    so the file is not split into all its lines to read the first few."""
    at = data.find(b'"cwd"')
    while at != -1:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        if end == -1:
            yield data[start:]
            return
        yield data[start:end]
        at = data.find(b'"cwd"', end + 1)


def _first_cwd(lines) -> str | None:
    for raw in lines:
        if b'"cwd"' in raw:
            cwd = _cwd_of_line(raw)
            if cwd is not None:
                return cwd
    return None


def _cwd_of_line(raw: bytes) -> str | None:
    try:
        record = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    payload = record.get("payload")
    for cwd in (record.get("cwd"), payload.get("cwd") if isinstance(payload, dict) else None):
        if isinstance(cwd, str):
            return cwd
    return None


def _hermes_cwd(unit: Unit) -> str | None:
    try:
        with closing(hermes.connect(unit.path)) as conn:
            return hermes.session_cwd(conn, unit.session or "")
    except Exception:
        return None


@lru_cache(maxsize=4096)
def repo_of_cwd(cwd: str | None) -> str:
    """`owner/name` of every remote of the repo at cwd, deduped, sorted, space-joined; "" on failure."""
    if not cwd or not Path(cwd).is_dir():
        return ""
    try:
        out = subprocess.run(
            ["git", "-C", cwd, "remote", "-v"],
            capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    if out.returncode != 0:
        return ""
    names = {normalize_remote(line.split()[1]) for line in out.stdout.splitlines() if len(line.split()) >= 2}
    return " ".join(sorted(n for n in names if n))


def normalize_remote(url: str) -> str:
    """`https://host/a/b.git`, `git@host:a/b` -> `a/b` (the last two path segments); "" if invalid."""
    url = url.strip().rstrip("/")
    url = url[: -len(".git")] if url.endswith(".git") else url
    if "://" in url:
        rest = url.split("://", 1)[1]
        path = rest.split("/", 1)[1] if "/" in rest else ""
    elif ":" in url:
        path = url.split(":", 1)[1]
    else:
        return ""
    segments = [s for s in path.split("/") if s]
    return "/".join(segments[-2:]) if len(segments) >= 2 else ""
