"""Crash-and-corruption soak: N random kills of `funes index` and M random corruptions of a copy of
an embedded memory, each followed by status / recall / get / index and an invariant check.

Invariants after every trial (once the trial's own repair path — `funes repair` when a command
names it, then `funes index` — has run):
- chunk ids are unique, and the id set equals a clean build's;
- every vector belongs to its chunk (`vectors.id == chunks.id[vectors.row]`), none is missing;
- the indexes match the tables (`indexes.problem` is None);
- the answers equal the clean build's (hybrid recall, real embedder, 4 queries, top 5);
and, before the repair, every command either answered (exit 0) or refused in one line: never a
traceback.

    .venv/bin/python bench/soak.py --kills 6 --corruptions 10 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FUNES = [sys.executable, "-m", "funes.cli"]
QUERIES = ["parser streaming latency", "coupon checkout expiry", "flaky fixture cache", "ledger bank statement"]
WORDS = [
    "parser",
    "streaming",
    "batch",
    "index",
    "memory",
    "recall",
    "session",
    "turn",
    "decision",
    "latency",
    "import",
    "bank",
    "statement",
    "ledger",
    "flaky",
    "fixture",
    "expiry",
    "checkout",
    "cache",
    "vector",
    "lexical",
    "coupon",
    "migration",
    "schema",
    "rollback",
    "deploy",
]


def write_tree(root: Path, sessions: int, turns: int, seed: int) -> None:
    r = random.Random(seed)
    for s in range(sessions):
        sid = f"soak-{s:03d}"
        path = root / "-home-u-proj" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as f:
            for i in range(turns):
                role = "user" if i % 2 == 0 else "assistant"
                text = " ".join(r.choice(WORDS) for _ in range(r.randint(20, 120)))
                content = text if role == "user" else [{"type": "text", "text": text}]
                rec = {
                    "type": role,
                    "sessionId": sid,
                    "cwd": "/home/u/proj",
                    "uuid": f"{sid}-u{i}",
                    "parentUuid": f"{sid}-u{i - 1}" if i else None,
                    "timestamp": f"2026-05-{1 + s % 28:02d}T10:{i % 60:02d}:00.000Z",
                    "message": {"role": role, "content": content},
                }
                f.write(json.dumps(rec) + "\n")


def env_for(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(FUNES_HOME=str(home), HF_HUB_OFFLINE="1", FUNES_RERANK="off", FUNES_RECALL_WAIT="2")
    return env


def run(home: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*FUNES, *args], env=env_for(home), capture_output=True, text=True, timeout=timeout)


def contract_ok(p: subprocess.CompletedProcess) -> bool:
    """Answered, or refused in one line (+ hint): never a traceback."""
    if "Traceback" in p.stderr or "PanicException" in p.stderr:
        return False
    if p.returncode == 0:
        return True
    lines = p.stderr.strip().splitlines()
    return bool(lines) and lines[-1].startswith(("funes: ", "  hint: ")) and len(lines) <= 3


# ---- invariants (in this process, fresh objects every time) ---------------------------------


def snapshot(home: Path) -> dict:
    os.environ["FUNES_HOME"] = str(home)
    os.environ["FUNES_RERANK"] = "off"
    from funes.memory import Memory, indexes
    from funes.retrieval.retriever import Retriever

    mem = Memory.resolve(None)
    if mem.chunks.dataset() is None:
        return {"rows": 0, "ids": set(), "dup_ids": 0, "vectors": 0, "mismatched": 0, "pending": 0,
                "index_problem": "no chunk table", "answers": {}}  # fmt: skip
    ids = mem.chunks.dataset().to_table(columns=["id"])["id"].to_pylist()
    vt = mem.vectors.dataset().to_table(columns=["id", "row"]) if mem.vectors.dataset() is not None else None
    mismatched = len(mem.vectors.mismatched(mem.chunks)) if vt is not None else 0
    r = Retriever(mem, reranker=None)
    answers = {
        q: [(h.session_id, h.turn_uuid) for h in r.recall(q, k=5, half_life=0, neighbors=0).hits] for q in QUERIES
    }
    return {
        "rows": len(ids),
        "ids": set(ids),
        "dup_ids": len(ids) - len(set(ids)),
        "vectors": vt.num_rows if vt is not None else 0,
        "mismatched": mismatched,
        "pending": len(mem.pending_rows()),
        "index_problem": indexes.problem(mem),
        "answers": answers,
    }


def check(snap: dict, ref: dict) -> list[str]:
    bad = []
    if snap["dup_ids"]:
        bad.append(f"{snap['dup_ids']} duplicate ids")
    if snap["ids"] != ref["ids"]:
        bad.append(f"ids differ from a clean build ({len(snap['ids'] ^ ref['ids'])})")
    if snap["mismatched"]:
        bad.append(f"{snap['mismatched']} vectors belong to other chunks")
    if snap["pending"]:
        bad.append(f"{snap['pending']} chunks without vectors")
    if snap["index_problem"]:
        bad.append(f"index: {snap['index_problem']}")
    if snap["answers"] != ref["answers"]:
        bad.append("answers differ from a clean build")
    return bad


# ---- corruptions ----------------------------------------------------------------------------


def _newest_manifest(table: Path) -> Path:
    return sorted(p for p in (table / "_versions").iterdir() if p.name.endswith(".manifest"))[0]


def _index_file(mem: Path, r: random.Random, pattern: str) -> Path:
    files = sorted((mem / "index").glob(pattern))
    return r.choice(files)


def corrupt(home: Path, kind: str, r: random.Random) -> None:
    mem = home / "memory"
    if kind == "bm25-truncated":
        f = _index_file(mem, r, "bm25.*/*.npy")
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    elif kind == "faiss-deleted":
        _index_file(mem, r, "faiss.*.index").unlink()
    elif kind == "facets-truncated":
        f = _index_file(mem, r, "facets.*/*.bin")
        f.write_bytes(f.read_bytes()[:5])
    elif kind == "index-manifest-wrong-types":
        m = json.loads((mem / "index" / "manifest.json").read_text())
        m["chunks"] = []
        (mem / "index" / "manifest.json").write_text(json.dumps(m))
    elif kind == "index-deleted":
        shutil.rmtree(mem / "index")
    elif kind == "chunks-newest-manifest-lost":
        _newest_manifest(mem / "chunks.lance").unlink()
        (mem / "chunks.lance" / "_versions" / "latest_version_hint.json").unlink(missing_ok=True)
    elif kind == "chunks-newest-manifest-truncated":
        f = _newest_manifest(mem / "chunks.lance")
        f.write_bytes(f.read_bytes()[:16])
    elif kind == "chunks-data-file-deleted":
        newest = max((mem / "chunks.lance" / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
        newest.unlink()
    elif kind == "chunks-rebuilt-vectors-kept":
        shutil.rmtree(mem / "chunks.lance")
        (home / "state.json").unlink(missing_ok=True)
    elif kind == "vectors-first-commit-killed":
        v = mem / "vectors.lance" / "_versions"
        for p in list(v.iterdir()):
            if p.name.endswith(".manifest"):
                p.rename(v / (p.name + "#1"))
            else:
                p.unlink()
    elif kind == "model-stamp-garbage":
        (mem / "manifest.json").write_text("[1, 2, 3]")
    elif kind == "ledger-garbage":
        (home / "state.json").write_text('{"x": [1, 2')
    else:
        raise ValueError(kind)


CORRUPTIONS = [
    "bm25-truncated",
    "faiss-deleted",
    "facets-truncated",
    "index-manifest-wrong-types",
    "index-deleted",
    "chunks-newest-manifest-lost",
    "chunks-newest-manifest-truncated",
    "chunks-data-file-deleted",
    "chunks-rebuilt-vectors-kept",
    "vectors-first-commit-killed",
    "model-stamp-garbage",
    "ledger-garbage",
]


_ASIDE = re.compile(r"move (\S+) aside")


def probe_commands(home: Path, sid: str, turn: str) -> tuple[list[str], str | None]:
    """status / recall / get; (failures of the contract, the fix a refusal named: `repair`, or
    the path it said to move aside)."""
    bad, fix = [], None
    for args in (["status"], ["recall", QUERIES[0], "-k", "3"], ["get", sid, turn, "--window", "0"]):
        p = run(home, *args)
        if not contract_ok(p):
            bad.append(f"{args[0]}: rc {p.returncode}: {p.stderr.strip()[-300:]}")
        if "funes repair" in p.stderr:
            fix = "repair"
        elif m := _ASIDE.search(p.stderr):
            fix = fix or m.group(1)
    return bad, fix


def apply_fix(home: Path, fix: str | None) -> list[str]:
    """Do what the refusal said, as a user would."""
    if fix == "repair":
        p = run(home, "repair")
        return [] if p.returncode == 0 else [f"repair rc {p.returncode}: {p.stderr.strip()[-300:]}"]
    if fix:
        Path(fix).rename(Path(fix).with_name(Path(fix).name + ".moved-aside"))
    return []


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=6)
    ap.add_argument("--corruptions", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    r = random.Random(a.seed)
    work = Path(tempfile.mkdtemp(prefix="funes-soak-"))
    tree = work / "projects"
    write_tree(tree, a.sessions, a.turns, a.seed)
    t0 = time.monotonic()
    ref_home = work / "ref"
    # several commits, as a memory grown by many runs has: an older intact version exists
    ref_env = env_for(ref_home) | {"FUNES_FLUSH_BLOCKS": "40"}
    p = subprocess.run([*FUNES, "index", str(tree), "--yes"], env=ref_env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    ref = snapshot(ref_home)
    build_s = time.monotonic() - t0
    print(f"reference: {ref['rows']} chunks, {ref['vectors']} vectors, built in {build_s:.1f}s", flush=True)
    results = []

    for k in range(a.kills):
        home = work / f"kill{k}"
        at = r.uniform(0.5, 6.0)
        env = env_for(home) | {"FUNES_FLUSH_BLOCKS": "6"}
        proc = subprocess.Popen(
            [*FUNES, "index", str(tree), "--yes"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        time.sleep(at)
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        bad, fix = probe_commands(home, "soak-000", "soak-000-u0")
        bad += apply_fix(home, fix)
        p = run(home, "index", str(tree), "--yes")
        if p.returncode != 0:
            bad.append(f"re-index rc {p.returncode}: {p.stderr.strip()[-300:]}")
        bad += check(snapshot(home), ref)
        results.append({"trial": f"kill@{at:.2f}s" + ("" if killed else " (finished first)"), "broke": bad})
        print(results[-1], flush=True)

    for c in range(a.corruptions):
        kind = CORRUPTIONS[c % len(CORRUPTIONS)] if c < len(CORRUPTIONS) else r.choice(CORRUPTIONS)
        home = work / f"corrupt{c}"
        shutil.copytree(ref_home, home)
        corrupt(home, kind, r)
        bad, fix = probe_commands(home, "soak-000", "soak-000-u0")
        bad += apply_fix(home, fix)
        p = run(home, "index", str(tree), "--yes")
        if p.returncode != 0:
            bad.append(f"re-index rc {p.returncode}: {p.stderr.strip()[-300:]}")
        bad += check(snapshot(home), ref)
        results.append({"trial": kind, "fix": "moved aside" if fix and fix != "repair" else fix, "broke": bad})
        print(results[-1], flush=True)

    held = sum(not x["broke"] for x in results)
    print(f"\n{held}/{len(results)} trials held; {time.monotonic() - t0:.0f}s in all; work dir {work}")
    if "--keep" not in sys.argv:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if held == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
