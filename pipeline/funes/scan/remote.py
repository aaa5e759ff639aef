"""The parent's side of the scan worker (`worker`): one long-lived process per large index run.

`Scanner.start(texts, commands)` sends a batch and returns at once; the `Pending` it returns is
`scan.Scan`'s contract (`done()`, `result()`, `close()`, `waited`), so `ingest/redact.py` takes
either. Its findings are exactly `scan.find`'s (the worker runs it), checked on arrival: a span
outside its text, unsorted or overlapping spans, a reply that is not one, the worker dying or
going silent past the timeout all raise FunesError, and the batch is committed by no one (fail
closed, as a Kingfisher failure is). A failed worker is not restarted: a batch it failed stops
the run; one that fails between batches leaves the next flushes to scan in the indexing process
(`prepare.Flush` asks `ready()`).

The worker leads its own session (a terminal's Ctrl-C reaches funes only, which then closes it)
and exits when its stdin closes, so a parent killed by any signal leaves no worker behind. A hung
worker is killed outright: a Kingfisher child it had started then ends with its input, and its
spill dir (named after the dead worker) is swept at once (`scratch`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from funes import paths
from funes.errors import FunesError
from funes.scan import KINGFISHER_TIMEOUT_S, Finding, frames

# a reply later than this is a hung worker: Kingfisher's own timeout plus the in-process engines
TIMEOUT_S = KINGFISHER_TIMEOUT_S + 120
# owed transcript files from which a run starts a worker. It costs ~0.75 CPU-s of start-up (on the
# other core, ~1 s to its first answer) and saves the parent ~0.065 ms per chunk; measured side by
# side (bench/scan_worker.py, load ~4), 500 files were slower in wall with it, 3000 were not
MIN_UNITS = 1000
_CLOSE_GRACE_S = 5.0
_HINT = "set FUNES_SCAN_WORKER=off to scan in the indexing process"


def wanted(units: int) -> bool:
    """Whether a run owing `units` transcript files scans in a worker: FUNES_SCAN_WORKER=on/off
    decides, else at least MIN_UNITS."""
    raw = os.environ.get("FUNES_SCAN_WORKER", "").strip().lower()
    if raw in ("0", "off", "no", "false"):
        return False
    if raw in ("1", "on", "yes", "true"):
        return True
    return units >= MIN_UNITS


class Scanner:
    """One worker process, started at once, reused by every batch; `close()` on every path."""

    def __init__(self, argv: list[str] | None = None, timeout: float = TIMEOUT_S):
        self.timeout = timeout
        self.failure: tuple[str, str | None] | None = None  # why the worker is unusable, once it is
        self.pending: dict[int, Pending] = {}
        self.lock = threading.Lock()
        self.next_id = 0
        self.up = threading.Event()  # the worker said it is ready (`ready`)
        env = paths.child_env()  # the worker runs this very funes, wherever it was imported from
        try:
            self.proc = subprocess.Popen(
                # -P: the directory funes runs in is not on the worker's path (a `kingfisher/` or
                # `polars.py` there would shadow its imports, and only its, the parent's console script has no such entry)
                argv or [sys.executable, "-P", "-m", "funes.scan.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # a traceback there could quote scanned text
                env=env,
                start_new_session=True,
            )
        except OSError as e:
            raise FunesError(
                f"the secret scan worker could not be started ({e.strerror or type(e).__name__})", _HINT
            ) from None
        try:
            _widen(self.proc.stdin)
            # the batches are written by a thread of their own: a worker that stops reading (hung)
            # then blocks that thread, never the caller, whose `result` times out and kills it
            self.outbox: queue.SimpleQueue = queue.SimpleQueue()
            self.writer = threading.Thread(target=self._write, daemon=True)
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.writer.start()
            self.reader.start()
        except BaseException:  # an interrupt before the caller holds it: nothing else would reap it
            self.kill()
            raise

    def ready(self) -> bool:
        """Whether the worker has started up (and not failed): a caller that must not wait for
        its start-up scans in its own process until then (prepare.Flush does)."""
        return self.up.is_set() and self.failure is None

    def start(self, texts: list[str], *, commands: list[str | None] | None = None, only=None) -> Pending:
        """The batch's scan, sent to the worker: findings per text as `scan.find(texts, ...)`."""
        with self.lock:
            if self.failure is not None:
                raise FunesError(*self.failure)
            rid, self.next_id = self.next_id, self.next_id + 1
            pending = self.pending[rid] = Pending(self, rid, texts)
        self.outbox.put(frames.encode(("scan", rid, texts, commands, None if only is None else sorted(only))))
        return pending

    def _write(self) -> None:
        """Send each batch queued; at the None `close` queues, close the worker's stdin (it then exits)."""
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (frame := self.outbox.get()) is not None:
                frames.send(stdin, frame)
        except OSError:
            self._fail("the secret scan worker exited")
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _read(self) -> None:
        why = "the secret scan worker exited"
        try:
            assert self.proc.stdout is not None
            while True:
                reply = frames.read(self.proc.stdout)
                if not (isinstance(reply, tuple) and len(reply) in (3, 4) and isinstance(reply[0], int)):
                    why = "the secret scan worker sent a malformed reply"
                    break
                if reply[0] == -1 and reply[1] == "ready":
                    self.up.set()
                    continue
                with self.lock:
                    pending = self.pending.pop(reply[0], None)
                if pending is not None:  # none: a batch closed before its reply (a budget stop)
                    pending.arrive(reply)
        except frames.Closed:
            pass
        except (ValueError, OSError):
            why = "the secret scan worker sent a malformed reply"
        self._fail(why)

    def _fail(self, why: str) -> None:
        with self.lock:
            if self.failure is None:
                code = self.proc.poll()
                self.failure = (why + (f" (exit {code})" if code else ""), _HINT)
            waiting, self.pending = list(self.pending.values()), {}
        for p in waiting:
            p.fail(self.failure)

    def forget(self, rid: int) -> None:
        with self.lock:
            self.pending.pop(rid, None)

    def close(self) -> None:
        """Close the worker's stdin (it stops its Kingfisher children and exits), kill it if it
        does not within a grace period, and reap it. Safe to repeat. Batches not sent yet are
        dropped: every one still pending is abandoned by now (a budget stop, an error)."""
        with contextlib.suppress(queue.Empty):
            while True:
                self.outbox.get_nowait()
        self.outbox.put(None)
        try:
            self.proc.wait(_CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
        self.writer.join()
        self.reader.join()
        with contextlib.suppress(OSError):
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        # a killed worker could not remove its Kingfisher spill dirs (the batch's unredacted text):
        # its pid is dead now, so they go at once
        from funes.scan import scratch

        with contextlib.suppress(FunesError, OSError):
            scratch.sweep(scratch.root())


def _widen(pipe) -> None:
    """The pipe's buffer as large as Linux allows a user (1 MB by default, not 64 KB): a batch of tens
    of MB then crosses in a few dozen writes, each a GIL hand-off between a sending or reading thread
    and a busy main thread on each side, not in hundreds."""
    try:
        import fcntl

        size = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, min(size, 16 << 20))
    except (OSError, ValueError, AttributeError, ImportError):
        pass  # not Linux, or a limit lowered: the default buffer works, in more writes


