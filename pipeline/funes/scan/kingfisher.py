"""Kingfisher (MongoDB, ~490 rules, Rust binary from the `kingfisher-bin` wheel) as an engine: one
subprocess per batch over stdin, validation and update checks off, so it never touches the network.

Every failure raises FunesError (fail closed), and its messages never echo scanned input. A run
counts only when Kingfisher's own audit record says the scan succeeded: exit 0 with no report is
a failure, not "no findings".

Kingfisher copies all of stdin (the unredacted batch) into `$TMPDIR/.tmpXXXX/stdin_input` for the
length of the scan, so each run gets a private temp dir (`scratch`) that is removed on every path
and swept at the next start when a killed run left it behind.

A run on a machine whose compiled-rule cache is cold first waits for the one run compiling the rules
(`rulecache`), in the job's own thread: the caller reads on meanwhile, as it does while Kingfisher scans.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from funes.errors import FunesError
from funes.scan import rulecache, scratch
from funes.scan.views import B64RUN, decode_b64
from funes.scan.windows import occurrences

_KINDS = {
    "aws": "AWS",
    "gcp": "GCP",
    "google": "Google",
    "azure": "Azure",
    "github": "GitHub",
    "gitlab": "GitLab",
    "slack": "Slack",
    "stripe": "Stripe",
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "huggingface": "HuggingFace",
    "npm": "npm",
    "pypi": "PyPI",
    "twilio": "Twilio",
    "sendgrid": "SendGrid",
    "telegram": "Telegram",
    "jwt": "JWT",
    "private-key": "PrivateKey",
    "generic-credential-uri": "URLPassword",
    "mongodb-connection-string": "URLPassword",
    "curl-auth-header": "Bearer",
    "curl-auth-user": "BasicAuth",
    "digitalocean": "DigitalOcean",
    "grokxai": "xAI",
    "xai": "xAI",
    "hcp": "HashiCorp",
    "hashicorp": "HashiCorp",
    "vault": "Vault",
    "kubernetes": "Kubernetes",
    "cloudflare": "Cloudflare",
    "discord": "Discord",
    "mailchimp": "Mailchimp",
    "shopify": "Shopify",
    "databricks": "Databricks",
    "datadog": "Datadog",
    "docker": "Docker",
    "heroku": "Heroku",
    "openrouter": "OpenRouter",
    "postman": "Postman",
    "sentry": "Sentry",
    "square": "Square",
}
_CONTAINERS = {"gcp-service-account": re.compile(r'"private_key(?:_id)?"\s*:\s*"((?:[^"\\]|\\.)+)"')}


def _kind(rule_id: str) -> str:
    """funes's kind for a Kingfisher rule id (`kingfisher.aws.2` -> `AWS`)."""
    name = re.sub(r"\.\d+$", "", rule_id.split(".", 1)[-1].split("/")[-1])
    for prefix in sorted(_KINDS, key=len, reverse=True):
        if name.startswith(prefix):
            return _KINDS[prefix]
    first = re.split(r"[-_]", name)[0]
    return (first[:1].upper() + first[1:]) if first else "Secret"


def binary() -> tuple[str | None, str]:
    """(path, "") when Kingfisher is expected; (None, why) when it is not installed or disabled."""
    env = os.environ.get("FUNES_KINGFISHER", "").strip()
    if env.lower() in ("off", "0", "none", "disabled"):
        return None, "disabled by FUNES_KINGFISHER"
    if env:
        return env, ""
    try:
        import kingfisher  # the kingfisher-bin wheel (an absolute import, not this module)

        return kingfisher.get_binary_path(), ""
    except (ImportError, OSError, AttributeError):
        pass
    for cand in (Path(sys.executable).with_name("kingfisher"), shutil.which("kingfisher")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return str(cand), ""
    return None, "not installed (pip install kingfisher-bin)"


@functools.lru_cache(maxsize=8)
def version(path: str) -> str:
    """The last word of `kingfisher --version`, or "unavailable: <why>"."""
    try:
        p = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"unavailable: cannot run {path} ({type(e).__name__})"
    words = p.stdout.split()
    return words[-1] if p.returncode == 0 and words else f"unavailable: {path} --version exit {p.returncode}"


def _env(tmp: Path) -> dict[str, str]:
    """The child's environment: its stdin spill goes to the private `tmp`; its compiled rules to
    the per-user cache (`rulecache`), so a changed $HOME (tests, hooks) does not compile them again."""
    env = rulecache.env()
    env.update(TMPDIR=str(tmp), TMP=str(tmp), TEMP=str(tmp))
    return env


_LONG_TOKEN = re.compile(r"[^\s'\"`]{12,}")
_WORD = re.compile(r"[^\s'\"`:,;()\[\]]{3,}")
_MASKS = re.compile(r"\[…\](?:[\s:,;]*\[…\])+")


def _scrub(message: str, scanned: str = "") -> str:
    """The first stderr line, with every long token and every word that occurs in the scanned
    input masked: a binary that echoes its input must not get it printed."""
    message = message.strip().splitlines()[0][:300] if message.strip() else ""
    message = _LONG_TOKEN.sub(lambda m: m.group() if m.group().isalpha() else "[…]", message)
    message = _WORD.sub(lambda m: "[…]" if m.group() in scanned else m.group(), message)
    return _MASKS.sub("[…]", message)


_HINT = "reinstall kingfisher-bin, or set FUNES_KINGFISHER=off to index without it"
_STOP_GRACE_S = 2.0
_INTERRUPTS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}


