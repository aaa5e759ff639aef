"""`funes curate REMOTE` on a real pseudo-terminal: preview each waiting session, decide, quit, end of input."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

from conftest import subprocess_env
from retrieval_support import add_vectors, chunk_rows, memory_with, session, unit_vectors

LONG = "please find why the parser drops the last record " * 6 + "\nand fix it"


def _memory():
    rows = []
    for s in range(4):
        texts = [LONG if s == 0 and i == 0 else f"turn {i} of session {s}" for i in range(11 if s == 0 else 3)]
        if s == 2:
            texts[0] = "<command-name>/clear</command-name>"  # the harness's, not the person's
        rows += session(
            f"s{s}", texts, ts=f"2026-06-1{s}T10:0{s}:00.000Z", harness="codex" if s == 1 else "claude_code"
        )
    return memory_with(rows, dict(enumerate(unit_vectors(len(rows)))), refresh=False)


class Terminal:
    """`funes curate …` with stdin, stdout and stderr on the slave side of a pty, as in a shell."""

    def __init__(self, funes_home, *args: str):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "funes.cli", "curate", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=subprocess_env(funes_home, TERM="dumb"),
            start_new_session=True,
        )
        os.close(slave)
        self.seen = ""

    def expect(self, needle: str, timeout: float = 60) -> str:
        """Everything printed up to and including `needle`, which must come before the timeout."""
        end = time.monotonic() + timeout
        while needle not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"no {needle!r} in {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                assert chunk, f"funes exited before {needle!r}: {self.seen!r}"
                self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        head, _, self.seen = self.seen.partition(needle)
        return head + needle

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=60)
        finally:
            os.close(self.master)


def _decisions(funes_home):
    return (funes_home / "curation" / "acme--mem.txt").read_text()


def test_review_previews_each_session_and_quit_keeps_the_earlier_answers(funes_home):
    from funes.commands.curate import curate
    from funes.memory import curation

    _memory()
    curate("acme/mem", "acme/widget", [], [])
    path = curation.path_for("acme/mem")
    path.write_text(path.read_text() + "# reviewed by ada on the train\n")
    term = Terminal(funes_home, "acme/mem")
    first = term.expect("[i/e/s/q] ")
    assert "[1/4] claude_code  -home-u-proj  2026-06-10 10:00  11 turns\n" in first
    assert "  session s0\n" in first and "turn 1 of" not in first  # user turns only
    long_line = next(x for x in first.splitlines() if x.startswith("  > please"))
    assert long_line.endswith("…") and len(long_line) <= 4 + 100 + 1 and "\n" not in long_line
    assert "  > turn 2 of session 0\n" in first and "  > turn 6 of session 0\n" in first
    assert "turn 8 of" not in first and "  … 2 more user turns" in first  # 6 user turns, 4 shown
    term.send("i\n")
    second = term.expect("[i/e/s/q] ")
    assert "[2/4] codex  -home-u-proj  2026-06-11 10:01  3 turns\n" in second
    term.send("maybe\n")
    assert "answer i (include), e (exclude), s (skip) or q (quit)" in term.expect("[i/e/s/q] ")
    term.send("e\n")
    third = term.expect("[i/e/s/q] ")
    assert "[3/4]" in third
    assert "  > turn 2 of session 2\n" in third and "command-name" not in third
    term.send("s\n")
    assert "[4/4]" in term.expect("[i/e/s/q] ")
    term.send("q\n")
    assert "reviewed: 1 included, 1 excluded, 1 skipped; 1 not reviewed" in term.expect("excluded\n")
    assert term.close() == 0
    d = curation.load("acme/mem")
    assert d.project == "acme/widget" and d.include == {"s0": 11} and d.exclude == {"s1"}
    assert "# reviewed by ada on the train\n" in _decisions(funes_home)


def test_end_of_input_stops_the_review_and_a_grown_session_comes_back(funes_home):
    from funes.commands.curate import curate
    from funes.memory import curation

    mem = _memory()
    curate("acme/mem", "acme/widget", ["s0", "s1", "s2"], ["s3"])
    start = mem.chunks.append(
        chunk_rows([{"session_id": "s1", "turn_uuid": "s1-t9", "seq": 9, "role": "user", "text": "one more thing"}])
    )
    add_vectors(mem, [start], unit_vectors(1, seed=99))
    term = Terminal(funes_home, "acme/mem")
    shown = term.expect("[i/e/s/q] ")
    assert "[1/1] codex" in shown and "4 turns  (grew since review)" in shown and "  > one more thing\n" in shown
    term.send("\x04")  # Ctrl-D: end of input, as a person closing the review
    assert "reviewed: 0 included, 0 excluded, 0 skipped; 1 not reviewed" in term.expect("excluded\n")
    assert term.close() == 0
    assert curation.load("acme/mem").include == {"s0": 11, "s1": 3, "s2": 3}  # s1 still held at its old size
    term = Terminal(funes_home, "acme/mem")
    term.expect("[i/e/s/q] ")
    term.send("include\n")
    assert "ships 3 sessions; 0 wait" in term.expect("excluded\n") and term.close() == 0
    assert curation.load("acme/mem").include["s1"] == 4
    term = Terminal(funes_home, "acme/mem")
    assert "nothing waits for review\nships 3 sessions" in term.expect("excluded\n") and term.close() == 0


def test_without_a_terminal_it_lists_what_waits_and_how_to_decide(funes_home):
    from funes.commands.curate import curate

    _memory()
    curate("acme/mem", "acme/widget", ["s0"], [])
    before = _decisions(funes_home)
    out = subprocess.run(
        [sys.executable, "-m", "funes.cli", "curate", "acme/mem"],
        env=subprocess_env(funes_home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ships 1 sessions; 3 wait for review (0 grew since); 0 excluded\n")
    assert "  review: s1\n  review: s2\n  review: s3\n" in out.stdout
    assert "funes curate acme/mem --include SESSION" in out.stdout and "[i/e/s/q]" not in out.stdout
    assert _decisions(funes_home) == before
