"""Source discovery and dispatch (upstream-spec 0, 1.1, 3.1) and repo attribution (1.8)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES
from funes import paths, vocab
from funes.errors import UsageError
from funes.traces import Unit, claude, codex, hermes, pi, repo, source


def install(home: Path) -> dict[str, Path]:
    """The fixtures laid out where each agent writes them under a fake $HOME."""
    roots = {
        "claude_code": home / ".claude" / "projects",
        "codex": home / ".codex" / "sessions",
        "pi": home / ".pi" / "agent" / "sessions",
    }
    shutil.copytree(FIXTURES / "claude" / "projects", roots["claude_code"])
    shutil.copytree(FIXTURES / "codex" / "sessions", roots["codex"])
    shutil.copytree(FIXTURES / "pi" / "sessions", roots["pi"])
    shutil.copytree(FIXTURES / "hermes" / "sessions", home / ".hermes" / "sessions")
    return roots


@pytest.mark.parametrize(("name", "facet"), [("claude", "claude_code"), ("claude_code", "claude_code"),
                                             ("codex", "codex"), ("pi", "pi"), ("hermes", "hermes")])  # fmt: skip
def test_parse_harness(name, facet):
    assert vocab.parse_harness(name) == facet
    assert vocab.parse_harness(f" {name.upper()} ") == facet
    assert vocab.cli_name(facet) == ("claude" if facet == "claude_code" else facet)


def test_unknown_harness_message():
    with pytest.raises(UsageError, match=r'unknown harness "cursor" \(expected claude, codex, pi, or hermes\)'):
        vocab.parse_harness("cursor")
    assert vocab.parse_harness("  ") is None


def test_every_parser_stores_a_vocabulary_facet():
    assert {m.HARNESS for m in (claude, codex, pi, hermes)} == set(vocab.FACETS)
    assert set(paths.home_roots()) == set(vocab.FACETS)


def test_known_roots_in_sweep_order(funes_home):
    home = funes_home.parent
    assert source.known_roots() == []
    roots = install(home)
    assert source.known_roots() == [*roots.items(), ("hermes", home / ".hermes")]


def test_no_path_sweeps_every_root_and_harness_filters(funes_home):
    install(funes_home.parent)
    sources = source.resolve(None)
    assert [s.harness for s in sources] == ["claude_code", "codex", "pi", "hermes"]
    by_harness = {s.harness: [u.harness for u in s.units()] for s in sources}
    assert by_harness == {"claude_code": ["claude_code"] * 2, "codex": ["codex"] * 2, "pi": ["pi"] * 2,
                          "hermes": ["hermes"] * 3}  # fmt: skip
    assert [s.harness for s in source.resolve(None, "claude")] == ["claude_code"]
    assert (
        source.resolve(None)[0].describe()
        == f"scanning claude_code transcripts under {funes_home.parent}/.claude/projects"
    )


def test_missing_roots_are_usage_errors(funes_home):
    with pytest.raises(UsageError, match="no agent sessions found"):
        source.resolve(None)
    with pytest.raises(UsageError, match="no claude session dir found on this machine"):
        source.resolve(None, "claude")
    with pytest.raises(UsageError, match="no such path"):
        source.resolve(funes_home / "nope")
    loop = funes_home.parent / "loop"
    loop.symlink_to(loop)
    dangling = funes_home.parent / "dangling"
    dangling.symlink_to(funes_home.parent / "gone")
    for link in (loop, dangling):
        with pytest.raises(UsageError, match="symbolic link that leads nowhere"):
            source.resolve(link)


def test_known_root_paths_dispatch_by_suffix(funes_home):
    roots = install(funes_home.parent)
    for facet, root in roots.items():
        [src] = source.resolve(root)
        assert src.harness == facet and {u.harness for u in src.units()} == {facet}


def test_unknown_tree_is_sniffed_file_by_file(tmp_path):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for sub in ("claude", "codex", "pi", "hermes"):
        for f in (FIXTURES / sub).rglob("*.jsonl"):
            shutil.copy(f, mixed / f"{sub}-{f.name}")
    [src] = source.resolve(mixed)
    seen = {u.path.name.split("-")[0]: u.harness for u in src.units()}
    assert seen == {"claude": "claude_code", "codex": "codex", "pi": "pi", "hermes": "hermes"}
    assert all(src.read(u).frame.height for u in src.units())


def test_forced_harness_wins_for_a_tree(tmp_path):
    shutil.copytree(FIXTURES / "pi" / "sessions", tmp_path / "s")
    [src] = source.resolve(tmp_path / "s", "claude")
    assert {u.harness for u in src.units()} == {"claude_code"}


def test_single_files_and_sidecars(tmp_path):
    meta = next((FIXTURES / "claude").rglob("*.meta.json"))
    [src] = source.resolve(meta)
    [unit] = src.units()
    parsed = src.read(unit)
    assert parsed.frame.height == 0 and parsed.skipped == {source.NOT_TRANSCRIPT: 1}
    log = FIXTURES / "hermes" / "sessions" / "session_cron_5ef95dfc9c7b_20260410_020048.json"
    assert source.resolve(log)[0].units()[0].harness == "hermes"


def test_sqlite_file_of_any_name_is_hermes(tmp_path):
    import sqlite3

    db = tmp_path / "state.db.backup"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp REAL)"
    )
    conn.execute("INSERT INTO messages VALUES (1, 's', 'user', 'hi', 0)")
    conn.commit()
    conn.close()
    [src] = source.resolve(db)
    assert isinstance(src, source.HermesSource) and src.describe() == f"scanning hermes sessions in {db}"
    [unit] = src.units()
    assert src.read(unit).frame["text"].to_list() == ["hi"]


def test_parquet_dispatch_is_by_extension(tmp_path):
    path = tmp_path / "T.PARQUET"
    path.write_bytes(b"")
    [src] = source.resolve(path, "codex")
    assert isinstance(src, source.ParquetSource) and src.describe() == f"indexing parquet dataset {path}"


def test_limit_over_a_sniffed_tree(tmp_path):
    shutil.copytree(FIXTURES / "codex" / "sessions", tmp_path / "t")
    [src] = source.resolve(tmp_path / "t")
    assert len(src.units(limit=1)) == 1 and len(src.units()) == 2


# ---- repo attribution ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("https://huggingface.co/datasets/acme/kb", "acme/kb"),
        ("git@github.com:acme/funes.git", "acme/funes"),
        ("https://github.com/acme/funes.git/", "acme/funes"),
        ("ssh://git@host:22/a/b/c", "b/c"),
        ("https://host/only", ""),
        ("not a url", ""),
    ],
)
def test_normalize_remote(url, want):
    assert repo.normalize_remote(url) == want


def test_repo_of_a_transcript_cwd(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/funes.git"], check=True)
    subprocess.run([*git, "remote", "add", "hub", "https://huggingface.co/datasets/acme/kb"], check=True)
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(f'{{"type":"summary"}}\n{{"type":"session_meta","payload":{{"cwd":"{work}"}}}}\n')
    unit = Unit(str(transcript), "codex", transcript, None)
    repo.repo_of_cwd.cache_clear()
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    assert repo.repo_for_unit(unit) == "acme/funes acme/kb"
    assert repo.repo_for_unit(unit) == "acme/funes acme/kb"
    assert len(calls) == 1  # one git subprocess per distinct cwd
    assert repo.repo_of_cwd(str(tmp_path / "missing")) == "" and len(calls) == 1
    assert repo.repo_of_cwd(str(tmp_path)) == ""  # not a repository


def test_hermes_unit_cwd_comes_from_sessions_table(tmp_path):
    import sqlite3

    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE sessions (id TEXT, cwd TEXT)")
    conn.execute("INSERT INTO sessions VALUES ('s', '/home/ada/proj')")
    conn.commit()
    conn.close()
    assert repo.cwd_of_unit(Unit(f"hermes:{db}#s", "hermes", db, "1", 0.0, "s")) == "/home/ada/proj"


def _walk_by_paths(root):
    """The walk as it was defined with Path objects (the reference for the string walk)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in filenames:
            p = Path(dirpath, name)
            if p.suffix == ".jsonl" and not p.is_symlink() and p.is_file():
                found.append(p)
    return sorted(found)


