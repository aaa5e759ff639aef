"""A sample memory in a FUNES_HOME of its own, MCP clients for `funes mcp` / `funes serve`, and clean-up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent_configs import env_for

SAMPLES = Path(__file__).resolve().parents[1] / "pipeline" / "funes" / "samples"


def index_sample(funes_home: Path, harness: str = "claude", embed: bool = False) -> None:
    args = [sys.executable, "-m", "funes.cli", "index", str(SAMPLES / harness), "--harness", harness]
    out = subprocess.run(
        args + ([] if embed else ["--no-embed"]), env=env_for(funes_home), capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr


def cli(funes_home: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", *args], env=env_for(funes_home), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def stdio_params(funes_home: Path, *args: str, **extra: str):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "funes.cli", "mcp", *args],
        env=env_for(funes_home, **extra),
        cwd=str(funes_home.parent),
    )


def uds_client(sock: Path):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(sock)), timeout=120)
    return http, Client(streamable_http_client("http://localhost/mcp", http_client=http), mode="legacy")


def text(result) -> str:
    return "".join(c.text for c in result.content)


def serve_pid(funes_home: Path) -> int | None:
    try:
        return int((funes_home / "run" / "serve.lock").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop_server(funes_home: Path) -> None:
    """End the `funes serve` this test started (by the pid it wrote under its lock)."""
    pid = serve_pid(funes_home)
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


def start_server(funes_home: Path, *args: str, **extra: str) -> subprocess.Popen:
    from funes import paths

    proc = subprocess.Popen(
        [sys.executable, "-m", "funes.cli", "serve", *args],
        env=env_for(funes_home, **extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    sock = paths.serve_socket(funes_home)
    from funes.mcp import reachable

    for _ in range(300):
        if serve_pid(funes_home) == proc.pid and reachable(sock):
            return proc
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.1)
    raise AssertionError("funes serve did not start")


def jsonrpc(proc: subprocess.Popen, msg: dict) -> dict | None:
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    if "id" not in msg:
        return None
    while True:
        line = proc.stdout.readline()
        assert line, "server closed stdout"
        doc = json.loads(line)
        if doc.get("id") == msg["id"]:
            return doc
