"""`funes status` as text (AGENTS.md's status lines) and as JSON; the age and stamp wording."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from funes.results import Status


def status_text(st: Status) -> str:
    lines = [f"memory: {st.label}"]
    if st.state != "ready":
        return "\n".join(lines + [st.message] + _last_hook(st)) + "\n"
    lines += [f"chunks: {st.chunks}", f"sessions: {st.sessions}"]
    if st.by_harness:
        lines.append("agents: " + ", ".join(f"{k} {v}" for k, v in st.by_harness.items()))
    if st.by_type:
        lines.append("block types: " + ", ".join(f"{k} {v}" for k, v in st.by_type.items()))
    if st.pending_vectors:
        lines.append(
            f"waiting for vectors: {st.pending_vectors} chunk{'s' if st.pending_vectors != 1 else ''} "
            "(found by keyword until `funes index` embeds them)"
        )
    else:
        lines.append("waiting for vectors: 0")
    if st.remote:
        lines += _remote_lines(st)
    else:
        if st.last_indexed is not None:
            lines.append(f"last indexed: {stamp(st.last_indexed)} ({age(st.last_indexed, st.now)})")
        if st.index_problem:
            lines.append(
                f"search index: needs repair: {st.index_problem} — the next `funes index` (or recall) repairs it"
            )
        else:
            lines.append("search index: " + _freshness(st.index))
        lines.append("publish gate: " + _gate(st))
        lines += [f"waiting for review: {n} session{'s' if n != 1 else ''} for {r}" for r, n in st.review.items()]
    said = "; ".join(x for x in (st.embedder_note, _vector_input(st)) if x)
    lines.append(f"embedder: {st.embedder}" + (f" ({said})" if said else ""))
    if st.reranker:
        lines.append(f"reranker: {st.reranker}" + (f" ({st.reranker_note})" if st.reranker_note else ""))
    else:
        lines.append(f"reranker: none — {st.reranker_note.removeprefix('none: ')}")
    if st.scanners:
        lines.append("secret scanners: " + ", ".join(f"{k} {v}" for k, v in st.scanners.items()))
    return "\n".join(lines + _last_hook(st)) + "\n"


_INPUTS = {"context-line-1": "context line + text", "text": "the bare text", "mixed": "context line + text, in part"}


def _vector_input(st: Status) -> str:
    said = f"vectors of {_INPUTS.get(st.vector_input, st.vector_input)}" if st.vector_input else ""
    if st.stale_vectors and st.remote:  # published shards are immutable: what they hold stays
        said += f"; {st.stale_vectors} of the bare text, published before"
    elif st.stale_vectors:
        said += f"; {st.stale_vectors} still of the bare text — the next `funes index` re-embeds them"
    return said


def _last_hook(st: Status) -> list[str]:
    run = st.last_hook
    if not run:
        return []
    what = run.get("result", "?")
    if what == "ok":
        what = f"ok, {run.get('turns', 0)} turns read, +{run.get('chunks_added', 0)} chunks"
    when = f"{stamp(run['ts'])} ({age(run['ts'], st.now)})" if isinstance(run.get("ts"), int | float) else "?"
    return [f"last hook run: {when} — {run.get('events', 0)} events from {run.get('sessions', 0)} sessions: {what}"]


def _remote_lines(st: Status) -> list[str]:
    """A remote's publish time, the commit served (and whether offline), and what the cache holds."""
    r = st.remote
    lines = [f"last publish: {stamp(st.last_indexed)} ({age(st.last_indexed, st.now)})"] if st.last_indexed else []
    lines.append(f"commit: {r['commit']}" + (" — offline, served from the cache" if r["offline"] else ""))
    shards = f"{r['shards']} shard{'' if r['shards'] == 1 else 's'}"
    lines.append(
        f"cache: {size(r['cache_bytes'])} ({shards} {size(r['published_bytes'])} in the HF cache, "
        f"indexes {size(r['index_bytes'])})"
    )
    return lines


def size(n: float) -> str:
    if n < 1024:
        return f"{int(n)} B"
    for unit in ("KB", "MB", "GB"):
        n /= 1024
        if n < 1024 or unit == "GB":
            break
    return f"{n:.1f} {unit}"


def _freshness(ix: dict[str, Any]) -> str:
    if not ix or not ix.get("built", True):
        return "not built yet — the next `funes index` (or recall) builds it"
    text, vec = (ix["indexed"], ix["chunks"]), (ix["vectors_indexed"], ix["vectors"])
    if text[0] >= text[1] and vec[0] >= vec[1]:
        return f"up to date ({text[1]} chunks, {vec[1]} vectors)"
    return (
        f"{text[0]} of {text[1]} chunks, {vec[0]} of {vec[1]} vectors indexed — "
        "the rest become searchable at the next `funes index` (or recall)"
    )


def _gate(st: Status) -> str:
    if st.gate:
        return f"blocked — {st.gate}"
    if not st.held_back:
        return "nothing would be held back"
    kinds = ", ".join(f"{k}×{n}" for k, n in st.held_kinds.items())
    return f"{st.held_back} chunk(s) would be held back ({kinds}) — `funes scrub` redacts them"


def status_json(st: Status) -> str:
    return json.dumps(asdict(st), ensure_ascii=False, indent=1) + "\n"


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def age(epoch: float, now: float | None = None) -> str:
    """Upstream-spec 5.5: just now / N minute(s) / N hour(s) (< 48 h) / N day(s) ago."""
    minutes = int(max((now if now is not None else time.time()) - epoch, 0) // 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        n, unit = minutes, "minute"
    elif minutes < 2880:
        n, unit = minutes // 60, "hour"
    else:
        n, unit = minutes // 1440, "day"
    return f"{n} {unit}{'' if n == 1 else 's'} ago"
