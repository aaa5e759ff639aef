"""An index run raises the collector's young threshold and freezes the imports out of its walks,
and leaves both as it found them however it ends (a server or the hook worker goes on with its own)."""

from __future__ import annotations

import gc

import pytest

from conftest import FIXTURES
from funes.commands import collector, index


@pytest.fixture(autouse=True)
def _collector_as_found():
    old = gc.get_threshold()
    yield
    gc.set_threshold(*old)
    gc.unfreeze()


def test_bulk_raises_the_threshold_and_restores_it_on_error():
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), collector.bulk():
        assert gc.get_threshold() == (collector.YOUNG, 10, 10)
        assert gc.get_freeze_count() > 0  # the imports are out of the collector's walks
        raise RuntimeError("stop")
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_bulk_keeps_a_higher_threshold_and_a_hosts_own_freeze():
    gc.set_threshold(50_000, 5, 7)
    gc.freeze()
    held = gc.get_freeze_count()
    with collector.bulk():
        assert gc.get_threshold() == (50_000, 5, 7)
    assert gc.get_threshold() == (50_000, 5, 7)
    assert gc.get_freeze_count() == held  # not unfrozen: the freeze was the host's


def test_an_index_run_uses_bulk_and_leaves_the_collector_as_it_was():
    gc.set_threshold(700, 10, 10)
    seen = set()

    def progress(msg, transient=False):
        seen.add((gc.get_threshold()[0], gc.get_freeze_count() > 0))

    rep = index.index_sources(
        index.source.resolve(FIXTURES / "claude", "claude"), index.Options(no_embed=True), False, progress
    )
    assert rep.chunks_added > 0
    assert seen == {(collector.YOUNG, True)}
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0

    def interrupt(msg, transient=False):
        raise KeyboardInterrupt  # a Ctrl-C mid-run

    with pytest.raises(KeyboardInterrupt):
        index.index_sources(
            index.source.resolve(FIXTURES / "codex", "codex"), index.Options(no_embed=True), False, interrupt
        )
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
