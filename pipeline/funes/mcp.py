"""`funes mcp`: the MCP server agents run (stdio, official SDK) with the read-only tools recall, get, status.

Every tool returns plain text — the CLI's agent format byte for byte, never a structured copy (Claude Code
would show the model only the structured one). Failures come back as tool error text; the server keeps
serving. The front end loads no model itself: by default it forwards each call to the one shared
`funes serve` process of this FUNES_HOME (starting it on demand) and answers in-process only when that
cannot be reached. `build_server` defines the tools once for both sides.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import traceback
from contextlib import suppress
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from funes import __version__, paths
from funes.errors import FunesError

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True, destructive_hint=False)
GET_CAP_CHARS = 80_000  # ~20k tokens: Claude warns past 10k tokens of tool output and truncates at 25k
SPAWN_WAIT_S = 5.0
RETRY_SHARED_S = 30.0
MODERN = "2026-07-28"

INSTRUCTIONS = (
    "funes is this user's memory of past coding-agent sessions (verbatim, with provenance). Call `recall` "
    "with a natural-language query before answering about prior decisions, rationale or context, before "
    "asserting the history of anything (never built, dropped, out of scope), and before re-deriving subject "
    "matter a past session already researched. Then call `get` with the ids of a hit's `→ get` line to read "
    "the whole turn. Both take an optional memory. Search is hybrid (vectors + BM25), cross-encoder reranked, "
    "with a mild recency preference; `status` reports what the memory holds and how fresh it is."
)
RECALL_DOC = (
    "Retrieve decisions, rationale and context from the user's past agent sessions: ranked verbatim passages "
    "with provenance (agent, time, session, turn) and neighbouring chunks; each hit ends with a `→ get` line "
    "to pass to `get`. Use it when the user refers to earlier work or context may exist in a prior session; "
    "recall subject matter too (how an API, library or system behaves; anything a past session, often a "
    "research subagent, already investigated) before re-deriving it; and recall before asserting the history "
    "of anything (never built, dropped, out of scope, never discussed) — a confident claim about a past "
    "decision is the cue. Prose ranks ahead of tool output of equal relevance unless the query names "
    "output (an error, a log, a traceback); for tool output alone pass `block_type` `tool_result`. "
    "An English query also reaches sessions written in Chinese or Japanese, and the reverse, through a glossary "
    "of common coding words; naming identifiers (paths, flags, function names) helps in any language. "
    "Pass `memory` to read another memory (a path or a shared one)."
)
GET_DOC = (
    "Drill into a recall hit: the named turn plus the turns within `window` of it, reassembled in order. "
    "Pass session_id, turn_uuid and memory exactly as the hit's `→ get` line gives them."
)
STATUS_DOC = (
    "What the memory holds: chunk and session counts per agent, vectors still pending, index freshness, models."
)

Memory = Annotated[str | None, Field(description="`local` (default: the server's memory), or a memory path")]


def build_server(backend) -> MCPServer:
    server = MCPServer("funes", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(description=RECALL_DOC, annotations=READ_ONLY, structured_output=False)
    async def recall(
        query: Annotated[str, Field(description="what to recall, in natural language")],
        k: Annotated[int, Field(description="number of hits")] = 8,
        block_type: Annotated[str | None, Field(description="only text, thinking, tool_use or tool_result")] = None,
        harness: Annotated[str | None, Field(description="only claude, codex, pi or hermes sessions")] = None,
        memory: Memory = None,
    ) -> CallToolResult:
        return await _result(
            backend, "recall", _given(query=query, k=k, block_type=block_type, harness=harness, memory=memory)
        )

    @server.tool(description=GET_DOC, annotations=READ_ONLY, structured_output=False)
    async def get(
        session_id: Annotated[str, Field(description="from the hit's `→ get` line")],
        turn_uuid: Annotated[str, Field(description="from the hit's `→ get` line")],
        window: Annotated[int, Field(description="turns either side, by seq")] = 3,
        memory: Memory = None,
    ) -> CallToolResult:
        return await _result(
            backend, "get", _given(session_id=session_id, turn_uuid=turn_uuid, window=window, memory=memory)
        )

    @server.tool(description=STATUS_DOC, annotations=READ_ONLY, structured_output=False)
    async def status(memory: Memory = None) -> CallToolResult:
        return await _result(backend, "status", _given(memory=memory))

    return server


async def _result(backend, name: str, args: dict) -> CallToolResult:
    text, failed = await backend.call(name, args)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=failed)


def _given(**args) -> dict:
    return {k: v for k, v in args.items() if v is not None}


class LocalBackend:
    """Answers in this process (models load on the first call); one call at a time: the Retriever is not thread-safe."""

    def __init__(self, default_memory: str | None = None, on_call=None):
        self.default_memory = default_memory
        self.on_call = on_call or (lambda: None)
        self._lock = threading.Lock()

    async def call(self, name: str, args: dict) -> tuple[str, bool]:
        return await anyio.to_thread.run_sync(self.call_sync, name, args)

    def call_sync(self, name: str, args: dict) -> tuple[str, bool]:
        """(text, is_error): errors are the upstream `<tool> error: …` text, never an exception."""
        with self._lock:
            self.on_call()
            try:
                return answer(
                    name, {"memory": self.default_memory, **{k: v for k, v in args.items() if v is not None}}
                ), False
            except FunesError as e:
                return f"{name} error: {e.message}" + (f"\n  hint: {e.hint}" if e.hint else ""), True
            except Exception as e:  # a bug answers as error text; the server keeps serving
                traceback.print_exc(file=sys.stderr)
                return f"{name} error: internal error: {e!r}", True


def answer(name: str, args: dict) -> str:
    """One tool call -> the CLI's agent-format text."""
    from funes import render

    memory = args.get("memory") or None
    if name == "recall":
        from funes.commands.recall import recall

        result = recall(
            args.get("query", ""),
            memory=memory,
            k=int(args.get("k", 8)),
            block_type=args.get("block_type"),
            harness=args.get("harness"),
        )
        return render.recall_agent(result)
    if name == "get":
        from funes.commands.get import get

        text = render.get_agent(
            get(args.get("session_id", ""), args.get("turn_uuid", ""), memory=memory, window=int(args.get("window", 3)))
        )
        if len(text) > GET_CAP_CHARS:
            text = (
                text[:GET_CAP_CHARS]
                + f"\n[… {len(text) - GET_CAP_CHARS} more characters cut; call get with a smaller window]\n"
            )
        return text
    from funes.commands.status import status

    return render.status_text(status(memory.split(",")[0] if memory else None))  # status: the first memory


