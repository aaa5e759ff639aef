"""budget.Clock's stop decisions on synthetic rates: the worker's backlog, the overlapped refresh, the margin."""

from __future__ import annotations

import pytest

from funes.commands import budget
from funes.commands.budget import Clock


def _warm(clock: Clock, read=0.0001, finish=0.00005, index=0.00005, probe_only=False) -> Clock:
    """A clock with measured rates: 0.1 ms per block read, 0.05 ms per block finished, 0.05 ms per
    chunk indexed (`probe_only`: by the probe's refresh alone, weighted to that rate)."""
    clock.note("read", 1.0, 10)  # cold: the parsers' imports, not a rate
    clock.note("read", read * 10_000, 10_000)
    clock.note("finish", 9.0, 10)  # cold: the datasets import
    clock.note("finish", finish * 10_000, 10_000)
    if probe_only:
        clock.note("index", budget.INDEX_FIXED_S + index * 10_000 / budget.INDEX_PROBE_WEIGHT, 10_000)
    else:
        clock.note("index", budget.INDEX_FIXED_S + 3 * index * 10_000, 10_000)  # the probe's: replaced by the next
        clock.note("index", budget.INDEX_FIXED_S + index * 10_000, 10_000)
    clock.stored(10_000, 15_000)
    clock.read_units(100, 1000)  # 10 blocks per unit
    return clock


def test_the_worker_rate_is_measured_from_sent_to_answered_with_its_queue():
    clock = Clock(0.0, 30.0, True)
    clock.sent(1.0, 10_000)  # the worker was idle: the batch pays a Kingfisher start
    clock.sent(2.0, 10_000)  # queued behind the first: busy from the first's answer
    clock.answered(1.0 + budget.SCAN_FIXED_S + 2.0)
    clock.answered(4.0 + 2.0)
    assert clock.per_row("scan") == pytest.approx(4.0 / 20_000)
    assert clock.in_flight == [] and clock.worker_free == 6.0


def test_a_first_answer_that_waited_for_the_rule_compile_is_not_the_worker_rate():
    """A new machine's first batch waits ~6 s for Kingfisher's rule compile (scan/rulecache.py):
    taken as a rate it forecast a 12.4 s wait for a 0.3 s one and stopped a 30 s round at 11 s."""
    cold, warm = _warm(Clock(0.0, 30.0, True)), _warm(Clock(0.0, 30.0, True))
    for clock, compiled in ((cold, 6.0), (warm, 0.0)):
        clock.sent(1.0, 20_000)
        clock.answered(1.0 + compiled + budget.SCAN_FIXED_S + 20_000 * 0.0001, compiled=compiled)
    assert cold.per_row("scan") == pytest.approx(warm.per_row("scan")) == pytest.approx(0.0001)
    for clock in (cold, warm):
        clock.sent(12.0, 20_000)
    assert cold.forecast(5000, 0, now=12.5)["wait"] == pytest.approx(warm.forecast(5000, 0, now=12.5)["wait"])
    assert cold.forecast(5000, 0, now=12.5)["wait"] < 4.0  # 2.5 s of scanning left, not 8
    # more than the batch's whole time (a clock skew): no negative rate
    odd = Clock(0.0, 30.0, True)
    odd.sent(1.0, 1000)
    odd.answered(2.0, compiled=5.0)
    assert odd.per_row("scan") == 0.0


def test_the_last_flush_waits_for_the_worker_backlog_not_a_fixed_guess():
    clock = _warm(Clock(0.0, 30.0, True))
    clock.sent(0.0, 10_000)
    clock.answered(budget.SCAN_FIXED_S + 10_000 * 0.0002)  # 0.2 ms per block in the worker
    clock.sent(10.0, 20_000)  # 4 s of scanning, due at 10 + fixed + 4
    parts = clock.forecast(5000, 0, now=11.0)
    last = 5000 + 10
    due = 10.0 + budget.SCAN_FIXED_S + 20_000 * 0.0002
    # the parent finishes the batch in flight when it arrives, then waits for the last one queued behind it
    want_end = due + last * 0.0002 + last * 0.00005
    got_end = 11.0 + sum(v for k, v in parts.items() if k not in ("index_last", "exit", "margin"))
    assert got_end == pytest.approx(want_end, abs=1e-6)
    assert parts["wait"] > 4.0
    # the same batch in flight, nearly through: the wait is what is left of it, not a second's guess
    parts = clock.forecast(5000, 0, now=due - 0.01)
    assert parts["wait"] < 0.05