class Job:
    """One Kingfisher process over a whole batch (stdin), started at once by its thread (after any
    wait for the rule compile) and read when its findings are needed, so that the in-process
    engines run meanwhile."""

    def __init__(self, path: str, texts: list[str], timeout: float):
        self.timeout = timeout
        scanned = "\n".join(texts)
        try:  # the whole batch encoded once: most hold no lone surrogate, and then every text is kept as is
            data = scanned.encode("utf-8")
            self.safe = texts
        except UnicodeEncodeError:  # lone surrogates replaced (an ASCII text has none: its check is O(1))
            self.safe = [t if t.isascii() else t.encode("utf-8", "replace").decode("utf-8") for t in texts]
            scanned = "\n".join(self.safe)
            data = scanned.encode("utf-8")
        self.first_lines, line = [], 1
        for t in self.safe:
            self.first_lines.append(line)
            line += t.count("\n") + 1
        cmd = [path, "scan", "-", "--no-validate", "--no-update-check", "--format", "jsonl", "--quiet", "--no-dedup"]
        self.scanned = scanned
        self.proc: subprocess.Popen | None = None
        self.result: tuple[bytes, bytes] | None = None
        self.failure: FunesError | None = None  # it could not be started
        self.timed_out = False
        self.stopped = False  # funes stopped the child itself (timeout, close)
        self.closed = threading.Event()
        self.gate = threading.Lock()  # a child is started, or the job closed, never both
        # seconds the child waited for another run's rule compile (`rulecache`), and when that wait ended
        self.compile_wait, self.ready_at = 0.0, time.monotonic()
        self.tmp = scratch.make("kingfisher")
        try:
            # started by the thread: on a cold rule cache it first waits for the run compiling the
            # rules, and the caller (an indexing process reading on) must not wait with it
            self.thread = threading.Thread(target=self._run, args=(cmd, data), daemon=True)
            self.thread.start()
        except BaseException:  # an interrupt can land between any two steps: leave no child, no spill
            if getattr(self, "thread", None) is not None:
                self.close()
            scratch.remove(self.tmp)
            raise

    def _run(self, cmd: list[str], data: bytes) -> None:
        waited, hold = rulecache.before_run(cmd[0], self.closed, self.timeout)
        self.compile_wait, self.ready_at = waited, time.monotonic()
        try:
            with self.gate:
                if self.closed.is_set():
                    return
                try:
                    # its own session: a Ctrl-C reaches funes only, which then stops the child itself
                    self.proc = subprocess.Popen(
                        cmd,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        env=_env(self.tmp),
                        start_new_session=True,
                    )
                except OSError as e:
                    why = e.strerror or type(e).__name__
                    self.failure = FunesError(f"kingfisher could not be run ({why})", _HINT)
                    return
            self._communicate(data)
        finally:
            if hold is not None:  # this run compiled the rules: stamped when it ended well
                ok = self.proc is not None and not self.stopped and self.proc.returncode in (0, 200, 205)
                hold.release(ok)

    def _communicate(self, data: bytes) -> None:
        assert self.proc is not None
        try:
            self.result = self.proc.communicate(data, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self._stop()
            self.proc.communicate()
        except (OSError, ValueError):  # the process died while reading its input
            self._stop()
            self.result = (b"", b"")
            self.proc.wait()

    def _stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period: give the child a chance to clean up."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.stopped = True
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait()

    def _signal(self, sig: int) -> None:
        """`sig` to the child's whole process group (it leads one): a wrapper's children too."""
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            self.proc.send_signal(sig)

    def close(self) -> None:
        """Stop the child if it still runs (or never start it) and remove its private temp dir
        (every path ends here)."""
        try:
            self.closed.set()  # a wait for another run's compile ends at its next poll
            with self.gate:
                pass  # a child being started is started: it is stopped below
            self._stop()
            self.thread.join()
        finally:
            scratch.remove(self.tmp)

    def done(self) -> bool:
        """Whether the child has exited and its output is read (`findings` then does not wait)."""
        return not self.thread.is_alive()

    def findings(self) -> list[tuple[int, str, int, int]]:
        """(text index, kind, start, end) of every finding; FunesError on any scanner failure."""
        self.thread.join()
        if self.failure is not None:
            raise self.failure
        if self.timed_out:
            raise FunesError(f"kingfisher timed out after {self.timeout}s", _HINT)
        out: list[tuple[int, str, int, int]] = []
        for rec in self._records():
            f, rule_id = rec["finding"], rec["rule"]["id"]
            i = bisect.bisect_right(self.first_lines, f["line"]) - 1
            kind = _kind(rule_id)
            spans, line = _locate(self.safe[i], f, f["line"] - self.first_lines[i], rule_id)
            hits = [(i, s, e) for s, e in spans]
            if line is not None:  # not on its line: the snippet wherever it is, else the line
                snip = f["snippet"]
                if snip:
                    hits += [(j, k, k + len(snip)) for j, t in enumerate(self.safe) for k in occurrences(t, snip)]
                if not hits:
                    hits = [(i, *line)]  # fail closed
            hits += [(i, s, e) for s, e in _dependents(self.safe[i], f)]
            out.extend((j, kind, s, e) for j, s, e in hits)
        return out

    def _check_exit(self, rc: int | None, stderr: bytes) -> None:
        if rc is not None and rc < 0 and -rc in _INTERRUPTS and not self.stopped:
            raise KeyboardInterrupt  # a Ctrl-C or a hook timeout, not a broken install
        if rc is not None and rc < 0:
            name = signal.Signals(-rc).name if -rc in signal.valid_signals() else f"signal {-rc}"
            raise FunesError(f"kingfisher was killed by {name}", "if memory is short, index fewer files at once")
        if rc not in (0, 200, 205):
            why = _scrub(stderr.decode("utf-8", "replace"), self.scanned)
            raise FunesError(f"kingfisher failed (exit {rc}){': ' + why if why else ''}", _HINT)

    def _records(self) -> list[dict]:
        stdout, stderr = self.result or (b"", b"")
        rc = self.proc.returncode if self.proc is not None else None
        self._check_exit(rc, stderr)
        records, audited = [], False
        for n, line in enumerate(stdout.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise FunesError(f"kingfisher output record {n} is not JSON", _HINT) from None
            if not isinstance(rec, dict):
                raise FunesError(f"kingfisher output record {n} is not an object", _HINT)
            audit = rec.get("audit")
            if audit is not None:
                summary = audit.get("summary") if isinstance(audit, dict) else None
                if not isinstance(summary, dict) or summary.get("scan_failed") or summary.get("scan_partial"):
                    raise FunesError("kingfisher could not scan the whole batch", _HINT)
                if not isinstance(summary.get("scan_succeeded"), int) or summary["scan_succeeded"] < 1:
                    raise FunesError("kingfisher reported no completed scan", _HINT)
                audited = True
            if "rule" in rec:
                f, rule = rec.get("finding"), rec.get("rule")
                if (
                    not isinstance(f, dict)
                    or not isinstance(rule, dict)
                    or not isinstance(rule.get("id"), str)
                    or not isinstance(f.get("line"), int)
                    or f["line"] < 1
                    or not isinstance(f.get("snippet"), str)
                ):
                    raise FunesError(f"kingfisher finding record {n} is malformed", _HINT)
                records.append(rec)
        if not audited:  # an update that changed the CLI, a wrapper, a stub: ~490 rules would be off
            raise FunesError(f"kingfisher (exit {rc}) gave no scan report", _HINT)
        return records


def _locate(text: str, f: dict, line_no: int, rule_id: str) -> tuple[list[tuple[int, int]], tuple | None]:
    """Spans of one finding in the text it was attributed to, and, when the snippet is not on
    its line (decoded from base64, or reshaped), that line's span as the fail-closed fallback."""
    ls = 0
    for _ in range(line_no):
        nl = text.find("\n", ls)
        if nl < 0:
            break
        ls = nl + 1
    le = text.find("\n", ls)
    le = len(text) if le < 0 else le
    col = f.get("column_start") if isinstance(f.get("column_start"), int) else 0
    col = len(text[ls:le].encode("utf-8")[:col].decode("utf-8", "ignore"))
    snippet = f["snippet"]
    spans, line = [], None
    if snippet and text.startswith(snippet, ls + col):
        spans.append((ls + col, ls + col + len(snippet)))
    elif snippet and (k := text.find(snippet, ls)) >= 0:
        spans.append((k, k + len(snippet)))
    else:  # decoded (base64...) or reshaped: cover the encoded run holding it
        for m in B64RUN.finditer(text, ls, le):
            decoded = decode_b64(m.group())
            if decoded and snippet and snippet in decoded:
                spans.append(m.span())
        line = (ls, le) if le - ls <= 4000 else (ls + col, min(le, ls + col + 400))
    container = _CONTAINERS.get(rule_id.split(".", 1)[-1])
    if container and len(spans) == 1:
        inner = [m.span(1) for m in container.finditer(text, *spans[0])]
        spans = inner or spans
    return spans, line


def _dependents(text: str, f: dict) -> list[tuple[int, int]]:
    """Values Kingfisher matched alongside (the AWS secret key next to its key id)."""
    return [
        (k, k + len(v))
        for v in (f.get("dependent_captures") or {}).values()
        if isinstance(v, str) and len(v) >= 8
        for k in occurrences(text, v)
    ]