class SharedBackend:
    """Forwards to the shared `funes serve` over its Unix socket; answers locally when it cannot be reached."""

    def __init__(self, default_memory: str | None = None, spawn: bool = True):
        self.default_memory = default_memory
        self.spawn = spawn
        self.local = LocalBackend(default_memory)
        self._skip_until = 0.0
        self._warned = False
        self._http: Any = None

    async def call(self, name: str, args: dict) -> tuple[str, bool]:
        if self.default_memory and not args.get("memory"):
            args = {**args, "memory": self.default_memory}
        if time.monotonic() >= self._skip_until:
            try:
                return await self._forward(name, args)
            except Exception as e:  # the shared process is gone or refused: answer here instead
                self._skip_until = time.monotonic() + RETRY_SHARED_S
                self._note(f"funes mcp: shared server unavailable ({type(e).__name__}); answering in-process")
        return await self.local.call(name, args)

    async def _forward(self, name: str, args: dict) -> tuple[str, bool]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        sock = paths.serve_socket()
        if not reachable(sock):
            if not self.spawn:
                raise ConnectionError("no shared server")
            await anyio.to_thread.run_sync(start_server_and_wait, sock)
        if self._http is None:
            # one client for the session: building one costs ~50 ms (TLS context), a call over it ~10 ms
            transport = httpx2.AsyncHTTPTransport(uds=str(sock))
            self._http = httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(300.0, connect=5.0))
        try:
            async with Client(streamable_http_client("http://localhost/mcp", http_client=self._http), mode=MODERN) as c:
                result = await c.call_tool(name, args)
        except Exception:
            http, self._http = self._http, None
            with suppress(Exception):
                await http.aclose()
            raise
        return "".join(getattr(c, "text", "") for c in result.content), bool(result.is_error)

    def _note(self, message: str) -> None:
        if not self._warned:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()
            self._warned = True


def reachable(sock) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(str(sock))
        return True
    except OSError:
        return False
    finally:
        s.close()


def start_server_and_wait(sock) -> None:
    """Start `funes serve` detached (its lock keeps it single) and wait until its socket answers."""
    paths.logs_dir().mkdir(parents=True, exist_ok=True)
    with open(paths.logs_dir() / "serve.log", "ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", "funes.cli", "--home", str(paths.home().absolute()), "serve"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + SPAWN_WAIT_S
    while time.monotonic() < deadline:
        if reachable(sock):
            return
        time.sleep(0.05)
    raise TimeoutError("funes serve did not come up")


def run_stdio(memory: str | None = None, backend: str = "auto") -> None:
    from funes.agents.base import parse_memory

    # one memory, or a list (`local,acme/mem`: a Hub-bound agent reads its local turns and the Hub's)
    parts = [parse_memory(p).spec or "local" for p in (memory or "").split(",") if p.strip()]
    default = ",".join(parts) if parts and parts != ["local"] else None
    # auto: start the shared server on demand; shared: use one only if it is already running
    chosen: LocalBackend | SharedBackend = (
        LocalBackend(default) if backend == "local" else SharedBackend(default, spawn=backend == "auto")
    )
    build_server(chosen).run()
