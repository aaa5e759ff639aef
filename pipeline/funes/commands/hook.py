"""`funes hook <agent> <event>`: queue the agent's event and wake the worker, in milliseconds, silently.

Runs inside the agent's turn, so it imports only the stdlib and `paths`, never holds the agent's pipes
past its own exit (the worker is detached with its stdio on /dev/null and the log), prints nothing and
never fails: every error goes to the log.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import time

from funes import paths

MAX_PAYLOAD = 1 << 20
READ_TIMEOUT_S = 2.0
PIPE_BUF = 4096  # an O_APPEND write up to this size lands whole even with many hooks at once


def fire(agent: str, event: str, session_file: str | None = None, stdin=None) -> None:
    try:
        payload = _read_payload(sys.stdin if stdin is None else stdin)
        _append(paths.queue_file(), _event_line(agent, event, payload, session_file))
        if not worker_running():
            start_worker()
    except Exception as e:  # the agent's turn must never see a funes failure
        log(f"hook {agent} {event}: {e!r}")


def _read_payload(stream) -> dict:
    """The hook's JSON on stdin, capped and time-bounded; anything unreadable counts as {}."""
    try:
        if stream is None or stream.isatty():
            return {}
        fd, chunks, size = stream.fileno(), [], 0
        deadline = time.monotonic() + READ_TIMEOUT_S
        while size < MAX_PAYLOAD:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                break
            data = os.read(fd, 65536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            doc = _parsed(b"".join(chunks))
            if doc is not None:  # a complete payload: an agent that keeps stdin open costs nothing more
                return doc
        return _parsed(b"".join(chunks)) or {}
    except OSError:
        return {}


def _parsed(raw: bytes) -> dict | None:
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else {}


def _event_line(agent: str, event: str, payload: dict, session_file: str | None) -> bytes:
    ev = {
        "agent": agent,
        "event": event,
        "ts": time.time(),
        "session_id": _str(payload.get("session_id")),
        "transcript": session_file or _str(payload.get("transcript_path")),
        "cwd": _str(payload.get("cwd")),
    }
    line = json.dumps(ev, ensure_ascii=False).encode() + b"\n"
    if len(line) > PIPE_BUF:
        ev["cwd"] = ""
        line = json.dumps(ev, ensure_ascii=False).encode() + b"\n"
    if len(line) > PIPE_BUF:  # an absurd path: the worker falls back to a sweep of that agent's folder
        ev["transcript"] = ""
        line = json.dumps(ev, ensure_ascii=False).encode() + b"\n"
    return line


def _str(value) -> str:
    return value if isinstance(value, str) else ""


def _append(path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def sync_lock_path():
    return paths.run_dir() / "sync.lock"


def worker_running() -> bool:
    """Probe the worker's lock without keeping it; a held lock means a worker will see the new event."""
    path = sync_lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def start_worker() -> None:
    home = paths.home().absolute()
    paths.logs_dir().mkdir(parents=True, exist_ok=True)
    with open(paths.logs_dir() / "sync.log", "ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", "funes.cli", "--home", str(home), "sync"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            cwd=str(home),
        )


def log(message: str) -> None:
    try:
        paths.logs_dir().mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(paths.logs_dir() / "sync.log", "a", encoding="utf-8") as f:
            f.write(f"{stamp} pid={os.getpid()} {message}\n")
    except OSError:
        pass
