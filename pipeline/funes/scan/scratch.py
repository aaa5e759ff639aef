"""Private temp dirs for scanner children, which may spill unredacted input to disk.

Each run gets `<root>/<engine>.<pid>.<random>` (0700) and removes it when the run ends; a dir whose
owning process is gone (funes was killed) is swept the next time any scanner starts. The root is
`$FUNES_HOME/tmp`, or a private per-user dir in the system temp dir when FUNES_HOME cannot be
written (a read-only memory).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from funes import paths
from funes.errors import FunesError

_NAME = re.compile(r"^[a-z-]+\.(\d+)\.[A-Za-z0-9_]+$")


def _private(d: Path) -> bool:
    st = d.lstat()
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def root() -> Path:
    """Where scanner temp dirs live: private, owned by this user."""
    candidates = [paths.home() / "tmp", Path(tempfile.gettempdir()) / f"funes-scan-{os.getuid()}"]
    for d in candidates:
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            if _private(d):
                return d
            if d.lstat().st_uid == os.getuid() and stat.S_ISDIR(d.lstat().st_mode):
                d.chmod(0o700)
                return d
        except OSError:
            continue
    raise FunesError(
        "no private temp dir for the secret scanner",
        f"make {candidates[0]} writable (or free space on it)",
    )


def sweep(base: Path) -> int:
    """Remove the dirs left by runs whose process is gone; the number removed."""
    n = 0
    try:
        entries = list(base.iterdir())
    except OSError:
        return 0
    for d in entries:
        m = _NAME.match(d.name)
        if not m or _alive(int(m.group(1))):
            continue
        shutil.rmtree(d, ignore_errors=True)
        n += not d.exists()
    return n


def make(engine: str) -> Path:
    """A fresh private dir for one scanner run (sweeping leftovers of killed runs first)."""
    base = root()
    sweep(base)
    try:
        return Path(tempfile.mkdtemp(prefix=f"{engine}.{os.getpid()}.", dir=base))
    except OSError as e:
        raise FunesError(
            f"cannot create a temp dir for the secret scanner ({e.strerror or type(e).__name__})",
            f"free space on {base}, or make it writable",
        ) from None


def remove(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)


def remove_own() -> None:
    """Remove every dir this process made: the error boundary's last word after an interrupt, which
    may land between a dir's creation and the code that would remove it."""
    for base in (paths.home() / "tmp", Path(tempfile.gettempdir()) / f"funes-scan-{os.getuid()}"):
        try:
            mine = [d for d in base.iterdir() if (m := _NAME.match(d.name)) and int(m.group(1)) == os.getpid()]
        except OSError:
            continue
        for d in mine:
            remove(d)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
