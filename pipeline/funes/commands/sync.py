"""`funes sync`: the one detached worker per FUNES_HOME that drains hook events into the memory.

Single-flight by `run/sync.lock`; a short debounce lets bursts (eight sessions ending a turn at once)
collapse into one index run over the distinct transcripts they name; the queue is checked again after
the lock is released, so an event queued during the last drain is never stranded. A session-end event
of an agent bound to a Hub memory is followed by `funes publish <repo> --yes` after that index.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from contextlib import suppress
from pathlib import Path

from funes import paths, vocab
from funes.commands.hook import log, sync_lock_path
from funes.errors import LockBusy
from funes.memory.atomic import read_json, write_json
from funes.memory.lock import try_writer_lock

DEBOUNCE_S = float(os.environ.get("FUNES_SYNC_DEBOUNCE", "1.5"))
LOCK_WAIT_S = float(os.environ.get("FUNES_SYNC_LOCK_WAIT", "120"))
LOG_MAX = 1 << 20
END_EVENTS = {"SessionEnd", "SessionStart", "on_session_finalize", "on_session_start", "session_shutdown"}
HARNESS = {"claude": "claude", "codex": "codex", "hermes": "hermes", "pi": "pi"}


def last_run() -> dict | None:
    """What the last worker run did (for `funes status`), or None before any hook ran."""
    doc = read_json(paths.run_dir() / "last-sync.json")
    return doc if isinstance(doc, dict) else None


def run() -> int:
    _rotate_log()
    with suppress(OSError):
        os.nice(10)  # the agent and the user's editor come first
    while True:
        with try_writer_lock(sync_lock_path()) as mine:
            if not mine:
                return 0
            time.sleep(DEBOUNCE_S)
            while batch := _take():
                if not _process(*batch):
                    return 0  # deferred: the files stay queued for the next hook's worker
        if not _queued():
            return 0


def _queued() -> bool:
    q = paths.queue_file()
    return (q.exists() and q.stat().st_size > 0) or any(q.parent.glob("events.*.jsonl"))


def _take() -> tuple[list[Path], list[dict]] | None:
    """Claim the queue (rename), plus any batch a killed worker left behind; None when there is nothing."""
    q = paths.queue_file()
    if q.exists() and q.stat().st_size > 0:
        q.rename(q.with_name(f"events.{os.getpid()}.{time.monotonic_ns()}.jsonl"))
    files = sorted(q.parent.glob("events.*.jsonl")) if q.parent.is_dir() else []
    if not files:
        return None
    events = []
    for f in files:
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict) and ev.get("agent") in HARNESS:
                events.append(ev)
    return files, events


def _process(files: list[Path], events: list[dict]) -> bool:
    started = time.monotonic()
    record: dict = {"ts": time.time(), "events": len(events), "sessions": len({e.get("session_id") for e in events})}
    try:
        report = _index_with_retry(events)
    except LockBusy:
        # the user's own `funes index` kept the memory busy: the claimed files stay for the next worker
        record["result"] = "deferred: the memory stayed busy; events kept for the next run"
        _finish(record, started)
        return False
    except Exception as e:  # a bad transcript must not wedge the queue; the next sweep re-reads it
        record["result"] = f"failed: {e}"
    else:
        record.update(result="ok", units=report.units_total, chunks_added=report.chunks_added, turns=_turns(report))
    for f in files:
        f.unlink(missing_ok=True)
    record["published"] = _publish(events)
    _finish(record, started)
    return True


def _finish(record: dict, started: float) -> None:
    record["seconds"] = round(time.monotonic() - started, 2)
    extra = f" +{record.get('chunks_added', 0)} chunks" if record.get("result") == "ok" else ""
    log(
        f"sync: {record['events']} events from {record['sessions']} sessions -> {record['result']}{extra} ({record['seconds']}s)"
    )
    write_json(paths.run_dir() / "last-sync.json", record)


def _turns(report) -> int:
    return sum(t.turns for t in report.tallies.values())


def _index_with_retry(events: list[dict]):
    from funes.commands import index

    sources = _sources(events)
    opts = index.Options(no_embed=os.environ.get("FUNES_SYNC_EMBED", "1") == "0")
    deadline, wait = time.monotonic() + LOCK_WAIT_S, 0.5
    while True:
        try:
            # budgeted: a day-zero backlog of unembedded chunks is worked off a minute per run, so the
            # worker never holds the memory's lock for an hour (the new turns' text is stored first)
            return index.index_sources(sources, opts, budgeted=True)
        except LockBusy:
            if time.monotonic() + wait > deadline:
                raise
            time.sleep(wait)
            wait = min(wait * 2, 10.0)


def _sources(events: list[dict]) -> list:
    """Distinct transcripts the events name; a sweep of an agent's folders for events without one (Hermes)."""
    from funes.traces import source

    files: dict[str, str] = {}
    sweeps: set[str] = set()
    for ev in events:
        path = ev.get("transcript") or ""
        if path and Path(path).is_file():
            files.setdefault(str(Path(path).absolute()), HARNESS[ev["agent"]])
        else:
            sweeps.add(HARNESS[ev["agent"]])
    sources = [s for p, h in files.items() for s in source.resolve(Path(p), h)]
    for h in sorted(sweeps):
        sources += _sweep(h)
    return sources


def _sweep(harness: str) -> list:
    from funes.traces import source

    if harness == "hermes":
        home = paths.agent_dir("HERMES_HOME", ".hermes")
        if (home / "state.db").is_file() or (home / "sessions").is_dir():
            return source.resolve(home, "hermes")
        return []
    facet = vocab.parse_harness(harness)
    return [s for f, root in source.known_roots() if f == facet for s in source.resolve(root, harness)]


def _publish(events: list[dict]) -> list[str]:
    """After the index: publish each Hub memory whose agent ended (or started) a session in this batch."""
    from funes.agents import manifest

    done = []
    for agent in sorted({e["agent"] for e in events if e.get("event") in END_EVENTS}):
        doc = manifest.load(agent) or {}
        if doc.get("kind") != "hub" or not doc.get("memory") or doc["memory"] in done:
            continue
        argv = list(doc.get("funes") or ["funes"]) + ["publish", doc["memory"], "--yes"]
        with open(paths.logs_dir() / "sync.log", "ab") as out:
            rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT).returncode
        # exit 2: publish held rows back because of secrets (upstream 7.2 logs it as a warning)
        log(f"publish {doc['memory']}: " + {0: "ok", 2: "WARN secrets held back"}.get(rc, f"FAILED (exit {rc})"))
        done.append(doc["memory"])
    return done


def _rotate_log() -> None:
    path = paths.logs_dir() / "sync.log"
    try:
        if path.stat().st_size > LOG_MAX:
            os.replace(path, path.with_suffix(".log.1"))
    except OSError:
        pass