def test_the_walk_finds_and_orders_files_as_paths_do(tmp_path):
    from funes.traces import jsonl

    root = tmp_path / "r"
    names = ["a/b/x.jsonl", "a/b-c/y.jsonl", "a/b.c/z.jsonl", "a/z.jsonl", "a/B/q.jsonl", "a/b/x.jsonl.bak",
             "a/.jsonl", "a/..jsonl", "a/b/ä.jsonl", "a/b/x.JSONL", "top.jsonl", "a-b.jsonl"]  # fmt: skip
    for n in names:
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / n).write_text("{}\n")
    (root / "a" / "link.jsonl").symlink_to(root / "top.jsonl")
    (root / "a" / "dirlink").symlink_to(root / "a" / "b", target_is_directory=True)
    (root / "a" / "dir.jsonl").mkdir()
    got = jsonl.walk_jsonl(root)
    assert got == _walk_by_paths(root)
    # by component, not by string ("a-b.jsonl" < "a/..." as strings)
    assert [p.relative_to(root).as_posix() for p in got] == [
        "a/..jsonl", "a/B/q.jsonl", "a/b/x.jsonl", "a/b/ä.jsonl", "a/b-c/y.jsonl", "a/b.c/z.jsonl", "a/z.jsonl",
        "a-b.jsonl", "top.jsonl",
    ]  # fmt: skip
    assert jsonl.any_jsonl(root) and not jsonl.any_jsonl(tmp_path / "missing")
    (tmp_path / "empty" / "deep").mkdir(parents=True)
    assert not jsonl.any_jsonl(tmp_path / "empty") and jsonl.walk_jsonl(tmp_path / "empty") == []
    assert jsonl.walk_jsonl(root / "a" / ".jsonl") == [root / "a" / ".jsonl"]  # a file is itself
