"""detect-secrets (Yelp) as an engine: its plugins called in-process on the batch text, with no
baseline and no settings file; the package is imported only when a batch is scanned."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from funes.scan.names import secret_name
from funes.scan.prefilter import present
from funes.scan.rules import pem_spans
from funes.scan.values import dummy, placeholder, spaced
from funes.scan.windows import hit_windows, lower, occurrences, word_windows

_KINDS = {
    "AWS Access Key": "AWS",
    "Artifactory Credentials": "Artifactory",
    "Azure Storage Account access key": "Azure",
    "Basic Auth Credentials": "URLPassword",
    "Cloudant Credentials": "Cloudant",
    "Discord Bot Token": "Discord",
    "GitHub Token": "GitHub",
    "GitLab Token": "GitLab",
    "IBM Cloud IAM Key": "IBM",
    "IBM COS HMAC Credentials": "IBM",
    "JSON Web Token": "JWT",
    "Mailchimp Access Key": "Mailchimp",
    "NPM tokens": "npm",
    "OpenAI Token": "OpenAI",
    "Private Key": "PrivateKey",
    "PyPI upload token": "PyPI",
    "SendGrid API Key": "SendGrid",
    "Slack Token": "Slack",
    "SoftLayer Credentials": "SoftLayer",
    "Square OAuth Secret": "Square",
    "Stripe Access Key": "Stripe",
    "Telegram Bot Token": "Telegram",
    "Twilio API Key": "Twilio",
    "Secret Keyword": "Secret",
}
# IPPublicDetector (addresses are not secrets) and the high-entropy string plugins (git SHAs,
# ids and hashes flood transcripts; see SECURITY.md for the measurement) are not used.
_SKIP = {"IPPublicDetector", "HexHighEntropyString", "Base64HighEntropyString", "KeywordDetector"}


class _InWindows:
    """Gate: run the plugin in the secret-ish windows where this (lowered) pattern occurs."""

    def __init__(self, pattern: str):
        self.rx = re.compile(pattern)


# Every match of these plugins lies within one line, so each runs only around a literal its
# regexes require (ASCII-lowered), or, for the keyword-assignment plugins, in the secret-ish
# windows where a necessary pattern occurs; the cheap ungated ones run on the whole batch.
_GATES = {
    "AWSKeyDetector": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "ArtifactoryDetector": re.compile(r"AKC|AP[0-9A-F]"),
    "AzureStorageKeyDetector": ("accountkey=",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": _InWindows(r"cl(?:oudant|ou)?[_-]?(?:api)?(?:key|pw|pass|token)|cloudant\.com"),
    "IbmCloudIamDetector": _InWindows(r"(?:key|pwd|pass|token)[\"'\]]? *(?:=|:|=>| ) *[\"']?[a-z0-9_\-]{44}"),
    "IbmCosHmacDetector": _InWindows(r"secret[-_]?(?:access)?[-_]?key"),
    "SoftlayerDetector": _InWindows(r"(?:softlayer|sl)[_-]?(?:api)?(?:key|pw|pass|token)|softlayer\.com"),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-"),
    "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": re.compile(r"-us[0-9]"),
    "NpmDetector": (":_authtoken",),
    "OpenAIDetector": ("t3blbkfj",),
    "PrivateKeyDetector": None,
    "PypiTokenDetector": ("pypi-",),
    "SendGridDetector": ("sg.",),
    "SlackDetector": ("xox", "hooks.slack"),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "TelegramBotTokenDetector": re.compile(r":[0-9A-Za-z_-]{35}"),
}

_GATE_WORDS = frozenset(w for g in _GATES.values() if isinstance(g, tuple) for w in g)


@functools.lru_cache(maxsize=1)
def _plugins():
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import DENYLIST, KeywordDetector

    plugins = [
        (_KINDS.get(t, re.sub(r"\W", "", t.title())), cls(), _GATES.get(cls.__name__))
        for t, cls in sorted(get_mapping_from_secret_type_to_class().items())
        if cls.__name__ not in _SKIP
    ]
    trigger = re.compile("|".join(DENYLIST), re.IGNORECASE)
    return plugins, KeywordDetector(), trigger


def necessary() -> list[re.Pattern | str]:
    """Patterns every finding's text matches (`gate.py`): the plugins' own regexes. The private
    key plugin reports `pem_spans` (the funes rules' PEM pattern); the keyword-assignment plugins
    and the KeywordDetector look only in the secret-ish windows (`windows.NECESSARY_LOWERED`)."""
    plugins, _, _ = _plugins()
    return [
        rx
        for kind, plugin, gate in plugins
        if kind != "PrivateKey" and not isinstance(gate, _InWindows)
        for rx in plugin.denylist
    ]


def _filtered(secret: str, line: str) -> bool:
    from detect_secrets.filters import heuristic as h

    return (
        h.is_sequential_string(secret)
        or h.is_potential_uuid(secret)
        or h.is_templated_secret(secret)
        or h.is_prefixed_with_dollar_sign(secret)
        or h.is_indirect_reference(line)
        or h.is_likely_id_string(secret, line)
        or h.is_not_alphanumeric_string(secret)
    )


def findings(text: str, low: str | None = None, lines: list | None = None) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every detect-secrets finding in `text`; `low` is its `lower()` and
    `lines` its `word_windows`, when the caller has them already."""
    low = lower(text) if low is None else low
    plugins, keyword, trigger = _plugins()
    out: list[tuple[str, int, int]] = []
    lines = word_windows(text, low) if lines is None else lines
    # one pass for which gate literals occur at all (a word that does not occur opens no window)
    found = present(_GATE_WORDS, low)
    for kind, plugin, gate in plugins:
        if gate is None:
            out.extend((kind, a, b) for a, b in _values(text, kind, plugin))
            continue
        if isinstance(gate, _InWindows):  # keyword-assignment plugins: secret-ish windows only
            windows = [(a, b) for a, b in lines if gate.rx.search(low, a, b)]
        elif isinstance(gate, re.Pattern):  # case-sensitive necessary pattern
            windows = hit_windows(text, [m.start() for m in gate.finditer(text)])
        else:
            words = [w for w in gate if w in found]
            windows = word_windows(text, low, words) if words else []
        for ls, le in windows:
            out.extend((kind, ls + a, ls + b) for a, b in _values(text[ls:le], kind, plugin))
    out.extend(_keyword_findings(text, lines, keyword, trigger))
    return out


def _keyword_findings(text: str, lines: list, keyword, trigger: re.Pattern) -> list[tuple[str, int, int]]:
    """The KeywordDetector's values in the secret-ish windows, less its false positives."""
    out: list[tuple[str, int, int]] = []
    for ls, le in lines:
        line = text[ls:le]
        if trigger.search(line):
            for value in set(keyword.analyze_string(line)):
                if not value or placeholder(value) or spaced(value, "Secret") or _filtered(value, line):
                    continue
                out.extend(
                    ("Secret", ls + s, ls + s + len(value)) for s in occurrences(line, value) if _named_secret(line, s)
                )
    return out


_NAME_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)[\"'\]]*\s*(?::=|=>|={1,3}|:)\s*[\"'`]?$")