def test_an_idle_worker_charges_its_start_and_a_busy_one_does_not():
    idle = _warm(Clock(0.0, 30.0, True))
    idle.sent(0.0, 10_000)
    idle.answered(budget.SCAN_FIXED_S + 2.0)
    busy = _warm(Clock(0.0, 30.0, True))
    busy.sent(0.0, 10_000)
    busy.answered(budget.SCAN_FIXED_S + 2.0)
    busy.sent(9.5, 1000)  # still scanning at 10.0: the last batch queues behind it
    a, b = idle.forecast(1000, 0, now=10.0), busy.forecast(1000, 0, now=10.0)
    assert a["wait"] >= budget.SCAN_FIXED_S
    # the busy worker has a batch more to scan, but the last one's Kingfisher start hides behind it
    assert b["wait"] < a["wait"]


def test_the_stored_rows_are_indexed_while_the_last_scans_run():
    """With the overlap, the refresh of what is stored hides the worker's wait; without it, they add up."""
    on, off = (_warm(Clock(0.0, 30.0, True, overlap=o)) for o in (True, False))
    for c in (on, off):
        c.sent(0.0, 10_000)
        c.answered(budget.SCAN_FIXED_S + 2.0)
        c.sent(19.0, 20_000)
    tail_on, tail_off = (sum(c.forecast(0, 60_000, now=20.0).values()) for c in (on, off))
    # 3.5 s of refresh hidden behind the 5 s of scanning left, for one more refresh's fixed part
    refresh = budget.INDEX_FIXED_S + 60_000 * 0.00005
    assert tail_off - tail_on == pytest.approx((refresh - budget.INDEX_FIXED_S) * (1 + budget.ERROR), abs=1e-6)
    assert on.forecast_parts == {} and on.forecast(0, 60_000, now=20.0)["index_early"] == pytest.approx(refresh)


def test_must_stop_keeps_the_margin_and_never_stops_an_unbudgeted_run():
    clock = _warm(Clock(0.0, 30.0, True))
    clock.sent(0.0, 1000)
    clock.answered(budget.SCAN_FIXED_S + 0.2)
    tail = sum(clock.forecast(20_000, 100_000, now=10.0).values())
    end_at = 30.0 - budget.MARGIN_S - tail  # the last moment this tail still fits
    assert not clock.must_stop(20_000, 100_000, now=end_at - 0.05)
    assert clock.must_stop(20_000, 100_000, now=end_at + 0.05)
    assert clock.forecast_parts["margin"] == pytest.approx(budget.ERROR * (tail - clock.forecast_parts["margin"]))
    assert not _warm(Clock(0.0, 30.0, False)).must_stop(10**9, 10**9, now=1e9)


def test_before_the_worker_answers_its_rate_is_guessed_and_this_process_pays_little():
    """A remote flush costs this process only its finish (FINISH_PER_READ of a read), not the
    in-process flush's 3x: the guess that stopped a 30 s round at 5 s."""
    clock = Clock(0.0, 30.0, True)
    clock.note("read", 1.0, 10)
    clock.note("read", 1.5, 10_000)
    clock.read_units(100, 1000)
    assert clock.per_row("scan") == budget.SCAN_PER_BLOCK_S
    assert clock.per_row("finish") == pytest.approx(budget.FINISH_PER_READ * 1.5 / 10_000)
    local = sum(clock.forecast(18_000, 0, now=5.0).values())
    clock.sent(2.4, 5500)
    remote = sum(clock.forecast(18_000, 0, now=5.0).values())
    assert remote < local
    assert not clock.must_stop(18_000, 0, now=5.0)