class Pending:
    """One batch sent to the worker: `scan.Scan`'s contract."""

    def __init__(self, scanner: Scanner, rid: int, texts: list[str]):
        self.scanner, self.rid, self.texts = scanner, rid, texts
        self.arrived = threading.Event()
        self.reply: tuple | None = None
        self.failure: tuple[str, str | None] | None = None
        self.waited = 0.0  # wall seconds `result` waited for the reply
        # when the reply was read (the reader thread's clock): a parent busy refreshing sees it
        # seconds later, and the budget clock must price the worker by when it answered
        self.arrived_at: float | None = None

    def arrive(self, reply: tuple) -> None:
        self.reply = reply
        self.arrived_at = time.monotonic()
        self.arrived.set()

    def fail(self, failure: tuple[str, str | None]) -> None:
        self.failure = failure
        self.arrived.set()

    def done(self) -> bool:
        return self.arrived.is_set()

    def result(self) -> list[list[Finding]]:
        t0 = time.monotonic()
        if not self.arrived.wait(self.scanner.timeout):
            self.scanner.kill()  # a hung worker is stopped; the reader then fails every other batch
            raise FunesError(f"the secret scan worker gave no answer in {self.scanner.timeout:g}s", _HINT)
        self.waited = time.monotonic() - t0
        if self.failure is not None:
            raise FunesError(*self.failure)
        assert self.reply is not None
        if self.reply[1] == "error" and len(self.reply) == 4:
            message, hint = self.reply[2], self.reply[3]
            raise FunesError(str(message), None if hint is None else str(hint))
        if self.reply[1] != "ok" or len(self.reply) not in (3, 4) or self.compiled < 0:
            raise FunesError("the secret scan worker sent a malformed reply", _HINT)
        return _decode(self.texts, self.reply[2])

    @property
    def compiled(self) -> float:
        """Seconds of this batch's time in the worker (since it was sent or the reply before) that
        its Kingfisher waited for the rule compile; -1 for a reply whose count is no number."""
        extra = self.reply[3] if self.reply is not None and self.reply[1] == "ok" and len(self.reply) == 4 else 0.0
        return float(extra) if type(extra) in (int, float) and 0 <= extra < 1e6 else -1.0

    def close(self) -> None:
        self.scanner.forget(self.rid)


def _decode(texts: list[str], sparse) -> list[list[Finding]]:
    """Each text's findings from the reply's (index, [(kind, start, end)...]) pairs, every one checked."""
    out: list[list[Finding]] = [[] for _ in texts]
    last = -1
    try:
        for i, spans in sparse:
            if not (isinstance(i, int) and last < i < len(texts)) or not spans:
                raise ValueError
            last, n, pos, found = i, len(texts[i]), 0, out[i]
            for kind, s, e in spans:
                if not (isinstance(kind, str) and kind and type(s) is int and type(e) is int and pos <= s < e <= n):
                    raise ValueError
                found.append(Finding(kind, s, e))
                pos = e
    except (ValueError, TypeError):
        raise FunesError("the secret scan worker sent a malformed reply", _HINT) from None
    return out