def _named_secret(line: str, s: int) -> bool:
    """False when the value at `s` is assigned to a name that is not a credential (`SecretName`)."""
    m = _NAME_BEFORE.search(line, max(0, s - 100), s)
    return m is None or secret_name(m.group(1).rsplit(".", 1)[-1]) is not None


def _values(text: str, kind: str, plugin) -> Iterable[tuple[int, int]]:
    """Spans of one plugin's matches. Its own `analyze_string` returns `findall` values, which
    for a pattern like `(ghp|gho)_...` is just the prefix: so the regexes are run here, taking
    the longest capturing group when it holds the secret (>= 8 chars), else the whole match."""
    if kind == "PrivateKey":  # the plugin names the header; the finding is the whole block
        if any(rx.search(text) for rx in plugin.denylist):
            yield from pem_spans(text)
        return
    if "analyze_string" in type(plugin).__dict__:  # validating plugins (JWT): trust their values
        for value in set(plugin.analyze_string(text)):
            if len(value) >= 8 and not dummy(value):
                yield from ((s, s + len(value)) for s in occurrences(text, value))
        return
    for rx in plugin.denylist:
        for m in rx.finditer(text):
            g = max(range(1, (rx.groups or 0) + 1), key=lambda i: len(m.group(i) or ""), default=0)
            grouped = g and len(m.group(g) or "") >= 8
            s, e = m.span(g) if grouped else m.span()
            while s < e and text[s] in " \t\r\n\"'=:":
                s += 1
            while e > s and text[e - 1] in " \t\r\n\"'":
                e -= 1
            v = text[s:e]
            if len(v) >= 6 and not (placeholder(v) if grouped else dummy(v)):
                yield s, e


@functools.lru_cache(maxsize=1)
def available() -> bool:
    try:
        import detect_secrets  # noqa: F401

        return True
    except ImportError:
        return False


def version() -> str:
    """The installed detect-secrets version, or "unavailable: not installed"."""
    try:
        import detect_secrets
    except ImportError:
        return "unavailable: not installed"
    from importlib import metadata

    try:
        return getattr(detect_secrets, "__version__", None) or metadata.version("detect-secrets")
    except metadata.PackageNotFoundError:
        return "unknown"
