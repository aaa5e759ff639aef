"""`funes serve`: the one process per FUNES_HOME that holds the models and answers every agent session's recalls.

Streamable HTTP (stateless, JSON responses) on a Unix socket under $FUNES_HOME/run — and, with --port, on
127.0.0.1 only. Single instance by lock; exits after an idle period (never with --port unless --idle is given).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
import sys
import time

from funes import paths
from funes.errors import FunesError
from funes.mcp import LocalBackend, build_server

IDLE_MIN = float(os.environ.get("FUNES_SERVE_IDLE_MIN", "20"))


class _Activity:
    """ASGI wrapper that remembers when the server last had a request in flight."""

    def __init__(self, app):
        self.app, self.inflight, self.last = app, 0, time.monotonic()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.inflight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.inflight -= 1
            self.last = time.monotonic()

    def idle_for(self) -> float:
        return 0.0 if self.inflight else time.monotonic() - self.last


def serve(port: int | None = None, idle: float | None = None) -> int:
    run = paths.run_dir()
    run.mkdir(parents=True, exist_ok=True)
    os.chmod(run, 0o700)
    lock = os.open(run / "serve.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        raise FunesError(
            "funes serve is already running for this FUNES_HOME", "every `funes mcp` uses it; stop it to restart"
        ) from None
    idle_s = (idle if idle is not None else (None if port else IDLE_MIN)) and 60.0 * (
        idle if idle is not None else IDLE_MIN
    )
    sockets = [_unix_socket(paths.serve_socket())] + ([_tcp_socket(port)] if port else [])
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    where = f"{paths.serve_socket()}" + (f" and http://127.0.0.1:{port}/mcp" if port else "")
    sys.stderr.write(f"funes serve: pid {os.getpid()} on {where}\n")
    sys.stderr.flush()
    asyncio.run(_serve(sockets, port, idle_s))
    paths.serve_socket().unlink(missing_ok=True)
    return 0


async def _serve(sockets: list[socket.socket], port: int | None, idle_s: float | None) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    # the Unix-socket client sends `Host: localhost`; TCP clients must name the loopback port (DNS rebinding)
    hosts = ["localhost"] + ([f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"] if port else [])
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts)
    server = build_server(LocalBackend(on_call=_test_delay()))
    app = _Activity(server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    runner = uvicorn.Server(config)
    watcher = asyncio.create_task(_exit_when_idle(runner, app, idle_s))
    try:
        await runner.serve(sockets=sockets)
    finally:
        watcher.cancel()


def _test_delay():
    # FUNES_SERVE_DELAY_S holds every call that long: how the tests kill the server mid-call
    delay = float(os.environ.get("FUNES_SERVE_DELAY_S", "0") or 0)
    return (lambda: time.sleep(delay)) if delay > 0 else None


async def _exit_when_idle(runner, app: _Activity, idle_s: float | None) -> None:
    if idle_s is None:
        return
    while True:
        await asyncio.sleep(min(5.0, idle_s / 4))
        if app.idle_for() >= idle_s:
            runner.should_exit = True
            return


def _unix_socket(path) -> socket.socket:
    path.unlink(missing_ok=True)  # we hold the lock: a socket file left here is a dead server's
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        s.bind(str(path))
    finally:
        os.umask(old)
    s.listen(128)
    return s


def _tcp_socket(port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))  # loopback only: nothing on the network can reach the memory
    except OSError as e:
        raise FunesError(f"cannot listen on 127.0.0.1:{port}: {e.strerror}", "pick another --port") from None
    s.listen(128)
    return s