def test_the_tail_is_priced_at_the_latest_refresh_the_probe_s_weighted():
    clock = Clock(0.0, 30.0, True)
    clock.note("index", budget.INDEX_FIXED_S + 2.0, 20_000)
    assert clock.per_row("index") == pytest.approx(budget.INDEX_PROBE_WEIGHT * 2.0 / 20_000)
    clock.note("index", budget.INDEX_FIXED_S + 6.0, 40_000)  # a loaded box: dearer now
    assert clock.per_row("index") == pytest.approx(6.0 / 40_000)
    clock.note("index", budget.INDEX_FIXED_S + 2.0, 40_000)
    assert clock.per_row("index") == pytest.approx(2.0 / 40_000)


def test_a_small_refresh_after_a_large_one_does_not_price_the_next_at_nothing():
    clock = _warm(Clock(0.0, 30.0, True))
    clock.note("index", budget.INDEX_FIXED_S + 40_000 * 0.0001, 40_000)  # a 40k step: 0.1 ms per chunk
    large = clock.per_row("index")
    clock.note("index", 0.45, 600)  # what a pass left after its last step: mostly fixed cost
    assert clock.per_row("index") == pytest.approx(large * 40_000 / 40_600, rel=1e-6)
    tail = clock.forecast(0, 35_000, now=0.0)  # in-process scan: the whole refresh comes last
    assert tail["index_last"] >= 35_000 * large * 0.95
    clock.note("index", budget.INDEX_FIXED_S + 20_000 * 0.0002, 20_000)  # a large one replaces it
    assert clock.per_row("index") == pytest.approx(0.0002)


def test_with_the_refresher_the_index_is_off_this_process_timeline_but_not_off_the_tail():
    """Refreshes in another process: what is stored is indexed while this process finishes its
    flushes, so the tail is the longer of the two, then the last flushes' chunks; a refresh still
    running when the run stops delays only what comes after it."""
    here = _warm(Clock(0.0, 30.0, True))
    there = _warm(Clock(0.0, 30.0, True))
    for c in (here, there):
        c.sent(0.0, 10_000)
        c.answered(budget.SCAN_FIXED_S + 10_000 * 0.0001)
    there.index_begun(9.0, 40_000)  # 0.5 + 40k * 0.05 ms = 2.5 s: busy until 11.5
    a, b = here.forecast(5000, 20_000, now=10.0), there.forecast(5000, 20_000, now=10.0)
    assert there.background and not here.background
    # here: the stored 20k chunks are indexed by this process before it finishes the last flush
    assert a["index_early"] == pytest.approx(budget.INDEX_FIXED_S + 20_000 * 0.00005)
    # there: this process finishes the flush (its scan ~1.5 s) while the refresher ends its 40k
    # (till 11.5) and then indexes the 20k (till 13.0): the parent waits 13.0 - its own end for it
    end_parent = 10.0 + b["read"] + b["wait"] + b["finish"]
    assert b["index_early"] == pytest.approx(11.5 + budget.INDEX_FIXED_S + 20_000 * 0.00005 - end_parent, abs=1e-3)
    cpb = there.chunks_per_block
    assert b["index_last"] == pytest.approx(budget.INDEX_FIXED_S + (5000 + 10) * cpb * 0.00005)
    there.index_done()
    c = there.forecast(5000, 20_000, now=10.0)
    assert c["index_early"] < b["index_early"]  # the running refresh was what the parent waited for
    assert there.background  # a refresh answered: the next ones run there too


