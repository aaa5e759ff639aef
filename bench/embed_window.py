"""How much stored text the embedder never reads: chunks and characters beyond the model's token window.

    .venv/bin/python bench/embed_window.py [--corpus ../shared/corpus]

The corpus is stored text-only by the real `funes index --no-embed` into a throwaway FUNES_HOME
(parse, redact, chunk exactly as indexing does; no model is run), and every stored chunk is
tokenised with the configured embedder's own tokenizer (tokenizer.json and max_seq_length from the
model folder funes resolves, so FUNES_EMBED_MODEL is honoured). A chunk is beyond the window when it
has more word pieces, [CLS] and [SEP] included, than max_seq_length; the characters after the last
word piece that fits are the text the vector leg never sees. Also reported: how many
max_seq_length windows (no overlap) the chunks would need and how many word pieces reading every
part would cost against today's truncated reads, and for each dev-set question whether its evidence
lies in the part of its chunk the model reads, straddles the cut, or lies wholly beyond it.

`--cost N` also measures, side by side in this process (alternating, best of 2): embedding N
sampled chunks with `embed_texts(pool="first")` vs `pool="mean"` (chunks/s, windows per chunk),
and building the lexical index over every stored chunk with the text alone vs context line + text
(memory/contexts.py; chunks/s of tokenising + segment building).

`--vector-input-cost N` times the shipped embed step on N sampled stored chunks side by side with
the one before it (alternating, best of 2, wall and process CPU time): rows read + context lines
derived (`ChunkTable.vector_inputs`) + `embed_rows`, vs the text alone read + `embed_rows`.

Output: a markdown table per block type on stdout, the same in bench/out/embed_window.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from devset.questions import QUESTIONS  # noqa: E402
from devset.questions import load as load_questions  # noqa: E402

CORPUS = HERE.parents[1] / "shared" / "corpus"
OUT = HERE / "out" / "embed_window.json"


def stored_chunks(corpus: Path) -> list[dict]:
    from funes.commands import index as ix
    from funes.memory import Memory, contexts

    rep = ix.index(ix.Options(path=str(corpus), yes=True, no_embed=True))
    if rep.failed:
        raise RuntimeError(f"index failed for {rep.failed[:3]}")
    return Memory.resolve(None).require().chunks.scan(list({"block_type", *contexts.COLUMNS})).to_pylist()


def cost(rows: list[dict], n: int, seed: int = 0) -> dict:
    """Side by side: embedding n sampled chunks first-window vs every window; BM25 text vs context + text."""
    import random
    import time

    from funes import models
    from funes.ingest import windows
    from funes.ingest.embed import embed_texts
    from funes.memory import bm25, contexts
    from funes.memory.tokenize import tokenize_many

    emb = models.load_embedder()
    sample = random.Random(seed).sample([r["text"] for r in rows], min(n, len(rows)))
    cuts = windows.cut(sample, windows.tokenizer_of(emb), windows.room(emb))
    embed_texts(sample[:8], emb, pool="mean")  # warm-up
    best: dict[str, float] = {}
    for _ in range(2):
        for how in ("first", "mean"):
            t0 = time.perf_counter()
            embed_texts(sample, emb, pool=how)
            best[how] = min(best.get(how, 1e9), time.perf_counter() - t0)
        for how in ("text", "context"):
            t0 = time.perf_counter()
            docs = [r["text"] for r in rows] if how == "text" else contexts.documents(rows, [])
            bm25.build(tokenize_many(docs), 0)
            best[how] = min(best.get(how, 1e9), time.perf_counter() - t0)
    return {
        "embed_chunks": len(sample),
        "windows_per_chunk": round(sum(map(len, cuts)) / len(sample), 3),
        "embed_first_chunks_per_s": round(len(sample) / best["first"], 2),
        "embed_mean_chunks_per_s": round(len(sample) / best["mean"], 2),
        "bm25_chunks": len(rows),
        "bm25_text_chunks_per_s": round(len(rows) / best["text"]),
        "bm25_context_chunks_per_s": round(len(rows) / best["context"]),
    }


def vector_input_cost(n: int, seed: int = 0, rounds: int = 2) -> dict:
    """The embed step of `funes index` on n sampled stored rows: context line + text (shipped) vs
    the text alone (before), alternating in this process; best of `rounds`, wall and CPU seconds."""
    import random
    import time

    import numpy as np

    from funes import models
    from funes.ingest import run, windows
    from funes.memory import Memory

    mem = Memory.resolve(None).require()
    emb = models.load_embedder()
    rows = np.array(sorted(random.Random(seed).sample(range(mem.chunks.count()), n)), dtype=np.int64)
    run.embed_rows(mem.chunks.take(rows[:8], ["text"])["text"].to_pylist(), emb)  # warm-up

    def inputs(how: str) -> list[str]:
        if how == "context":
            return mem.chunks.vector_inputs(rows)[1]
        return mem.chunks.take(rows, ["id", "text"])["text"].to_pylist()

    best: dict[str, tuple[float, float]] = {}
    line_s = 1e9
    for _ in range(rounds):
        for how in ("text", "context"):
            w0, c0 = time.perf_counter(), time.process_time()
            texts = inputs(how)
            w1 = time.perf_counter()
            run.embed_rows(texts, emb)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            if how == "context":
                line_s = min(line_s, w1 - w0)
            if how not in best or wall < best[how][0]:
                best[how] = (wall, cpu)
    tk = windows.tokenizer_of(emb)
    pieces = {h: float(np.mean([len(e.ids) for e in tk.encode_batch(inputs(h))])) for h in ("text", "context")}
    return {
        "chunks": n,
        "load_average": os.getloadavg(),
        "text_wall_s": round(best["text"][0], 2),
        "text_cpu_s": round(best["text"][1], 2),
        "context_wall_s": round(best["context"][0], 2),
        "context_cpu_s": round(best["context"][1], 2),
        "text_chunks_per_s": round(n / best["text"][0], 2),
        "context_chunks_per_s": round(n / best["context"][0], 2),
        "context_vs_text_wall": round(best["text"][0] / best["context"][0], 3),
        "context_vs_text_cpu": round(best["text"][1] / best["context"][1], 3),
        "read_and_lines_ms_per_chunk": round(1000 * line_s / n, 3),
        "mean_pieces_text": round(pieces["text"], 1),
        "mean_pieces_context": round(pieces["context"], 1),
    }


def model_tokenizer():
    """(model id, tokenizer without truncation or padding, max_seq_length) of the configured embedder."""
    from tokenizers import Tokenizer

    from funes.models import locate

    model_id = locate.embedder_id()
    folder = locate.resolve(model_id, "FUNES_EMBED_MODEL")
    tk = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tk.no_truncation()
    tk.no_padding()
    max_len = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    return model_id, tk, int(max_len)


def measure(texts: list[str], tk, max_len: int) -> list[tuple[int, int, int, int]]:
    """Per text: (word pieces incl. specials, content pieces, end of the visible text in chars, windows needed)."""
    out = []
    room = max_len - 2  # [CLS] and [SEP] take two of the model's positions
    for text, enc in zip(texts, tk.encode_batch(texts)):
        content = [o for o, special in zip(enc.offsets, enc.special_tokens_mask) if not special]
        visible = content[room - 1][1] if len(content) > room else len(text)
        out.append((len(enc.ids), len(content), visible, max(1, math.ceil(len(content) / room))))
    return out


def summarise(rows: list[dict], measured, max_len: int) -> dict[str, dict]:
    room = max_len - 2
    by: dict[str, list] = defaultdict(list)
    for r, m in zip(rows, measured):
        by[r["block_type"]].append((len(r["text"]), *m))
        by["all"].append((len(r["text"]), *m))
    out = {}
    for name, items in sorted(by.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        chars = sum(i[0] for i in items)
        pieces = sorted(i[1] for i in items)
        out[name] = {
            "chunks": len(items),
            "beyond_pct": round(100 * sum(i[1] > max_len for i in items) / len(items), 1),
            "chars": chars,
            "chars_beyond_pct": round(100 * sum(i[0] - i[3] for i in items) / max(chars, 1), 1),
            "median_pieces": pieces[len(pieces) // 2],
            "p90_pieces": pieces[int(0.9 * (len(pieces) - 1))],
            "windows_per_chunk": round(sum(i[4] for i in items) / len(items), 2),
            # embedding work if every piece were read, relative to today's truncated reads
            "pieces_all_vs_read": round(sum(i[2] for i in items) / max(sum(min(i[2], room) for i in items), 1), 2),
        }
    return out


def evidence_visibility(rows: list[dict], measured, questions) -> dict[str, list[str]]:
    """Question ids by where their evidence sits in its best chunk: visible, partly, beyond the window, missing."""
    by_session: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for r, m in zip(rows, measured):
        by_session[r["session_id"]].append((r["text"], m[2]))
    order = ("visible", "partly", "beyond", "missing")
    out: dict[str, list[str]] = {k: [] for k in order}
    for q in questions:
        pattern = re.compile(r"\s+".join(map(re.escape, q.evidence.split())))
        best = "missing"
        for text, visible in by_session.get(q.session_id, []):
            for m in pattern.finditer(text):
                where = "visible" if m.end() <= visible else "partly" if m.start() < visible else "beyond"
                best = min(best, where, key=order.index)
        out[best].append(q.id)
    return out


def render(model_id: str, max_len: int, n: int, summary: dict, evidence: dict) -> str:
    lines = [
        f"{model_id}: window {max_len} word pieces, {n} stored chunks",
        "",
        "| block type | chunks | beyond window | chars | chars beyond window | median / p90 pieces "
        "| windows per chunk | pieces if all read / read now |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        lines.append(
            f"| {name} | {s['chunks']:,} | {s['beyond_pct']}% | {s['chars']:,} | {s['chars_beyond_pct']}% "
            f"| {s['median_pieces']} / {s['p90_pieces']} | {s['windows_per_chunk']} | {s['pieces_all_vs_read']} |"
        )
    if evidence:
        counts = ", ".join(f"{k} {len(v)}" for k, v in evidence.items())
        lines += [
            "",
            f"dev-set evidence in its best chunk: {counts}",
            f"beyond or partly: {evidence['beyond'] + evidence['partly']}",
        ]
    return "\n".join(lines)


def refresh_cost(rounds: int = 2) -> dict:
    """The stored memory's whole lexical side rebuilt by `indexes.refresh`, with the shipped
    documents (context line + text) vs the text alone, alternating; best of `rounds` each."""
    import shutil
    import time

    from funes.memory import Memory, contexts, indexes

    mem = Memory.resolve(None).require()
    shipped = contexts.stored_documents
    best: dict[str, float] = {}
    for _ in range(rounds):
        for how in ("text", "context"):
            shutil.rmtree(indexes.index_dir(mem), ignore_errors=True)
            if how == "text":  # what a document was before: the chunk text alone
                contexts.stored_documents = lambda source, table: table["text"].to_pylist()  # type: ignore[assignment]
            t0 = time.perf_counter()
            stats = indexes.refresh(mem)
            best[how] = min(best.get(how, 1e9), time.perf_counter() - t0)
            contexts.stored_documents = shipped
    n = stats["rows"]
    return {
        "rows": n,
        "refresh_text_s": round(best["text"], 2),
        "refresh_context_s": round(best["context"], 2),
        "refresh_text_chunks_per_s": round(n / best["text"]),
        "refresh_context_chunks_per_s": round(n / best["context"]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--cost", type=int, metavar="N", default=0, help="also time both poolings on N chunks (above)")
    ap.add_argument("--refresh-cost", action="store_true", help="also time the lexical index rebuild both ways")
    ap.add_argument("--vector-input-cost", type=int, metavar="N", default=0, help="also time the embed step both ways")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="funes-window-") as tmp:
        os.environ["FUNES_HOME"] = tmp
        rows = stored_chunks(args.corpus)
        refreshed = refresh_cost() if args.refresh_cost else None
        vector_cost = vector_input_cost(args.vector_input_cost) if args.vector_input_cost else None
    if vector_cost:
        print("\n" + json.dumps(vector_cost, indent=1))
    if refreshed:
        print("\n" + json.dumps(refreshed, indent=1))
    model_id, tk, max_len = model_tokenizer()
    measured = measure([r["text"] for r in rows], tk, max_len)
    summary = summarise(rows, measured, max_len)
    evidence = evidence_visibility(rows, measured, load_questions()) if QUESTIONS.is_file() else {}
    print(render(model_id, max_len, len(rows), summary, evidence))
    costs = cost(rows, args.cost) if args.cost else None
    if costs:
        print("\n" + json.dumps(costs, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {"model": model_id, "max_seq_length": max_len, "by_block_type": summary, "devset_evidence": evidence}
    report |= {"cost": costs} if costs else {}
    report |= {"refresh_cost": refreshed} if refreshed else {}
    report |= {"vector_input_cost": vector_cost} if vector_cost else {}
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
