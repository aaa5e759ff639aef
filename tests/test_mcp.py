"""`funes mcp` as a real subprocess driven by the SDK's clients, and the shared `funes serve` behind it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from agent_configs import env_for
from mcp_support import (
    cli,
    index_sample,
    jsonrpc,
    serve_pid,
    start_server,
    stdio_params,
    stop_server,
    text,
    uds_client,
)

QUERY = "why did we move off the streaming parser"
SESSION, TURN = "5f0c2a1e-9b7d-4c3e-8a21-7d6e5b4c3a21", "a2"


@pytest.fixture(scope="module")
def memory_home(tmp_path_factory):
    fh = tmp_path_factory.mktemp("mcp") / "home" / ".funes"
    fh.parent.mkdir(parents=True)
    index_sample(fh)
    yield fh
    stop_server(fh)


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_stdio_tools_are_plain_text_and_equal_the_cli(memory_home, mode):
    from mcp import Client

    async def go():
        async with Client(stdio_params(memory_home, "--backend", "local"), mode=mode) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            recall = await c.call_tool("recall", {"query": QUERY, "k": 3})
            get = await c.call_tool("get", {"session_id": SESSION, "turn_uuid": TURN, "memory": "local"})
            status = await c.call_tool("status", {})
            return c.protocol_version, tools, recall, get, status

    version, tools, recall, get, status = run(go())
    assert version == ("2025-11-25" if mode == "legacy" else version) and version
    assert set(tools) == {"recall", "get", "status"}
    for t in tools.values():
        assert t.annotations.read_only_hint is True and t.output_schema is None
    assert "→ get" in tools["recall"].description and "never built" in tools["recall"].description
    for result in (recall, get, status):
        assert not result.is_error and result.structured_content is None and len(result.content) == 1
    assert text(recall) == cli(memory_home, "recall", QUERY, "-k", "3")
    assert text(get) == cli(memory_home, "get", SESSION, TURN, "--format", "agent")
    assert text(status).split("last indexed")[0] == cli(memory_home, "status").split("last indexed")[0]


def test_protocol_2024_11_05_handshake_over_raw_pipes(memory_home):
    proc = subprocess.Popen(
        [sys.executable, "-m", "funes.cli", "mcp", "--backend", "local"],
        env=env_for(memory_home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        init = jsonrpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "clientInfo": {"name": "pi-funes-bridge", "version": "0.1.0"},
                },
            },
        )
        assert init["result"]["protocolVersion"] == "2024-11-05"
        assert init["result"]["serverInfo"]["name"] == "funes" and "recall" in init["result"]["instructions"][:512]
        jsonrpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = jsonrpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
        assert all(t["annotations"]["readOnlyHint"] and "outputSchema" not in t for t in listed)
        bad = jsonrpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"k": 0, "query": "x"}},
            },
        )
        assert bad["result"]["isError"] is True and bad["result"]["content"][0]["text"].startswith("recall error: ")
        missing = jsonrpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"k": "many"}},
            },
        )
        assert missing["result"]["isError"] is True
        ok = jsonrpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"query": QUERY, "k": 3}},
            },
        )
        assert ok["result"]["isError"] is False and "structuredContent" not in ok["result"]
        assert ok["result"]["content"][0]["text"] == cli(memory_home, "recall", QUERY, "-k", "3")
        nohit = jsonrpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "tools/call",
                "params": {"name": "get", "arguments": {"session_id": "nope", "turn_uuid": "x"}},
            },
        )
        assert nohit["result"]["isError"] is True and nohit["result"]["content"][0]["text"].startswith("get error: ")
        assert proc.poll() is None  # still serving after every error
    finally:
        proc.kill()
        proc.wait()


def test_no_memory_is_error_text_not_a_crash(tmp_path):
    from mcp import Client

    fh = tmp_path / "home" / ".funes"
    fh.parent.mkdir(exist_ok=True)

    async def go():
        async with Client(stdio_params(fh, "--backend", "local")) as c:
            first = await c.call_tool("recall", {"query": "anything"})
            second = await c.call_tool("status", {})
            return first, second

    first, second = run(go())
    assert first.is_error and text(first).startswith("recall error: ") and "funes" in text(first)
    assert not second.is_error and text(second).startswith("memory: local")


def test_a_running_server_sees_a_new_index(tmp_path):
    from mcp import Client

    fh = tmp_path / "home" / ".funes"
    fh.parent.mkdir(exist_ok=True)
    index_sample(fh, "claude")

    async def go():
        async with Client(stdio_params(fh, "--backend", "local")) as c:
            before = text(
                await c.call_tool("recall", {"query": "test_checkout_applies_coupon flaky", "harness": "codex"})
            )
            index_sample(fh, "codex")
            after = text(
                await c.call_tool("recall", {"query": "test_checkout_applies_coupon flaky", "harness": "codex"})
            )
            return before, after

    before, after = run(go())
    assert "codex" not in before.split("\n")[0]
    assert after.splitlines()[0].split()[1] == "codex"


def test_shared_server_answers_eight_concurrent_sessions(memory_home):
    from funes import paths

    start_server(memory_home)
    queries = [QUERY, "bulk inserts via COPY", "duplicate detection", "nightly import of bank statements"] * 2
    expected = {q: cli(memory_home, "recall", q, "-k", "2") for q in set(queries)}

    async def one(q):
        http, client = uds_client(paths.serve_socket(memory_home))
        async with http, client as c:
            return q, text(await c.call_tool("recall", {"query": q, "k": 2}))

    async def all_at_once():
        return await asyncio.gather(*(one(q) for q in queries))

    answers = run(all_at_once())
    assert len(answers) == 8 and all(got == expected[q] for q, got in answers)


def test_front_end_forwards_to_the_shared_server_and_falls_back_when_it_dies(memory_home):
    from mcp import Client

    stop_server(memory_home)
    start_server(memory_home, FUNES_SERVE_DELAY_S="3")
    daemon = serve_pid(memory_home)
    expected = cli(memory_home, "recall", QUERY, "-k", "3")

    async def go():
        async with Client(stdio_params(memory_home, "--backend", "shared")) as c:
            warm = await c.call_tool("status", {})
            call = asyncio.create_task(c.call_tool("recall", {"query": QUERY, "k": 3}))
            await asyncio.sleep(1.0)  # the call is now inside the shared server's 3 s delay
            os.kill(daemon, signal.SIGKILL)
            t0 = time.monotonic()
            answered = await call
            return warm, answered, time.monotonic() - t0

    warm, answered, waited = run(go())
    assert not warm.is_error
    assert not answered.is_error and text(answered) == expected  # answered in-process instead
    assert waited < 60


def test_serve_on_a_loopback_port_and_single_instance(tmp_path):
    import socket

    from mcp import Client

    fh = tmp_path / "home" / ".funes"
    fh.parent.mkdir(exist_ok=True)
    index_sample(fh)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        start_server(fh, "--port", str(port))
        second = subprocess.run(
            [sys.executable, "-m", "funes.cli", "serve"], env=env_for(fh), capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 1 and second.stderr.startswith("funes: funes serve is already running")

        async def go():
            async with Client(f"http://127.0.0.1:{port}/mcp") as c:
                return text(await c.call_tool("recall", {"query": QUERY, "k": 3}))

        assert run(go()) == cli(fh, "recall", QUERY, "-k", "3")
    finally:
        stop_server(fh)


def test_idle_server_exits_and_removes_its_socket(tmp_path):
    from funes import paths

    fh = tmp_path / "home" / ".funes"
    fh.parent.mkdir(exist_ok=True)
    proc = start_server(fh, "--idle", "0.02")  # 1.2 s
    assert proc.wait(timeout=30) == 0
    assert not paths.serve_socket(fh).exists()