def test_the_refresher_tail_is_priced_at_the_probe_s_cpu_rate_then_at_the_latest_wall_rate():
    """The probe's refresh, the only one measured, is cold and contended: the tail takes its CPU
    rate, or 2/3 of its wall rate on a loaded box. Once a second refresh is measured, its wall
    rate: a tail refresh that merges or re-warms the piece cache cost 1.7x the CPU rate before."""
    clock = Clock(0.0, 30.0, True)
    clock.note("index", budget.INDEX_FIXED_S + 10_000 * 0.00008 / budget.INDEX_PROBE_WEIGHT, 10_000)
    assert clock.tail_index_rate(clock.per_row("index")) == pytest.approx(0.00008)  # no CPU rate: the wall
    clock.note("index_cpu", budget.INDEX_FIXED_S + 10_000 * 0.00004 / budget.INDEX_PROBE_WEIGHT, 10_000)
    assert clock.tail_index_rate(0.00005) == pytest.approx(0.00004)  # quiet: its CPU rate
    assert clock.tail_index_rate(0.00012) == pytest.approx(0.00008)  # loaded: 2/3 of the wall rate
    clock.note("index", budget.INDEX_FIXED_S + 40_000 * 0.00006, 40_000)
    clock.note("index_cpu", budget.INDEX_FIXED_S + 40_000 * 0.00004, 40_000)
    assert clock.tail_index_rate(clock.per_row("index")) == pytest.approx(0.00006)  # a second: its wall rate
    clock.stored(10_000, 15_000)
    clock.read_units(100, 1000)
    clock.sent(0.0, 10_000)
    clock.answered(budget.SCAN_FIXED_S + 1.0)
    clock.index_begun(9.0, 40_000)
    parts = clock.forecast(5000, 0, now=10.0)
    want = budget.INDEX_FIXED_S + (5000 + 10) * clock.chunks_per_block * 0.00006
    assert parts["index_last"] == pytest.approx(want)


def test_the_refresh_running_at_the_stop_is_priced_at_the_tail_rate_not_the_probe_s_wall():
    """A stop decided while the probe's refresh is the only one measured: the refresh running and
    the one of what is stored are priced at its CPU rate (2/3 of its wall here), not at its wall
    rate (cold, beside three processes: 2-3x what they took), which stopped 30 s rounds at 11.6-13.6 s."""
    clock = _warm(Clock(0.0, 30.0, True), index=0.0002, probe_only=True)
    clock.note("index_cpu", budget.INDEX_FIXED_S + 10_000 * 0.0001 / budget.INDEX_PROBE_WEIGHT, 10_000)
    clock.sent(0.0, 10_000)
    clock.answered(budget.SCAN_FIXED_S + 1.0)
    clock.index_begun(9.0, 32_000)
    rate = clock.tail_index_rate(clock.per_row("index"))
    assert rate == pytest.approx(0.0002 * budget.TAIL_SHARE)  # above the CPU rate: 2/3 of the wall
    parts = clock.forecast(0, 32_000, now=10.0)
    end_parent = 10.0 + parts["read"] + parts["wait"] + parts["finish"]
    busy_until = 9.0 + budget.INDEX_FIXED_S + 32_000 * rate + budget.INDEX_FIXED_S + 32_000 * rate
    assert parts["index_early"] == pytest.approx(busy_until - end_parent, abs=1e-3)
    # priced at the wall rate that forecast was 4.3 s longer, and this tail would not fit
    assert not clock.must_stop(0, 32_000, now=10.0)


def _reading(clock: Clock) -> Clock:
    """A clock before its first flush is measured: 60 us per block read, the rest guessed."""
    clock.note("read", 1.0, 10)  # cold
    clock.note("read", 0.06, 1000)
    clock.read_units(100, 1000)
    return clock


