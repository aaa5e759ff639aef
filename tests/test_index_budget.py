"""A budgeted index run stops within its budget; what it stored is committed and searchable; the next run resumes."""

from __future__ import annotations

import subprocess
import sys
import time

import lance

from conftest import subprocess_env
from funes.commands import index
from transcripts import prose, write_claude_session

BUDGET_S = 2.0
# the clock learns its rates while it runs; this much overrun is what a loaded box may add
TOLERANCE_S = 2.5
# the pool (opt-in) also pays, inside its first group, the cold imports and the scanner start that
# the clock cannot foresee before any group has been measured: 3.3-6 s over a 2 s budget here
POOL_TOLERANCE_S = 8.0


def _budgeted_first_run(
    funes_home, monkeypatch, workers: int, tolerance: float = TOLERANCE_S, budget: float = BUDGET_S, sessions=1200
):
    """1,200 sessions (far more than two seconds of indexing, even on an idle box), one budgeted
    run with `workers` processes: it stops, stores something, and ends within the tolerance."""
    root = funes_home.parent / ".claude" / "projects"
    for s in range(sessions):
        write_claude_session(root, f"budget-{s:05d}", [prose(s * 7 + t, 90) for t in range(8)])
    monkeypatch.setenv("FUNES_INDEX_BUDGET", str(budget))
    monkeypatch.setenv("FUNES_INDEX_WORKERS", str(workers))
    t0 = time.monotonic()
    first = index.index(index.Options(auto=True, no_embed=True))
    wall = time.monotonic() - t0
    assert first.budget_stopped and first.chunks_added > 0
    assert wall < budget + tolerance, f"budgeted run ({workers} processes) took {wall:.2f}s (budget {budget}s)"
    return first, wall


def test_a_round_scanned_by_the_worker_ends_before_its_budget(funes_home, monkeypatch):
    """The clock prices the tail (the worker's backlog, the refresh beside it, the last refresh)
    from its own measured rates: with the scan worker, a budgeted run ends before its budget, not
    within a tolerance after it."""
    monkeypatch.setenv("FUNES_SCAN_WORKER", "on")
    # 1 s past the budget at most: its own slack is 0.5 s, the rest what a loaded CI box adds
    first, wall = _budgeted_first_run(funes_home, monkeypatch, 1, tolerance=1.0, budget=4.0, sessions=2400)
    assert first.searchable_at is not None and first.searchable_at <= wall


def test_a_flush_the_worker_scanned_costs_this_process_only_its_finish(funes_home, monkeypatch):
    """Whether the reading loop or the next flush point sees the worker's answer first, the clock
    notes that flush as this process's finish (the worker's part is its own rate): noted as a
    whole in-process flush, the tail was priced at a guess and the in-process rate polluted."""
    from funes.commands import budget

    noted: list[str] = []
    real = budget.Clock.note

    def note(self, what, *a, **kw):
        noted.append(what)
        return real(self, what, *a, **kw)

    monkeypatch.setattr(budget.Clock, "note", note)
    root = funes_home.parent / ".claude" / "projects"
    for s in range(1200):
        write_claude_session(root, f"finish-{s:05d}", [prose(s * 7 + t, 90) for t in range(8)])
    monkeypatch.setenv("FUNES_INDEX_BUDGET", "600")  # budgeted, never reached: every unit is read
    monkeypatch.setenv("FUNES_SCAN_WORKER", "on")
    monkeypatch.setenv("FUNES_FLUSH_BLOCKS", "3000")
    report = index.index(index.Options(auto=True, no_embed=True))
    assert report.chunks_added > 0 and not report.budget_stopped
    flushes = [w for w in noted if w in ("flush", "finish")]
    # the flushes begun before the worker was up (~1 s in) scanned here; every later one in it
    assert flushes.count("finish") >= 2 and flushes == sorted(flushes, reverse=True), flushes


def test_small_budget_is_respected_and_the_next_run_resumes(funes_home, monkeypatch):
    first, wall = _budgeted_first_run(funes_home, monkeypatch, 1)
    assert first.searchable_at is not None and first.searchable_at <= wall

    # everything stored is committed and in the lexical index
    from funes.memory import Memory
    from funes.retrieval.retriever import RecallRequest, Retriever

    ds = lance.dataset(str(funes_home / "memory" / "chunks.lance"))
    assert ds.count_rows() == first.chunks_added
    probe = ds.to_table(columns=["text", "session_id"], limit=1).to_pylist()[0]
    res = Retriever(Memory.resolve(None), embedder=None, reranker=None).run(
        RecallRequest(probe["text"], k=3, neighbors=0, half_life=0, legs=("bm25",))
    )
    assert probe["session_id"] in {h.session_id for h in res.hits}

    second = index.index(index.Options(auto=True, no_embed=True))
    assert second.chunks_added > 0
    ids = lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(columns=["id"])["id"].to_pylist()
    assert len(ids) == len(set(ids)) == first.chunks_added + second.chunks_added


def test_pooled_budget_stop_kills_the_groups_in_flight(funes_home, monkeypatch):
    """This process + one worker: the stop ends within the budget instead of waiting for the
    worker's groups, leaves no worker behind, and what was stored is committed and searchable."""
    import multiprocessing

    first, _ = _budgeted_first_run(funes_home, monkeypatch, 2, POOL_TOLERANCE_S)
    assert multiprocessing.active_children() == []
    ds = lance.dataset(str(funes_home / "memory" / "chunks.lance"))
    assert ds.count_rows() == first.chunks_added
    # the next run as the user runs it: it resumes, and killing its worker prints nothing but funes's report
    env = subprocess_env(funes_home, FUNES_INDEX_BUDGET=str(BUDGET_S), FUNES_INDEX_WORKERS="2")
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", "index", "--auto", "--no-embed"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "Warning" not in out.stderr and "Traceback" not in out.stderr, out.stderr
    ids = lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(columns=["id"])["id"].to_pylist()
    assert len(ids) == len(set(ids)) > first.chunks_added


def test_an_overlapped_flush_counts_only_the_wait_it_paid_as_fixed():
    """A flush whose scan ran beside the next reads waited little for it: subtracting the whole
    scanner start-up from its time would make the rows look cheaper than they are, and the
    budget stop late."""
    from funes.commands.budget import FLUSH_FIXED_S, Clock

    waited, overlapped = Clock(0.0, 30.0, True), Clock(0.0, 30.0, True)
    waited.note("flush", 3.0, 10_000)  # the scanner's start-up waited for inside
    overlapped.note("flush", 3.0, 10_000, fixed=0.1)
    assert waited.per_row("flush") == (3.0 - FLUSH_FIXED_S) / 10_000
    assert overlapped.per_row("flush") == 2.9 / 10_000
    late = Clock(0.0, 30.0, True)
    late.note("flush", 3.0, 10_000, fixed=5.0)  # a long wait is still at most the fixed part
    assert late.per_row("flush") == waited.per_row("flush")
