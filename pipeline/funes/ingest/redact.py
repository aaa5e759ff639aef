"""Index-time redaction stage: whole block texts in, `[REDACTED:<kind>]` in place of each secret.

Runs on whole (rendered) block texts before chunking, so a secret is never split across two
chunks; one `funes.scan` call per batch (one Kingfisher process per batch), which the indexer
starts early (`start`) so Kingfisher scans while it reads on (commands/prepare.py `Flush`); a large
run hands the whole scan to a worker process (`scan.remote`), so that it runs on another core. Only the secret
value is replaced, never the line around it. Pure: the source transcripts are never touched.
Fails closed: a scanner error propagates as FunesError, never as unredacted text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from funes import scan

if TYPE_CHECKING:
    from funes.scan.remote import Pending, Scanner

MARKER = "[REDACTED:{kind}]"


def apply(text: str, findings: list[scan.Finding]) -> str:
    """`text` with each (sorted, non-overlapping) finding replaced by its marker."""
    if not findings:
        return text
    parts, pos = [], 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(MARKER.format(kind=f.kind))
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def redact_texts(
    texts: list[str], commands: list[str | None] | None = None, scanner: Scanner | None = None
) -> tuple[list[str], list[list[str]]]:
    """Redacted texts and, per text, the kind of each removed secret (in text order).
    A null text (None) passes through as None. `commands[i]` is the tool call whose output
    texts[i] is, if any (what a credential command prints is a secret by itself). `scanner`: a
    scan worker (`scan.remote`) that scans instead of this process, with the same findings."""
    pending = start(texts, commands, scanner)
    try:
        return pending.result()
    finally:
        pending.close()


def start(texts: list[str], commands: list[str | None] | None = None, scanner: Scanner | None = None) -> Redaction:
    """`redact_texts`, begun: the batch's Kingfisher scan runs from now on (`scan.start`), or the
    whole scan in the worker."""
    return Redaction(texts, commands, scanner)


class Redaction:
    """One batch's redaction in flight: `result()` is `redact_texts`' answer; `close()` on every path."""

    def __init__(self, texts: list[str], commands: list[str | None] | None, scanner: Scanner | None = None):
        self.texts = list(texts)
        begin = scan.start if scanner is None else scanner.start
        self.scan: scan.Scan | Pending = begin([t or "" for t in self.texts], commands=commands)

    def result(self) -> tuple[list[str], list[list[str]]]:
        findings = self.scan.result()
        return (
            [apply(t, fs) if t is not None else None for t, fs in zip(self.texts, findings)],
            [[f.kind for f in fs] for fs in findings],
        )

    def done(self) -> bool:
        return self.scan.done()

    @property
    def waited(self) -> float:
        return self.scan.waited

    @property
    def answered_at(self) -> float | None:
        """When the scan worker's answer was read, or None (not yet, or an in-process scan)."""
        return getattr(self.scan, "arrived_at", None)

    @property
    def compiled(self) -> float:
        """Of the scan worker's time on it, the seconds its Kingfisher waited for the rule compile."""
        return max(getattr(self.scan, "compiled", 0.0), 0.0)

    def close(self) -> None:
        self.scan.close()