def test_a_flush_pending_here_is_finished_and_indexed_in_the_tail():
    """The probe's flush scans in this process while the run reads on; a stop decided then must
    count its finish and its chunks' refresh. Left out, a 10 s round (the rates here) stopped at
    2.9 s on a tail forecast of 6.6 s that took 8.0 s: the probe's 11.5k blocks were committed 3 s
    after the stop, and indexed with the last flush's."""
    alone, pending = _reading(Clock(0.0, 10.0, True)), _reading(Clock(0.0, 10.0, True))
    pending.begun_here("probe", 1.7, 11_500)
    a, b = alone.forecast(17_700, 0, now=2.9), pending.forecast(17_700, 0, now=2.9)
    assert sum(a.values()) == pytest.approx(6.58, abs=0.01)  # that round's forecast
    read_end = 2.9 + a["read"]
    # it finishes at its flush rate from when it began; its chunks are indexed with the last's
    pending_end = 1.7 + budget.FLUSH_FIXED_S + 11_500 * pending.per_row("flush")
    assert b["pending"] == pytest.approx(pending_end - read_end)
    assert b["index_last"] - a["index_last"] == pytest.approx(
        11_500 * pending.chunks_per_block * pending.per_row("index")
    )
    # the last flush's scan runs beside it from the stop on, and is finished after it
    last = 17_700 + 10
    last_end = max(
        read_end + budget.FLUSH_FIXED_S + last * pending.per_row("flush"),
        pending_end + last * pending.per_row("finish"),
    )
    assert b["finish"] == pytest.approx(last_end - pending_end)
    # with the margin its guesses get, the forecast covers the tail that followed
    assert b["margin"] > 0 and sum(b.values()) > 8.0
    assert not alone.must_stop(17_700, 0, now=2.9) and pending.must_stop(17_700, 0, now=2.9)
    # nearly through, it still costs a finish of its rows; once finished, nothing
    late = pending.forecast(0, 0, now=5.0)["pending"]
    assert late == pytest.approx(11_500 * pending.per_row("finish"))
    pending.finished_here("probe")
    assert pending.forecast(17_700, 0, now=2.9) == alone.forecast(17_700, 0, now=2.9)


def test_a_flush_pending_here_comes_before_the_worker_s_batches_and_the_refresher_s_exit_counts():
    clock = _warm(Clock(0.0, 30.0, True))
    clock.sent(5.0, 10_000)  # due at 5 + 1 + 1.5 = 7.5
    base = clock.forecast(1000, 0, now=6.0)
    clock.begun_here("first", 4.0, 20_000)
    clock.refresher = True
    parts = clock.forecast(1000, 0, now=6.0)
    local_end = 4.0 + budget.FLUSH_FIXED_S + 20_000 * clock.per_row("flush")
    assert local_end > 7.5  # it, not the worker's batch, holds the parent up
    end = 6.0 + parts["read"] + parts["index_early"] + parts["wait"] + parts["finish"]
    assert end == pytest.approx(local_end + (10_000 + 1010) * clock.per_row("finish"), abs=1e-6)
    assert parts["exit"] == budget.EXIT_S + budget.REFRESHER_EXIT_S and base["exit"] == budget.EXIT_S
    assert parts["index_last"] - base["index_last"] == pytest.approx(
        20_000 * clock.chunks_per_block * clock.per_row("index")
    )


def test_a_new_machine_s_rule_compile_holds_every_scan_until_one_ends():
    """Where Kingfisher never ran, the probe's scan here and the worker's first batch both waited for
    its one rule compile (~6 s): unforeseen, a 10 s round read on until 7.8 s and ended at 10.17 s."""
    warm, cold = _reading(Clock(0.0, 15.0, True)), _reading(Clock(0.0, 15.0, True))
    cold.compiling(0.3)
    compiled = 0.3 + budget.COMPILE_S
    for clock in (warm, cold):
        clock.begun_here("probe", 0.93, 20_000)
    # the probe's scan ends no sooner than the compile, and then costs its flush
    parts = cold.forecast(500, 0, now=1.1)
    assert 1.1 + parts["read"] + parts["pending"] == pytest.approx(compiled + 20_000 * cold.per_row("flush"))
    assert not warm.must_stop(500, 0, now=1.1) and cold.must_stop(500, 0, now=1.1)
    # the worker's batch, sent before the compile is done, is scanned after it
    for clock in (warm, cold):
        clock.finished_here("probe")
    cold.compiling(0.3)
    for clock in (warm, cold):
        clock.sent(2.0, 20_000)
    w, c = warm.forecast(500, 0, now=2.1), cold.forecast(500, 0, now=2.1)
    assert c["wait"] - w["wait"] == pytest.approx(compiled - (2.0 + budget.SCAN_FIXED_S))
    # its answer says the rules are compiled: the clock is a warm machine's again
    for clock in (warm, cold):
        clock.answered(8.0)
    assert cold.forecast(500, 0, now=8.1) == warm.forecast(500, 0, now=8.1)
