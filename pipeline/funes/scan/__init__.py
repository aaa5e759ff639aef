"""Secret scanners: texts in, exact secret spans out (Kingfisher ∪ detect-secrets ∪ funes rules).

Every text is scanned as several *views* that all map back to exact spans of the raw text: the
raw text itself, its JSON-unescaped form (two levels, so a key with literal `\\n` or a password
inside an escaped tool input is seen as plain text) and the decoded form of long base64 runs (a
hit there covers the whole run). Three engines scan every view:

- Kingfisher (MongoDB, ~490 rules, Rust binary from the `kingfisher-bin` wheel), run ONCE per
  batch over stdin with validation and update checks off — it never touches the network
  (`start` begins it and returns, so the indexer reads on while it scans; `find` waits);
- detect-secrets (Yelp) plugins called directly on strings (no baseline, no settings file);
- funes rules: provider token shapes the others miss or pin too narrowly (`hf_` with digits,
  `sk-ant-`/`sk-proj-` of any length...), PEM/OpenSSH private key blocks (also truncated
  ones), passwords in URLs, `.env`/export/JSON/YAML/code assignments to secret-ish names,
  CLI flags, auth headers, secret query parameters.

Spans of all engines are unioned and overlapping spans merged. Kingfisher is *expected* when its
binary is found: if it then fails, `find` raises FunesError (fail closed). When it is absent the
other two engines still run and `engines()` (shown by `funes status`) says why Kingfisher is unavailable. Messages never carry
text from the scanned input.

Modules: `views` (the views and their span maps), `kingfisher` (with `rulecache`: its compiled
rules, compiled once per machine), `detectsecrets`, `rules` (funes
rules over the whole text) and `context` (funes rules within secret-ish windows), with what the
rules share in `values` (placeholder/randomness heuristics), `names` (secret-ish names) and
`windows` (where the slower rules look). `gate` (with `superset`, Python regex -> Rust regex)
hands the two in-process engines only the texts that can hold one of their findings, decided by
polars over the whole batch; Kingfisher reads every text. A large `funes index` run scans in
one long-lived worker process instead (`worker`, started and fed by `remote`, talking `frames`):
the same `start`/`find`, so the same findings, on the other core.
"""

from __future__ import annotations

import bisect
import itertools
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from funes.scan import bare, detectsecrets, gate, kingfisher, outputs, rules
from funes.scan.kingfisher import binary as _kingfisher_binary
from funes.scan.values import documented_example
from funes.scan.views import text_views
from funes.scan.windows import lower_joined, lowering_keeps_length, word_windows

KINGFISHER_TIMEOUT_S = 600
ENGINE_NAMES = ("kingfisher", "detect-secrets", "funes-rules")


@dataclass(frozen=True)
class Finding:
    """A secret at text[start:end], named by a short stable kind (`AWS`, `PrivateKey`...)."""

    kind: str
    start: int
    end: int


_GENERIC_RANK = {
    "URLPassword": 1,
    "JWT": 1,
    "PrivateKey": 0,
    "Bearer": 2,
    "BasicAuth": 2,
    "AuthHeader": 2,
    "URLToken": 3,
    "EnvAssignment": 3,
    "Password": 3,
    "Secret": 3,
    "APIKey": 2,
}
_MARKER = re.compile(r"\[REDACTED:[A-Za-z0-9_.+-]{1,40}\]")
_SEP = "\n\x00\n"  # no rule matches across it (no token charset holds NUL; lines end at it)


def engines() -> dict[str, str]:
    """Engine name -> version, or "unavailable: <why>" (status shows it)."""
    path, why = _kingfisher_binary()
    return {
        "kingfisher": kingfisher.version(path) if path else f"unavailable: {why}",
        "detect-secrets": detectsecrets.version(),
        "funes-rules": f"builtin ({len(rules.TOKEN_RULES)} token patterns + context rules)",
    }


def find(
    texts: list[str], *, only: Iterable[str] | None = None, commands: list[str | None] | None = None
) -> list[list[Finding]]:
    """Secret spans per text: all engines (or `only` those named) over every view, merged.

    `commands[i]`, when given, is the tool call whose output texts[i] is: the output of a
    credential command (`aws configure get …`, `gh auth token`) is itself the secret."""
    scan = start(texts, only=only, commands=commands)
    try:
        return scan.result()
    finally:
        scan.close()


def start(texts: list[str], *, only: Iterable[str] | None = None, commands: list[str | None] | None = None) -> Scan:
    """`find`, begun: Kingfisher scans the batch in its own process from now on, while the
    caller does other work; `result()` runs the in-process engines and merges. Close it on every
    path (a child still running is stopped, its private temp dir removed)."""
    return Scan(texts, only, commands)


