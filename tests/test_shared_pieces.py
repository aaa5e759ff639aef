"""An index run's store passes share one piece cache across their refreshes: fewer pieces tokenised, the same index files."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import lance
import pytest

from conftest import FIXTURES
from funes.commands import index
from funes.memory import indexes, tokenize


def _replay(memory: Path, out: Path, shared: bool) -> tuple[dict[str, bytes], int]:
    """The text side of a refresh after each of the chunk table's versions (as the run's flushes
    left them), into `out`: every file written, and how many pieces were tokenised."""
    path = memory / "memory" / "chunks.lance"
    versions = [v["version"] for v in lance.dataset(str(path)).versions()]
    man = indexes._empty_manifest(1, 0)
    tokenised = 0
    of = tokenize.Numbering.of

    def counted(self, text):
        nonlocal tokenised
        tokenised += 1
        return of(self, text)

    tokenize.Numbering.of = counted  # type: ignore[method-assign]
    try:
        with indexes.shared_pieces() if shared else contextlib.nullcontext():
            for v in versions:
                ds = lance.dataset(str(path), version=v)
                indexes._index_text(ds, man, out, ds.count_rows(), lambda *a: None)
    finally:
        tokenize.Numbering.of = of  # type: ignore[method-assign]
    assert len(versions) > 1 and man["chunks"]["rows"] > 0
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}, tokenised


def _same_files_fewer_pieces(funes_home: Path) -> None:
    own, own_tokenised = _replay(funes_home, funes_home.parent / "own", shared=False)
    one, one_tokenised = _replay(funes_home, funes_home.parent / "one", shared=True)
    assert len(own) > 3 and own == one  # bm25 segments and facets, byte for byte
    assert one_tokenised < own_tokenised


def test_a_runs_refreshes_share_one_cache_and_write_the_same_files(funes_home, monkeypatch):
    home = funes_home.parent
    shutil.copytree(FIXTURES / "claude" / "projects", home / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex" / "sessions", home / ".codex" / "sessions")
    made = []
    numbering = tokenize.Numbering

    def counted():
        made.append(numbering())
        return made[-1]

    monkeypatch.setattr(tokenize, "Numbering", counted)
    monkeypatch.setenv("FUNES_INDEX_BUDGET", "100000")
    rep = index.index(index.Options(auto=True, no_embed=True))  # three tier passes, a refresh after each
    monkeypatch.undo()
    assert rep.chunks_added > 0 and len(made) == 1
    assert indexes._SHARED.get() is None  # dropped with the run
    with pytest.raises(KeyboardInterrupt), indexes.shared_pieces():
        raise KeyboardInterrupt
    assert indexes._SHARED.get() is None
    _same_files_fewer_pieces(funes_home)


def test_the_same_files_on_the_corpus(funes_home, monkeypatch, corpus):
    src = funes_home.parent / "corpus"
    for harness in ("claude", "codex"):  # every sixth transcript of each: the test stays lean
        (src / harness).mkdir(parents=True)
        for f in sorted((corpus / harness).rglob("*.jsonl"))[::6]:
            shutil.copy(f, src / harness / f.name)
    for harness in ("claude", "codex"):
        index.index(index.Options(path=str(src / harness), harness=harness, no_embed=True))
    _same_files_fewer_pieces(funes_home)
