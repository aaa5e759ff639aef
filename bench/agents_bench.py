"""Agents using the memory: resident memory of N concurrent MCP sessions, hook wall time, warm recall latency.

1. RSS/PSS of 1, 4 and 8 concurrent `funes mcp` sessions, each after one recall: stdio-per-session
   (`--backend local`, every server loads its own models) vs the shared `funes serve` behind thin front ends.
2. Wall time of the installed Claude Stop hook as the agent sees it (exec form, pipes captured): p50/p99.
3. Warm recall latency: in-process `commands.recall`, MCP stdio with in-process models, MCP stdio forwarded
   to the shared server.

Runs on the bundled sample sessions (embedded for real) in a temporary HOME; a few minutes on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "pipeline" / "funes" / "samples"
QUERIES = [
    "why did we move off the streaming parser",
    "bulk inserts via COPY",
    "flaky coupon test",
    "duplicate detection",
]


def env(home: Path, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "FUNES_BIN")}
    e.update(HOME=str(home), FUNES_HOME=str(home / ".funes"), HF_HUB_OFFLINE="1", **extra)
    return e


def funes(home: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", *args], env=env(home), capture_output=True, text=True, timeout=600
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    return out.stdout


def mem_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in KiB; PSS splits shared pages (the model files' mmap) between the processes."""
    rss = pss = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


class Session:
    """One agent session's MCP server over raw JSON-RPC (protocol 2024-11-05, as pi's old bridge speaks)."""

    def __init__(self, home: Path, backend: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "funes.cli", "mcp", "--backend", backend],
            env=env(home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.n = 0
        self.send(
            "initialize",
            {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def send(self, method: str, params: dict) -> dict:
        self.n += 1
        self.proc.stdin.write(
            (json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode()
        )
        self.proc.stdin.flush()
        while True:
            doc = json.loads(self.proc.stdout.readline())
            if doc.get("id") == self.n:
                return doc

    def recall(self, query: str) -> str:
        res = self.send("tools/call", {"name": "recall", "arguments": {"query": query, "k": 3}})["result"]
        assert not res["isError"], res
        return res["content"][0]["text"]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def serve_pid(home: Path) -> int | None:
    try:
        return int((home / ".funes/run/serve.lock").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop_serve(home: Path) -> None:
    pid = serve_pid(home)
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
            time.sleep(1.0)
        except ProcessLookupError:
            pass


def resident(home: Path) -> list[tuple]:
    rows = []
    for n in (1, 4, 8):
        for backend in ("local", "shared"):
            stop_serve(home)
            sessions = [Session(home, backend) for _ in range(n)]
            for i, s in enumerate(sessions):
                s.recall(QUERIES[i % len(QUERIES)])
            pids = [s.proc.pid for s in sessions] + ([serve_pid(home)] if backend == "shared" else [])
            totals = [mem_kib(p) for p in pids if p]
            rss, pss = sum(t[0] for t in totals), sum(t[1] for t in totals)
            rows.append((n, backend, rss / 1024, pss / 1024, len(pids)))
            print(
                f"{n} sessions {backend:6}: RSS {rss / 1024:7.0f} MiB  PSS {pss / 1024:7.0f} MiB  ({len(pids)} processes)",
                flush=True,
            )
            for s in sessions:
                s.close()
    stop_serve(home)
    return rows


def hook_walls(home: Path, runs: int = 40) -> list[float]:
    funes(home, "add", "claude", "--yes", "--no-index")
    hooks = json.loads((home / ".claude/skills/funes/hooks/hooks.json").read_text())["hooks"]
    h = hooks["Stop"][0]["hooks"][0]
    transcript = next((SAMPLES / "claude").rglob("*.jsonl"))
    payload = json.dumps({"session_id": "s", "transcript_path": str(transcript), "hook_event_name": "Stop"})
    walls = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run(
            [h["command"], *h["args"]], input=payload, capture_output=True, text=True, timeout=10, env=env(home)
        )
        walls.append(time.monotonic() - t0)
        time.sleep(0.05)
    return walls


def warm_recall(home: Path, rounds: int = 5) -> dict[str, list[float]]:
    os.environ.update(env(home))
    from funes.commands.recall import recall

    out: dict[str, list[float]] = {"in-process": [], "mcp local": [], "mcp shared": []}
    for q in QUERIES:
        recall(q, k=3)  # warm
    for _ in range(rounds):
        for q in QUERIES:
            t0 = time.monotonic()
            recall(q, k=3)
            out["in-process"].append(time.monotonic() - t0)
    for name, backend in (("mcp local", "local"), ("mcp shared", "shared")):
        s = Session(home, backend)
        for q in QUERIES:
            s.recall(q)
        for _ in range(rounds):
            for q in QUERIES:
                t0 = time.monotonic()
                s.recall(q)
                out[name].append(time.monotonic() - t0)
        s.close()
    stop_serve(home)
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="funes-agents-bench-"))
    for h in ("claude", "codex"):
        funes(home, "index", str(SAMPLES / h), "--harness", h)
    print(funes(home, "status").splitlines()[1], flush=True)
    resident(home)
    walls = hook_walls(home)
    print(
        f"hook wall (claude Stop, exec form, {len(walls)} runs): p50 {pct(walls, 50) * 1000:.0f} ms  p99 {pct(walls, 99) * 1000:.0f} ms  max {max(walls) * 1000:.0f} ms",
        flush=True,
    )
    for name, xs in warm_recall(home).items():
        print(
            f"warm recall {name:10}: p50 {statistics.median(xs) * 1000:.0f} ms  p95 {pct(xs, 95) * 1000:.0f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
