"""`funes index … --engine ray`: owed units out to the cluster, their fragments committed in one step.

The decisions stay here and match the single-machine run: the same ledger (a unit current at the
last tier is skipped), the same stages (funes/scale/rayjob.py), one commit of the chunk
fragments in unit order, then the ledger, then the pending rows embedded and their vectors
committed in one step. Units whose sessions also occur in an earlier unit of this run would
collide on chunk ids across workers, so they are left to the single-machine path after the
commit, where `append_new` keeps the first, exactly as one machine does.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from funes import paths, vocab
from funes.errors import FunesError
from funes.memory import Memory, ledger
from funes.results import IndexReport, Tally


@dataclass
class _Picked:
    """A source narrowed to some of its units (the deferred ones)."""

    source: Any
    picked: list

    def units(self, limit: int | None = None) -> list:
        return self.picked

    def read(self, unit):
        return self.source.read(unit)


def run(opts, mem: Memory, sources, report: IndexReport, progress) -> None:
    from funes.scale import rayjob

    target = vocab.TIERS[-1]
    state = ledger.load_state(paths.state_file()) if mem.chunks.count() else {}
    units = [(s, u) for s in sources for u in s.units(opts.limit)]
    owed = [(s, u) for s, u in units if not ledger.is_current(state, u.key, u.signature, target)]
    report.units_total, report.units_current = len(units), len(units) - len(owed)
    with rayjob.cluster(opts.address, opts.num_cpus, opts.progress_bars) as resources:
        if owed:
            version = mem.chunks.version()  # before the empty first version: None says "nothing to dedup against"
            mem.chunks.prepare_fragments()
            job = rayjob.Job(owed, mem.chunks.path, version, vocab.TIERS, not opts.no_thinking)
            since = time.time()
            deferred = _commit(mem, job, rayjob.prepare(job, progress), report, state, since)
            ledger.save_state(paths.state_file(), state)
            if deferred:
                _local(opts, mem, deferred, report, progress)
        if not opts.no_embed:
            _embed(mem, resources, progress, report)


def _commit(mem: Memory, job, results: list[dict], report: IndexReport, state: dict, since: float) -> list:
    """Tally every unit, commit the fragments of all but the deferred ones; returns the deferred."""
    errors = [r["error"] for r in results if r["error"]]
    if errors:  # e.g. the scanner could not run: nothing is committed, as on one machine
        raise FunesError(*errors[0])
    frags: list[str] = []
    deferred: list = []
    owner: dict[str, int] = {}
    for r in results:
        src, unit = job.units[r["unit"]]
        if r["failed"] is not None:
            report.failed.append((unit.key, r["failed"]))
            continue
        report.skipped.update(r["skipped"])
        sessions = r["tally"][1] if r["tally"] else []
        if any(owner.get(s, r["unit"]) != r["unit"] for s in sessions):
            deferred.append((src, unit))
            continue
        owner.update(dict.fromkeys(sessions, r["unit"]))
        frags.extend(r["fragments"])
        _tally(report, r)
    mem.chunks.commit_fragments(frags, since)
    from funes.memory import fragments

    report.chunks_added += fragments.rows_in(frags)
    # the ledger moves only after the commit: a kill in between re-reads, and the id filter drops repeats
    for _src, unit in (job.units[r["unit"]] for r in results if r["failed"] is None):
        if unit.signature is not None and (_src, unit) not in deferred:
            state[unit.key] = {"sig": unit.signature, "level": vocab.TIERS[-1]}
    return deferred


def _tally(report: IndexReport, r: dict) -> None:
    report.redacted.update(Counter(r["redacted"]))
    if r["tally"]:
        harness, sessions, turns = r["tally"]
        tally = report.tallies.setdefault(harness, Tally())
        tally.sessions.update(sessions)
        tally.turns += turns
    for h, n in r["chunks"].items():
        report.tallies.setdefault(h, Tally()).chunks += n


def _local(opts, mem: Memory, deferred: list, report: IndexReport, progress) -> None:
    from funes.commands.index import ALL_TIERS, _Run

    by_source: dict[int, _Picked] = {}
    for src, unit in deferred:
        by_source.setdefault(id(src), _Picked(src, [])).picked.append(unit)
    total, current = report.units_total, report.units_current
    _Run(opts, mem, report, progress, time.monotonic(), False).store(list(by_source.values()), ALL_TIERS)
    report.units_total, report.units_current = total, current


def _embed(mem: Memory, resources: dict, progress, report: IndexReport) -> None:
    from funes import models
    from funes.scale import rayjob

    pending = mem.pending_rows()
    if not len(pending):
        return
    version = mem.chunks.version()
    assert version is not None  # rows are pending, so chunks were committed
    model_id = models.embedder_id()
    dim = models.embedder_dim_hint() or models.load_embedder().dim
    mem.prepare_vector_fragments(dim, model_id)
    job = rayjob.Job([], mem.chunks.path, version, (), True, vectors_path=mem.vectors.path)
    since = time.time()
    frags, got_dim, got_model = rayjob.embed(job, pending, version, resources, progress)
    if (got_dim, got_model) != (dim, model_id):
        raise FunesError(f"the Ray workers embedded with {got_model} ({got_dim} dims), not {model_id} ({dim})")
    mem.vectors.commit_fragments(frags, since)
    report.vectors_added += len(pending)
