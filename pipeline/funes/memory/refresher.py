"""The lexical index refreshed in another process while a large budgeted index run reads on.

On day zero a refresh (`indexes.refresh`: tokenise and index what was stored) is about half of the
indexing process's CPU, while the scan worker's core is half idle; in a thread of the same process
it gains nothing (the GIL: a refresh beside a busy Python loop took twice its time and the loop
got ~1.2x one core between them). So a budgeted run that scans in a worker also refreshes in one:
`begin()` asks the child to bring the index up to the rows committed now and returns at once;
`poll()` and `wait()` give its answer, (seconds it took, rows it added, its CPU seconds).

The child refreshes on the parent's behalf, under the parent's writer lock, one refresh at a time:
the parent begins no refresh while one is running and refreshes in its own process only once the
child has answered, failed or been closed. On Linux the child dies with the parent
(PR_SET_PDEATHSIG), so no refresh outlives the lock; elsewhere it exits at its stdin's end, after
the refresh it runs, which a parent killed mid-refresh may leave writing the index beside the next
writer (the index is derived data: a damaged one is rebuilt, `indexes.damage`). A failure loses
nothing (the table holds every row, and a refresh stopped halfway left the manifest it had): the
caller refreshes in its own process instead, which reports any real error.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from funes import paths

# a refresh of a day-zero pass's 40k chunks takes ~1-2 s: this long without an answer is a hung child
TIMEOUT_S = 600.0
_CLOSE_GRACE_S = 5.0


def wanted() -> bool:
    """FUNES_INDEX_REFRESHER=off keeps every refresh in the indexing process."""
    return os.environ.get("FUNES_INDEX_REFRESHER", "").strip().lower() not in ("0", "off", "no", "false")


class Refresher:
    """One child process refreshing `memory`'s indexes on request; `close()` on every path."""

    def __init__(self, memory, argv: list[str] | None = None, timeout: float = TIMEOUT_S):
        self.timeout = timeout
        self.failed = False  # set once: no more refreshes are asked of it
        self.busy = False  # a refresh was asked and not answered yet
        self._answer: tuple[float, int, float] | None = None
        self._arrived = threading.Event()
        env = paths.child_env()  # this very funes, as the scan worker runs it
        cmd = argv or [sys.executable, "-P", "-m", "funes.memory.refresher", str(memory.path), str(int(memory.default))]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C reaches the parent, which closes it
        )
        try:
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()
        except BaseException:  # an interrupt before the caller holds it: nothing else would reap it
            self.kill()
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                reply = json.loads(line)
                ok = reply.get("ok") is True
                answer = (float(reply["seconds"]), int(reply["added"]), float(reply["cpu"])) if ok else None
            except (ValueError, KeyError, TypeError):
                answer = None
            if answer is None:
                self.failed = True  # (noise between refreshes too: no reader is left for the next answer)
            self._answer = answer
            self._arrived.set()
            if answer is None:
                break
        self.failed = True  # the child is gone: a waiter stops waiting, and nothing more is asked
        self._arrived.set()

    def begin(self) -> bool:
        """Ask for a refresh; False when one is running already or the child has failed."""
        if self.failed or self.busy or not self._reader.is_alive():
            return False
        self._arrived.clear()
        self._answer = None
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"refresh\n")
            self.proc.stdin.flush()
        except OSError:
            self.failed = True
            return False
        self.busy = True
        return True

    def poll(self) -> tuple[float, int, float] | None:
        """The running refresh's answer once it came (once), else None; a failure sets `failed`."""
        if not (self.busy and self._arrived.is_set()):
            return None
        self.busy = False
        return self._answer

    def wait(self, timeout: float | None = None) -> tuple[float, int, float] | None:
        """Wait for the running refresh (at most `timeout`, else TIMEOUT_S; then it is killed): its
        answer, or None (none running, or it failed: `failed`)."""
        if not self.busy:
            return None
        if not self._arrived.wait(self.timeout if timeout is None else min(timeout, self.timeout)):
            self.kill()
        return self.poll()

    def close(self) -> None:
        """Close the child's stdin (it exits after the refresh it is running), kill it if it does
        not within a grace period, and reap it. Safe to repeat."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(_CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reader.join()
        with contextlib.suppress(OSError):
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def kill(self) -> None:
        self.failed = True
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
        self.proc.wait()


def _die_with_parent() -> None:
    """On Linux the kernel kills this process when its parent dies, even mid-refresh."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the prctl took hold
            os._exit(0)


def main() -> None:
    _die_with_parent()
    src, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's print must not land inside a reply
    from funes.memory import Memory, indexes, lance

    memory = Memory(Path(sys.argv[1]), default=sys.argv[2] == "1")
    # paid before the first request, while the parent still reads: lance (without pandas, which
    # no refresh converts to: 1.5 of a first refresh's 6.9 s, profiled) and bm25s
    lance.import_for_reading()
    import bm25s  # noqa: F401

    with indexes.shared_pieces():  # the run's refreshes share one piece cache, as in the parent
        for line in src:
            if line.strip() != b"refresh":
                break
            t0, c0 = time.monotonic(), time.process_time()
            reply: dict[str, object]
            try:
                added = int(indexes.refresh(memory).get("added_rows", 0))
                reply = {"ok": True, "seconds": time.monotonic() - t0, "added": added, "cpu": time.process_time() - c0}
            except Exception as e:  # the parent refreshes in its own process, which reports it
                reply = {"ok": False, "error": type(e).__name__}
            out.write(json.dumps(reply).encode() + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
