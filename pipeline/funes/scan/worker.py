"""The scan worker: `python -m funes.scan.worker`, one per large `funes index` run (`remote` starts it).

It reads scan requests from stdin (`frames`: ("scan", id, texts, commands, only)) and answers each
on stdout, in order, with what `scan.find` gives for it: (id, "ok", [(text index, [(kind, start,
end)...])...], seconds) listing only the texts with findings (`seconds`: how long, since the reply
before, its Kingfisher waited for the rule compile; the parent's budget clock takes that as no
scanning rate), or (id, "error", message, hint) when the scan
failed (a Kingfisher failure: fail closed, the parent commits none of that batch). It computes
the views, runs Kingfisher and the in-process engines and merges, so the parent's core only reads,
chunks and stores. Each request is begun (views, Kingfisher started) by the thread that reads it,
the moment it arrives, so its Kingfisher scans while the main thread still runs the in-process
engines of the one before (as the parent's own pipelined flush did).

Its first frame says it is ready (imports and a warm-up scan done), so that the parent scans in
its own process until then rather than wait for the start-up. On a machine where Kingfisher's rules
are not compiled yet it starts compiling them first thing (`rulecache.Early`, ~7 s on the other core
while its imports and the parent's first reads run): its first batches then wait for that compile,
not compile again each.

It exits when stdin closes (the parent closed it, or died: even `kill -9` closes it), stopping
every Kingfisher child it started and removing their spill dirs first (batches not answered yet
are dropped: the parent no longer waits for them); SIGTERM does the same.
It imports only what the scanners need (no torch, datasets, lance, pandas).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque

from funes.errors import FunesError
from funes.scan import frames

READY = (-1, "ready", None)  # the first frame: imports and warm-up done
_WARM_UP = "export API_KEY='Zq8xVt3LmK9pWr2YbN6c' password=hunter2xyz ghp_" + "a1B2c3D4e5" * 4


def _stop(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup below is not interrupted again
    raise SystemExit(0)


def _sparse(findings) -> list:
    return [(i, [(f.kind, f.start, f.end) for f in fs]) for i, fs in enumerate(findings) if fs]


class _Worker:
    def __init__(self, src, out):
        from funes import scan

        # the in-process engines' lazy imports (polars, detect-secrets) and pattern compiles, paid
        # now, while the parent still reads its first flush, not when that flush's batch arrives
        scan.find([_WARM_UP], only=("detect-secrets", "funes-rules"))
        self.scan, self.src, self.out = scan, src, out
        self.lock = threading.Lock()
        self.ready = threading.Condition(self.lock)
        self.started: deque = deque()  # (id, the scan begun or None, (message, hint) of its failure, begun at)
        self.answered_at = 0.0  # when the last reply was written
        self.current = None  # the scan being answered
        self.closing = False  # set under the lock: nothing is begun after it

    def read_requests(self) -> None:
        try:
            while True:
                self.begin(frames.read(self.src))
        except (frames.Closed, ValueError, OSError):
            pass
        # the parent is gone or done: the main thread unwinds (SIGTERM -> SystemExit) and closes every scan
        os.kill(os.getpid(), signal.SIGTERM)

    def begin(self, request) -> None:
        if self.closing:
            return
        # begun outside the lock (views and Kingfisher's start take seconds on a large batch): the
        # main thread meanwhile takes the batch before from `started` and answers it
        rid, job, error, began = None, None, None, time.monotonic()
        try:
            _, rid, texts, commands, only = request
            job = self.scan.start(texts, only=only, commands=commands)
        except FunesError as e:
            error = (e.message, e.hint)
        except Exception as e:
            error = (f"the secret scan could not start ({type(e).__name__})", None)
        with self.lock:
            if self.closing:  # `serve` has closed what it knew of: this one is closed here
                if job is not None:
                    job.close()
                return
            self.started.append((rid, job, error, began))
            self.ready.notify()

    def answer(self) -> tuple:
        with self.lock:
            while not self.started:
                self.ready.wait()
            self.current = self.started[0][1]  # before the pop: a SIGTERM between them loses no job
            rid, job, error, began = self.started.popleft()
        if job is None:
            return (rid, "error", *error)
        try:
            found = _sparse(job.result())
            # the parent prices this batch from when it was sent or the reply before came, whichever is later
            return (rid, "ok", found, job.compiled_for(max(began, self.answered_at)))
        except FunesError as e:
            return (rid, "error", e.message, e.hint)
        except Exception as e:
            return (rid, "error", f"the secret scan failed ({type(e).__name__})", None)
        finally:
            self.current = None
            job.close()

    def serve(self) -> None:
        try:
            while True:
                reply = self.answer()
                try:
                    frames.write(self.out, reply)
                except OSError:
                    return  # the parent is gone
                self.answered_at = time.monotonic()
        finally:
            with self.lock:
                self.closing = True
                left = [job for _, job, _, _ in self.started if job is not None] + [self.current]
            for job in left:
                if job is not None:
                    job.close()


def _compile_early():
    """The rule compile begun now, if Kingfisher's cache is cold (`rulecache`), else None."""
    from funes.scan import KINGFISHER_TIMEOUT_S, kingfisher, rulecache

    path = kingfisher.binary()[0]
    return rulecache.Early(path, KINGFISHER_TIMEOUT_S) if path else None


def main() -> None:
    src, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's print must not land inside a frame
    signal.signal(signal.SIGTERM, _stop)
    early = _compile_early()
    try:
        worker = _Worker(src, out)
        frames.write(out, READY)  # the parent sends its batches here from now on, not before
        threading.Thread(target=worker.read_requests, daemon=True).start()
        worker.serve()
    finally:
        if early is not None:
            early.close()


if __name__ == "__main__":
    main()
