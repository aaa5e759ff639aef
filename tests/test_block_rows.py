"""The indexer's block rows as column lists, and the chunk stages without datasets.map, give
exactly the rows of the Arrow path and of the datasets pipeline they replaced (bench/README.md
"## Day zero"): the tier select, `command`, `repo`, the unit tallies, the chunk rows, the
redactions counted."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from funes.commands import prepare
from funes.ingest import blocks, run, stages
from funes.traces import source

FIXTURES = Path(__file__).parent / "fixtures"
TIERS = [("text",), ("text", "tool_use", "tool_result"), ("tool_use", "tool_result"), ("tool_result",)]


def _units(root: Path) -> list:
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != "MANIFEST.md"):
        for src in source.resolve(path):
            out += [(src, u) for u in src.units()]
    return out


def _arrow_path(src, unit, tiers, thinking: bool):
    """What the indexer did before: the unit as one Arrow table, select in Arrow."""
    try:
        parsed = src.read(unit)
    except Exception:
        return None
    return blocks.arrow_blocks(parsed.table, unit, tiers, thinking)


def _check(units: list, tier_sets=TIERS) -> int:
    listed = 0
    for tiers in tier_sets:
        for thinking in (True, False):
            fast, slow = [], []
            for src, unit in units:
                got, _ = prepare.read_unit(src, unit, tiers, thinking)
                ref = _arrow_path(src, unit, tiers, thinking)
                assert (got is None) == (ref is None), unit.key
                if got is None:
                    continue
                listed += isinstance(got, blocks.Blocks)
                assert blocks.concat([got]).equals(ref, check_metadata=True), (unit.key, tiers, thinking)
                fast.append(got)
                slow.append(ref)
            if fast:
                joined = pa.concat_tables(slow).combine_chunks()
                assert blocks.concat(fast).equals(joined, check_metadata=True), (tiers, thinking)
                # a flush mixing list rows and Arrow rows (a parquet unit beside transcripts)
                mixed = [b if i % 2 else (b.table() if isinstance(b, blocks.Blocks) else b) for i, b in enumerate(fast)]
                assert blocks.concat(mixed).equals(joined, check_metadata=True)
    return listed


def test_list_rows_equal_the_arrow_rows_on_the_fixtures():
    units = [p for agent in ("claude", "codex", "pi", "parquet", "hermes") for p in _units(FIXTURES / agent)]
    assert _check(units) > 0  # the list path ran, not only the Arrow one


def test_list_rows_equal_the_arrow_rows_on_the_corpus(corpus):
    units = _units(corpus)
    # a third of the files, the text pass and the tool pass: ~4 s
    assert _check(units[::3], [TIERS[0], TIERS[2]]) > 0


def test_tallies_are_those_of_the_arrow_rows():
    for src, unit in _units(FIXTURES / "claude") + _units(FIXTURES / "codex"):
        _, info = prepare.read_unit(src, unit, ("text",), True)
        table = src.read(unit).table
        if not table.num_rows:
            assert info.harness is None and not info.sessions
            continue
        sessions = table["session_id"].to_pylist()
        assert info.harness == table["harness"][0].as_py()
        assert info.sessions == list(dict.fromkeys(sessions))
        assert info.turns == len(set(zip(sessions, table["turn_uuid"].to_pylist())))


def _datasets_chunk_blocks(table: pa.Table, redact, clean_batch: int) -> tuple[pa.Table, Counter]:
    """run.chunk_blocks as it was: two datasets.map stages."""
    import datasets
    from datasets.table import InMemoryTable

    datasets.disable_progress_bars()

    def stage(ds, fn, tag: str, batch_size: int, drop: bool = False):
        cols = ds.column_names if drop else None
        return ds.map(
            fn, batched=True, batch_size=batch_size, keep_in_memory=True, new_fingerprint=tag, remove_columns=cols
        )

    ds = datasets.Dataset(InMemoryTable(table), fingerprint="funes-rows").with_format("arrow")
    ds = stage(ds, lambda b: stages.clean(b, redact), "clean", clean_batch)
    removed = Counter(k for ks in ds.data.table["redactions"].to_pylist() for k in ks)
    ds = stage(ds, stages.split, "split", 512, drop=True)
    return ds.data.table.cast(stages.schema.arrow_schema("chunks")), removed


def _batchwise(texts, commands):
    """A redactor whose output depends on its whole batch (as the scanner's lowering mode can)."""
    mark = f"<{len(texts)}>"
    out = [t.replace("e", mark) if "the" in t else t for t in texts]
    return out, [["kind-a"] * t.count("the") if "the" in t else [] for t in texts]


@pytest.mark.parametrize("batch", [run.CLEAN_BATCH, 7])
def test_chunk_rows_equal_the_datasets_pipeline(monkeypatch, batch):
    units = _units(FIXTURES / "claude") + _units(FIXTURES / "codex") + _units(FIXTURES / "pi")
    got = [prepare.read_unit(s, u, ("text", "tool_use", "tool_result"), True)[0] for s, u in units]
    table = blocks.concat([b for b in got if b is not None])
    assert table.num_rows > 2 * 7
    ref = _datasets_chunk_blocks(table, _batchwise, batch)
    monkeypatch.setattr(run, "CLEAN_BATCH", batch)
    chunks, removed = run.chunk_blocks(table, _batchwise)
    assert chunks.equals(ref[0], check_metadata=True)
    assert removed == ref[1] and removed
    empty, none = run.chunk_blocks(table.slice(0, 0), _batchwise)
    assert empty.num_rows == 0 and empty.schema == chunks.schema and not none


def _cwd_files(tmp_path: Path) -> list[Path]:
    """Transcripts whose cwd line is hard to find: named only in a string, two objects on the
    line, CRLF, no final newline, invalid UTF-8, a payload cwd, none at all."""
    bodies = [
        b'{"type":"user","text":"my \\"cwd\\" is elsewhere"}\n{"type":"user","cwd":"/srv/real"}\n',
        b'{"cwd":"/a"}{"cwd":"/b"}\n{"cwd":"/c"}\n',
        b'{"x":1}\r\n{"cwd":"/crlf"}\r\n',
        b'{"cwd":"/no/newline"}',
        b'{"cwd":"/bad\xff\xfebytes"}\n',
        b'{"type":"session_meta","payload":{"cwd":"/payload"}}\n',
        b'{"cwd":7}\n{"payload":{"cwd":"/second"}}\n',
        b'{"a":"\\"cwd\\"","b":"\\"cwd\\""}\n{"x":1}\n{"cwd":"/third"}',  # named twice on one line
        b'{"type":"user"}\n',
        b"",
    ]
    paths = []
    for i, body in enumerate(bodies):
        p = tmp_path / f"c{i}.jsonl"
        p.write_bytes(body)
        paths.append(p)
    return paths


def test_the_cwd_from_bytes_read_is_the_cwd_from_the_file(tmp_path):
    from funes.traces import repo

    files = _cwd_files(tmp_path) + sorted(FIXTURES.rglob("*.jsonl"))
    found = [repo.cwd_of_transcript(p) for p in files]
    assert found[:8] == [
        "/srv/real",
        "/c",
        "/crlf",
        "/no/newline",
        "/bad\ufffd\ufffdbytes",
        "/payload",
        "/second",
        "/third",
    ]
    assert [repo.cwd_of_transcript(p, p.read_bytes()) for p in files] == found


def test_the_cwd_from_bytes_read_on_the_corpus(corpus):
    from funes.traces import repo

    for p in sorted(corpus.rglob("*.jsonl")):
        assert repo.cwd_of_transcript(p, p.read_bytes()) == repo.cwd_of_transcript(p), p.name


def test_a_transcript_in_a_git_checkout_gets_its_repo(tmp_path):
    import json
    import subprocess

    from transcripts import claude_record

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/widgets.git"], check=True)
    path = tmp_path / "projects" / "p" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    lines = [claude_record("s1", i, f"turn {i}", cwd=str(checkout)) for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    [src] = source.resolve(path)
    [unit] = src.units()
    got, _ = prepare.read_unit(src, unit, ("text",), True)
    assert isinstance(got, blocks.Blocks)
    assert set(got.columns["repo"]) == {"acme/widgets"}
    assert blocks.concat([got]).equals(_arrow_path(src, unit, ("text",), True), check_metadata=True)


def _split_before(batch: pa.Table) -> pa.Table:
    """stages.split as it was (c49450b): a render, a split and an id call per block, one take of every column."""
    from funes.ingest import chunk

    out = stages.schema.arrow_schema("chunks")
    cols = {
        c: batch[c].to_pylist() for c in ("block_type", "text", "tool_name", "session_id", "turn_uuid", "block_idx")
    }
    ids, texts, split_idx, owner = [], [], [], []
    coords = zip(cols["session_id"], cols["turn_uuid"], cols["block_idx"])
    for i, (kind, text, tool, (sid, turn, block)) in enumerate(
        zip(cols["block_type"], cols["text"], cols["tool_name"], coords)
    ):
        pieces = chunk.split(chunk.render(kind, text, tool))
        for j, piece in enumerate(pieces):
            ids.append(chunk.chunk_id(sid, turn, block, j))
            texts.append(piece)
            split_idx.append(j)
        owner.extend([i] * len(pieces))
    rows = batch.take(pa.array(owner, pa.int64()))
    own = {"id": ids, "text": texts, "split_idx": split_idx}
    arrays = [
        pa.array(own[f.name], f.type) if f.name in own else rows[f.name].cast(f.type).combine_chunks() for f in out
    ]
    return pa.Table.from_arrays(arrays, schema=out)


def test_split_rows_equal_the_split_before():
    units = _units(FIXTURES / "claude") + _units(FIXTURES / "codex") + _units(FIXTURES / "pi")
    got = [prepare.read_unit(s, u, ("text", "tool_use", "tool_result"), True)[0] for s, u in units]
    table = blocks.concat([b for b in got if b is not None])
    word = "w" * 1199
    edge = [
        "",
        " \u2003\n",
        "x" * 1200,
        "x" * 1201,
        " " + "y" * 1200 + " ",
        "z" * 5000,
        (word + " ") * 4,
        ("line\n" * 700),
        "\u3000lead and trail\u3000",
        "\u00e9t\u00e9 \U0001f600 " * 300,
    ]
    n = table.num_rows
    rows = table.take(pa.array([i % n for i in range(len(edge) * 3)], pa.int64())).to_pylist()
    kinds = ["text", "tool_use", "tool_result"]
    for k, r in enumerate(rows):
        r.update(text=edge[k % len(edge)], block_type=kinds[k // len(edge)], tool_name=None if k % 2 else "bash")
        r["turn_uuid"] = f"t\u00e9{k}"
    table = pa.concat_tables([table, pa.Table.from_pylist(rows, schema=table.schema)])
    cleaned = stages.clean(table, lambda t, c: (t, [[] for _ in t]))
    assert stages.split(cleaned).equals(_split_before(cleaned), check_metadata=True)
