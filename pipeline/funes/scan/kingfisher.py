"""Kingfisher (MongoDB, ~490 rules, Rust binary from the `kingfisher-bin` wheel) as an engine: one
subprocess per batch over stdin, validation and update checks off, so it never touches the network.

Every failure raises FunesError (fail closed), and its messages never echo scanned input.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from funes.errors import FunesError
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
def _env() -> dict[str, str]:
    """Pin the compiled-rule cache to a private per-user dir, so a changed $HOME (tests, hooks)
    does not pay the ~9 s rule compilation again."""
    env = dict(os.environ)
    if "KF_RULE_CACHE_DIR" not in env and hasattr(os, "getuid"):
        d = Path(tempfile.gettempdir()) / f"funes-kingfisher-{os.getuid()}"
        try:
            d.mkdir(mode=0o700, exist_ok=True)
            st = d.lstat()
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
                env["KF_RULE_CACHE_DIR"] = str(d)
        except OSError:
            pass
    return env


_LONG_TOKEN = re.compile(r"[^\s'\"`]{12,}")


def _scrub(message: str) -> str:
    """The first stderr line, with every long token masked: never echo scanned input."""
    message = message.strip().splitlines()[0][:300] if message.strip() else ""
    return _LONG_TOKEN.sub(lambda m: m.group() if m.group().isalpha() else "[…]", message)


_HINT = "reinstall kingfisher-bin, or set FUNES_KINGFISHER=off to index without it"


class Job:
    """One Kingfisher process over a whole batch (stdin), started at once and read when its
    findings are needed, so that the in-process engines run meanwhile."""

    def __init__(self, path: str, texts: list[str], timeout: float):
        self.timeout = timeout
        self.safe = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # lone surrogates
        self.first_lines, line = [], 1
        for t in self.safe:
            self.first_lines.append(line)
            line += t.count("\n") + 1
        cmd = [path, "scan", "-", "--no-validate", "--no-update-check", "--format", "jsonl", "--quiet", "--no-dedup"]
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()
            )
        except OSError as e:
            raise FunesError(f"kingfisher could not be run ({e.strerror or type(e).__name__})", _HINT) from None
        self.result: tuple[bytes, bytes] | None = None
        self.timed_out = False
        data = "\n".join(self.safe).encode("utf-8")
        self.thread = threading.Thread(target=self._communicate, args=(data,), daemon=True)
        self.thread.start()

    def _communicate(self, data: bytes) -> None:
        try:
            self.result = self.proc.communicate(data, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self.proc.kill()
            self.proc.communicate()
        except (OSError, ValueError):  # the process died while reading its input
            self.proc.kill()
            self.result = (b"", b"")
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.thread.join()

    def findings(self) -> list[tuple[int, str, int, int]]:
        """(text index, kind, start, end) of every finding; FunesError on any scanner failure."""
        self.thread.join()
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

    def _records(self) -> list[dict]:
        stdout, stderr = self.result or (b"", b"")
        if self.proc.returncode not in (0, 200, 205):
            why = _scrub(stderr.decode("utf-8", "replace"))
            raise FunesError(f"kingfisher failed (exit {self.proc.returncode}){': ' + why if why else ''}", _HINT)
        records = []
        for n, line in enumerate(stdout.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise FunesError(f"kingfisher output record {n} is not JSON", _HINT) from None
            if not isinstance(rec, dict):
                raise FunesError(f"kingfisher output record {n} is not an object", _HINT)
            summary = rec.get("audit", {}).get("summary", {})
            if summary.get("scan_failed") or summary.get("scan_partial"):
                raise FunesError("kingfisher could not scan the whole batch", _HINT)
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
