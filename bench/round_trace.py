"""A budgeted round's timeline (`dayzero_bench.py --trace`): the parent's flush points, waits, commits
and refreshes, the scan worker's batches (sent, answered, its busy span), and at the stop decision
the clock's forecast beside what the rest of the round then really cost.

Everything is wrapped in-process around the code on PYTHONPATH (old or new), so both can be traced
the same way; times are seconds since the round began (time.monotonic)."""

from __future__ import annotations

import time

EVENTS: list[dict] = []
_T0 = [0.0]


def _now() -> float:
    return time.monotonic() - _T0[0]


def begin_round() -> None:
    EVENTS.clear()
    _T0[0] = time.monotonic()


def _span(owner, name: str, kind: str, info=lambda self, a, r: {}) -> None:
    fn = getattr(owner, name)

    def wrapper(*a, **kw):
        t0 = _now()
        r = fn(*a, **kw)
        EVENTS.append(
            {"kind": kind, "t": round(t0, 3), "dur": round(_now() - t0, 3), **info(a[0] if a else None, a, r)}
        )
        return r

    setattr(owner, name, wrapper)


def instrument() -> None:
    from funes.commands import budget, index, prepare
    from funes.scan import remote

    _span(prepare.Flush, "__init__", "flush_begin", lambda f, a, r: {"rows": f.rows, "remote": f.scanner is not None})
    _span(prepare.Flush, "finish", "flush_finish", lambda f, a, r: {"rows": f.rows, "waited": round(f.waited, 3)})
    _span(index, "_refresh", "refresh")
    _span(index._Run, "_commit", "commit", lambda run, a, r: {"rows": 0 if a[1] is None else a[1].num_rows})

    start = remote.Scanner.start

    def sent(self, texts, **kw):
        p = start(self, texts, **kw)
        p.trace_sent = _now()
        p.trace_bytes = sum(len(t) for t in texts)
        return p

    remote.Scanner.start = sent
    arrive = remote.Pending.arrive

    def arrived(self, reply):
        EVENTS.append(
            {
                "kind": "batch",
                "t": round(getattr(self, "trace_sent", 0.0), 3),
                "arrived": round(_now(), 3),
                "texts": len(self.texts),
                "mb": round(getattr(self, "trace_bytes", 0) / 1e6, 2),
                # what of its time the worker's Kingfisher waited for the rule compile (scan/rulecache.py)
                **({"compiled": round(reply[-1], 3)} if len(reply) == 4 and reply[1] == "ok" else {}),
            }
        )
        arrive(self, reply)

    remote.Pending.arrive = arrived
    must_stop = budget.Clock.must_stop

    def decided(self, pending_rows, unindexed_rows, now=None):
        stop = must_stop(self, pending_rows, unindexed_rows, now)
        if stop:
            parts = (
                self.forecast(pending_rows, unindexed_rows)
                if hasattr(self, "forecast")
                else _old(self, budget, pending_rows, unindexed_rows)
            )
            EVENTS.append(
                {
                    "kind": "stop",
                    "t": round(_now(), 3),
                    "pending_rows": pending_rows,
                    "unindexed_rows": unindexed_rows,
                    "deadline": round(self.deadline - _T0[0], 3),
                    "forecast": {k: round(v, 3) for k, v in parts.items()},
                }
            )
        return stop

    budget.Clock.must_stop = decided
    try:
        from funes.commands import refreshes
    except ImportError:  # older code: every refresh is `index._refresh`, traced above
        return
    # the refresher child (memory/refresher.py): when each refresh was asked, what it answered
    # (its own seconds and rows), and how long this process waited for it in `finish`
    _span(refreshes.Refreshes, "finish", "refresh_wait")
    begun = budget.Clock.index_begun

    def asked(self, now, chunks):
        EVENTS.append({"kind": "refresh_begin", "t": round(_now(), 3), "chunks": chunks})
        begun(self, now, chunks)

    budget.Clock.index_begun = asked
    noted = refreshes.Refreshes._noted

    def answered(self, answer):
        EVENTS.append(
            {
                "kind": "refresh_answer",
                "t": round(_now(), 3),
                "seconds": round(answer[0], 3),
                "cpu": round(answer[2], 3),
                "added": answer[1],
            }
        )
        noted(self, answer)

    refreshes.Refreshes._noted = answered


def _old(clock, budget, pending_rows: int, unindexed_rows: int) -> dict:
    """f557ece's must_stop cost, in its parts."""
    more = clock.unit_rows
    return {
        "read": more * clock.per_row("read"),
        "flush": budget.FLUSH_FIXED_S + (pending_rows + more) * clock.per_row("flush"),
        "index": budget.INDEX_FIXED_S + (unindexed_rows + pending_rows + more) * clock.per_row("index"),
    }


def summary(wall: float) -> dict:
    """Where the round's seconds went after the stop, and each core's idle time."""
    ev = sorted(EVENTS, key=lambda e: e["t"])
    stops = [e for e in ev if e["kind"] == "stop"]
    out: dict = {"end": round(wall, 3)}
    if stops:
        s = stops[-1]  # the one that stopped the round (one before it can be taken back: index._learned_the_scan)
        after = [e for e in ev if e["t"] >= s["t"] and e["kind"] != "stop"]
        real: dict = {}
        for e in after:
            k = e["kind"]
            if k == "flush_finish":
                real["wait"] = real.get("wait", 0) + e["waited"]
                real["finish"] = real.get("finish", 0) + e["dur"] - e["waited"]
            elif k in ("flush_begin", "refresh", "commit", "refresh_wait"):
                real[k] = real.get(k, 0) + e["dur"]
        if "commit" in real and "finish" in real:
            real["finish"] -= 0  # the commit runs after finish, outside it
        real["rest"] = wall - s["t"] - sum(real.values())
        out["stop_at"] = s["t"]
        out["forecast"] = s["forecast"]
        out["forecast_total"] = round(sum(s["forecast"].values()), 3)
        out["after_stop"] = {k: round(v, 3) for k, v in real.items()}
        out["after_stop_total"] = round(wall - s["t"], 3)
    parent_wait = sum(e["waited"] for e in ev if e["kind"] == "flush_finish")
    out["parent_waited_s"] = round(parent_wait, 3)
    batches = [e for e in ev if e["kind"] == "batch"]
    busy, prev = 0.0, 0.0
    for b in batches:
        busy += b["arrived"] - max(b["t"], prev)
        prev = b["arrived"]
    if batches:
        out["worker_busy_s"] = round(busy, 3)
        out["worker_idle_s"] = round(wall - busy, 3)
        out["worker_compile_wait_s"] = round(sum(b.get("compiled", 0.0) for b in batches), 3)
    out["refresh_s"] = round(sum(e["dur"] for e in ev if e["kind"] == "refresh"), 3)
    return out


def timeline() -> list[dict]:
    return sorted(EVENTS, key=lambda e: e["t"])