class Scan:
    """One batch's scan: its views and its Kingfisher job, started at once."""

    def __init__(self, texts: list[str], only: Iterable[str] | None, commands: list[str | None] | None):
        use = set(only) if only is not None else set(ENGINE_NAMES)
        if use - set(ENGINE_NAMES):
            raise ValueError(f"unknown scanner engine(s): {sorted(use - set(ENGINE_NAMES))}")
        self.texts, self.use, self.commands = texts, use, commands
        runs = gate.may_hold_b64(texts)
        self.flat = [(i, v) for i, t in enumerate(texts) for v in text_views(t, runs[i])]
        path = _kingfisher_binary()[0] if "kingfisher" in use else None
        self.job = None
        self.waited = 0.0  # wall seconds `result` spent on Kingfisher's findings (mostly waiting for it)
        if path and any(t.strip() for t in texts):
            self.job = kingfisher.Job(path, [v.text for _, v in self.flat], KINGFISHER_TIMEOUT_S)

    def result(self) -> list[list[Finding]]:
        """Each text's findings; FunesError when Kingfisher failed (fail closed)."""
        texts, use, flat, job = self.texts, self.use, self.flat, self.job
        hits: list[list[tuple[str, int, int]]] = [[] for _ in texts]
        ds = "detect-secrets" in use and detectsecrets.available()
        found = _in_process([v.text for _, v in flat], "funes-rules" in use, ds)
        t0 = time.monotonic()
        theirs = job.findings() if job else []
        self.waited = time.monotonic() - t0
        for j, kind, s, e in itertools.chain(found, theirs):
            i, v = flat[j]
            hits[i].append((kind, *v.to_raw(s, e)))
        if self.commands is not None and "funes-rules" in use:
            for i, (t, cmd) in enumerate(zip(texts, self.commands)):
                hits[i].extend(outputs.findings(t, cmd))
        return [_merge(t, h) for t, h in zip(texts, hits)]

    def compiled_for(self, since: float) -> float:
        """Seconds after `since` that Kingfisher waited for another run's rule compile (`rulecache`):
        the worker's first batches on a new machine wait ~7 s, which is not their scan's rate."""
        if self.job is None or not self.job.compile_wait:
            return 0.0
        return max(self.job.ready_at - since, 0.0)

    def done(self) -> bool:
        """Whether Kingfisher is through: `result()` then waits for nothing (the in-process engines
        and the merge are this process's CPU either way)."""
        return self.job is None or self.job.done()

    def close(self) -> None:
        if self.job:
            self.job.close()


def _in_process(texts: list[str], use_rules: bool, use_ds: bool) -> list[tuple[int, str, int, int]]:
    """(text index, kind, start, end) from the in-process engines. They scan the batch's
    candidate texts (`gate.py`: the others provably hold no finding) as one string: no per-text
    overhead; `bare`'s shape rules scan only the texts the gate picked for them, joined the same
    way, when those are a small part of the candidates. Each text's findings depend on that text
    alone (no rule reaches across the separator), lowered as in the whole batch."""
    if not texts or not (use_rules or use_ds):
        return []
    picks = gate.pick(texts)
    keeps = lowering_keeps_length(texts)

    def scan(picked: list[int], engines) -> list[tuple[int, str, int, int]]:
        sub = [texts[j] for j in picked]
        if not sub:
            return []
        big = _SEP.join(sub)
        starts = list(itertools.accumulate((len(t) + len(_SEP) for t in sub[:-1]), initial=0))
        out = []
        for kind, s, e in engines(big, lower_joined(sub, _SEP, big, keeps)):
            j = bisect.bisect_right(starts, s) - 1
            end = min(e, starts[j] + len(sub[j]))
            if end > s:
                out.append((picked[j], kind, s - starts[j], end - starts[j]))
        return out

    picked = [j for j, (keep, _) in enumerate(picks) if keep]
    shaped = [j for j, (_, shape) in enumerate(picks) if shape]
    # `bare` apart only when that spares it most of the text (prose: ~3 % of the candidates); where
    # its shapes are everywhere (real transcripts: ids, hashes) a second join would cost more
    apart = use_rules and 2 * sum(len(texts[j]) for j in shaped) <= sum(len(texts[j]) for j in picked)

    def most(big: str, low: str) -> list[tuple[str, int, int]]:
        lines = word_windows(big, low)
        return (rules.findings(big, low, lines, shapes=not apart) if use_rules else []) + (
            detectsecrets.findings(big, low, lines) if use_ds else []
        )

    return scan(picked, most) + (scan(shaped, bare.findings) if apart else [])


def _merge(text: str, hits: list[tuple[str, int, int]]) -> list[Finding]:
    """One text's findings: spans trimmed of whitespace, those touching a `[REDACTED:...]` marker
    dropped, overlapping ones merged under the most specific kind."""
    if not hits:
        return []
    markers = [m.span() for m in _MARKER.finditer(text)] if "[REDACTED:" in text else []
    spans = []
    for kind, s, e in hits:
        s, e = max(0, s), min(len(text), e)
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        # markers are never re-redacted; a provider's documented example value is no secret
        if e > s and not any(a < e and s < b for a, b in markers) and not documented_example(text[s:e]):
            spans.append((s, e, kind))
    spans.sort()
    out: list[list] = []
    for s, e, kind in spans:
        if out and s < out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
            out[-1][2].append((kind, e - s))
        else:
            out.append([s, e, [(kind, e - s)]])
    return [Finding(_pick_kind(kinds), s, e) for s, e, kinds in out]


def _pick_kind(kinds: list[tuple[str, int]]) -> str:
    return min(kinds, key=lambda k: (_GENERIC_RANK.get(k[0], 0), -k[1], k[0]))[0]
