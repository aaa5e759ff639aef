"""A stand-in model endpoint on 127.0.0.1 for the real agent CLIs: a scripted reply, every request recorded.

It speaks just enough of two wire formats:
- the Anthropic Messages API as Claude Code uses it (`POST /v1/messages`, streamed as SSE
  `message_start` … `message_stop`, or one JSON message when not streamed);
- the OpenAI Responses API as Codex uses it (`POST /v1/responses`, SSE `response.created`,
  `response.output_text.delta`, `response.completed`, …).
Anything else (token counting, model lists, metadata probes) gets a small JSON answer and is recorded
too, so a test can see every call a CLI made.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: dict | None

    def user_texts(self) -> list[str]:
        """The user's text blocks: Messages `messages[].content`, Responses `input[].content` (input_text)."""
        body = self.body or {}
        out: list[str] = []
        for msg in body.get("messages", []) + [m for m in body.get("input", []) if isinstance(m, dict)]:
            if msg.get("role") != "user":
                continue
            content = msg.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            out += [b["text"] for b in blocks if b.get("type") in ("text", "input_text")]
        return out


@dataclass
class ModelServer:
    reply: str
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep pytest output clean
                pass

            def _record(self) -> Request:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                server.requests.append(req)
                return req

            def _json(self, doc: dict, status: int = 200) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, events: list[tuple[str, dict]]) -> None:
                data = "".join(f"event: {name}\ndata: {json.dumps(doc)}\n\n" for name, doc in events).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._record()
                path = self.path.split("?")[0]
                if self.headers.get("Upgrade", "").lower() == "websocket":
                    # Codex tries a Responses WebSocket first; 426 makes it use HTTPS + SSE at once
                    self._json({"error": {"message": "websockets are not served here"}}, status=426)
                elif path.endswith("/models"):
                    self._json({"data": [], "object": "list"})
                else:
                    self._json({})

            def do_HEAD(self):
                self._record()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                req = self._record()
                path = self.path.split("?")[0]
                body = req.body or {}
                if path.endswith("/messages/count_tokens"):
                    self._json({"input_tokens": 100})
                elif path.endswith("/messages"):
                    self._anthropic(body)
                elif path.endswith("/responses"):
                    self._responses(body)
                else:
                    self._json({})

            def _anthropic(self, body: dict) -> None:
                msg = {
                    "id": "msg_stand_in",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "stand-in"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 100, "output_tokens": 1},
                }
                if not body.get("stream"):
                    done = msg | {"content": [{"type": "text", "text": server.reply}], "stop_reason": "end_turn"}
                    return self._json(done)
                self._sse(
                    [
                        ("message_start", {"type": "message_start", "message": msg}),
                        (
                            "content_block_start",
                            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                        ),
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": 0,
                                "delta": {"type": "text_delta", "text": server.reply},
                            },
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                        (
                            "message_delta",
                            {
                                "type": "message_delta",
                                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": 12},
                            },
                        ),
                        ("message_stop", {"type": "message_stop"}),
                    ]
                )

            def _responses(self, body: dict) -> None:
                item = {
                    "type": "message",
                    "id": "msg_stand_in",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": server.reply, "annotations": []}],
                }
                resp = {"id": "resp_stand_in", "object": "response", "model": body.get("model", "stand-in")}
                usage = {
                    "input_tokens": 100,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 12,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 112,
                }
                self._sse(
                    [
                        (
                            "response.created",
                            {"type": "response.created", "response": resp | {"status": "in_progress"}},
                        ),
                        (
                            "response.output_item.added",
                            {"type": "response.output_item.added", "output_index": 0, "item": item | {"content": []}},
                        ),
                        (
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": "msg_stand_in",
                                "output_index": 0,
                                "content_index": 0,
                                "delta": server.reply,
                            },
                        ),
                        (
                            "response.output_item.done",
                            {"type": "response.output_item.done", "output_index": 0, "item": item},
                        ),
                        (
                            "response.completed",
                            {
                                "type": "response.completed",
                                "response": resp | {"status": "completed", "output": [item], "usage": usage},
                            },
                        ),
                    ]
                )

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def model_calls(self, suffix: str) -> list[Request]:
        return [r for r in self.requests if r.method == "POST" and r.path.split("?")[0].endswith(suffix)]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
