"""Kingfisher's compiled-rule cache: where it lives, and its one compile per binary, done once and early.

A Kingfisher run that finds no rules compiled for its binary compiles its ~490 (~7 CPU-s here; a
warm run over a small input takes ~0.6 s) and writes them to KF_RULE_CACHE_DIR. Runs started on a
cold cache each compile (two at once: ~6.5 CPU-s each, measured), as a first large index run did in
its probe flush and in each of the worker's first batches, on both cores. So a run that finds this
binary's stamp missing takes an exclusive flock on a file in the dir: the first compiles (its own run,
or the worker's `early` one) and stamps the dir; the others wait for the lock rather than compile too,
then find the stamp and run warm. flock goes with its holder's death (even `kill -9`): a killed
compile only leaves the next run to compile.

The dir persists across reboots (/tmp, where it was, is wiped at boot on many systems, and each
first run after one paid the compile again) and does not follow a changed $HOME (tests and hooks set
one): $XDG_CACHE_HOME/funes/kingfisher, else the account's home's .cache/funes/kingfisher, else a
per-user dir in the system temp dir; 0700 and owned by this user, or not used (a planted database
could lack rules). An explicit KF_RULE_CACHE_DIR is Kingfisher's own setting, honoured as is.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

_LOCK = ".funes-compile.lock"
_POLL_S = 0.05  # how often a run waiting for another's compile looks again (and whether it was closed)
_warm: set[str] = set()  # stamps this process has seen: not looked up again


def directory() -> Path | None:
    """The compiled-rule cache dir Kingfisher is pointed at, or None when none is usable."""
    explicit = os.environ.get("KF_RULE_CACHE_DIR")
    if explicit:
        return Path(explicit) if Path(explicit).is_dir() else None
    if not hasattr(os, "getuid"):
        return None
    for d in _candidates():
        with contextlib.suppress(OSError):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = d.lstat()
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
                return d
    return None


def _candidates() -> list[Path]:
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    bases = [Path(xdg)] if xdg and Path(xdg).is_absolute() else []
    with contextlib.suppress(KeyError, ImportError):
        import pwd

        bases.append(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache")
    return [b / "funes" / "kingfisher" for b in bases] + [
        Path(tempfile.gettempdir()) / f"funes-kingfisher-{os.getuid()}"
    ]


def env(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this environment) with KF_RULE_CACHE_DIR pointing at `directory()`."""
    out = dict(os.environ if base is None else base)
    if "KF_RULE_CACHE_DIR" not in out and (d := directory()) is not None:
        out["KF_RULE_CACHE_DIR"] = str(d)
    return out


def _stamp(d: Path, binary: str) -> Path | None:
    """The file saying `binary`'s rules are compiled in `d`: named after the binary's path, size and
    mtime, so that an upgraded kingfisher-bin compiles once again."""
    try:
        real = os.path.realpath(binary)
        st = os.stat(real)
    except OSError:
        return None
    key = hashlib.sha256(f"{real}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return d / f".funes-compiled-{key}"


def _due(binary: str) -> Path | None:
    """The stamp `binary`'s compile would write, when one is due; None when its rules are compiled
    (or there is no usable cache dir to compile into: each run then compiles on its own)."""
    d = directory()
    stamp = _stamp(d, binary) if d is not None else None
    if stamp is None or str(stamp) in _warm:
        return None
    if stamp.exists():
        _warm.add(str(stamp))
        return None
    return stamp


def compiled(binary: str | None) -> bool:
    """Whether a run of `binary` would find its rules compiled (it starts warm). True too where a
    run has no compile to wait for that could be foreseen: no binary, or no usable cache dir."""
    return binary is None or _due(binary) is None


class Hold:
    """The compile lock, held by the run that compiles: `release(ok)` stamps the dir when it did."""

    def __init__(self, fd: int, stamp: Path, binary: str):
        self.fd, self.stamp, self.binary = fd, stamp, binary

    def release(self, ok: bool) -> None:
        try:
            if ok:
                with contextlib.suppress(OSError):
                    _prune(self.stamp.parent)
                    self.stamp.write_text(os.path.realpath(self.binary))
                    _warm.add(str(self.stamp))
        finally:
            os.close(self.fd)  # the lock goes with it


def _prune(d: Path) -> None:
    """Stamps of binaries gone (an upgraded wheel's old one, a test's wrapper) are removed: only a
    compile, under the lock, writes one, so they do not pile up."""
    for old in d.glob(".funes-compiled-*"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if not Path(old.read_text()).exists():
                old.unlink()


def before_run(binary: str, stop: threading.Event | None = None, limit: float = 600.0) -> tuple[float, Hold | None]:
    """Call before starting `binary` on the cache: (seconds waited for another run's compile, and the
    lock when this run is the one to compile: release it when the run ends). Waits at most `limit`
    seconds, and not once `stop` is set: the run then goes ahead, compiling if it must, as before."""
    stamp = _due(binary)
    if stamp is None:
        return 0.0, None
    try:
        fd = os.open(stamp.parent / _LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return 0.0, None
    t0 = time.monotonic()
    if not _lock(fd, stop, t0 + limit):
        os.close(fd)
        return time.monotonic() - t0, None
    waited = time.monotonic() - t0
    if stamp.exists():  # compiled by the run this one waited for
        os.close(fd)
        _warm.add(str(stamp))
        return waited, None
    return 0.0, Hold(fd, stamp, binary)  # (a wait for a compile that failed is no compile waited for)


def _lock(fd: int, stop: threading.Event | None, deadline: float) -> bool:
    import fcntl

    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:
            return False
        if (stop is not None and stop.is_set()) or time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)


class Early:
    """A compile begun before any batch needs it (the scan worker's start-up): `kingfisher rules
    compile-cache` under the lock, in the background; runs that start meanwhile wait for it."""

    def __init__(self, binary: str, timeout: float):
        self.binary, self.timeout = binary, timeout
        self.stop = threading.Event()
        self.proc: subprocess.Popen | None = None
        self.gate = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        _, hold = before_run(self.binary, self.stop, self.timeout)
        if hold is None:
            return
        ok = False
        try:
            with self.gate:
                if self.stop.is_set():
                    return
                cmd = [self.binary, "rules", "compile-cache", "--no-update-check", "--quiet"]
                null = subprocess.DEVNULL
                self.proc = subprocess.Popen(cmd, stdin=null, stdout=null, stderr=null, env=env())
            ok = self.proc.wait(self.timeout) == 0
        except (OSError, subprocess.SubprocessError):
            self.close()
        finally:
            hold.release(ok)

    def close(self) -> None:
        """Stop a compile still running. (A worker killed outright leaves it to finish on its own:
        it holds no scanned text, and the lock, close-on-exec, goes with the worker: a run may then
        compile beside it, which costs CPU, not correctness.)"""
        self.stop.set()
        with self.gate:
            proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()
