"""Secret scanners: texts in, exact secret spans out (Kingfisher ∪ detect-secrets ∪ funes rules).

Every text is scanned as several *views* that all map back to exact spans of the raw text: the
raw text itself, its JSON-unescaped form (two levels, so a key with literal `\\n` or a password
inside an escaped tool input is seen as plain text) and the decoded form of long base64 runs (a
hit there covers the whole run). Three engines scan every view:

- Kingfisher (MongoDB, ~490 rules, Rust binary from the `kingfisher-bin` wheel), run ONCE per
  batch over stdin with validation and update checks off — it never touches the network;
- detect-secrets (Yelp) plugins called directly on strings (no baseline, no settings file);
- funes rules below: provider token shapes the others miss or pin too narrowly (`hf_` with
  digits, `sk-ant-`/`sk-proj-` of any length...), PEM/OpenSSH private key blocks (also truncated
  ones), passwords in URLs, `.env`/export/JSON/YAML/code assignments to secret-ish names,
  CLI flags, auth headers, secret query parameters.

Spans of all engines are unioned and overlapping spans merged. Kingfisher is *expected* when its
binary is found: if it then fails, `find` raises FunesError (fail closed). When it is absent the
other two engines still run and `engines()` says Kingfisher is unavailable. Messages never carry
text from the scanned input.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import itertools
import json
import math
import os
import re
import shutil
import stat
import string
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from funes.errors import FunesError

KINGFISHER_CALLS = 0  # subprocess runs so far (tests assert one per batch)
KINGFISHER_TIMEOUT_S = 600
ENGINE_NAMES = ("kingfisher", "detect-secrets", "funes-rules")


@dataclass(frozen=True)
class Finding:
    """A secret at text[start:end], named by a short stable kind (`AWS`, `PrivateKey`...)."""

    kind: str
    start: int
    end: int


# ---------------------------------------------------------------------------------------------
# views: raw text, JSON-unescaped text, decoded base64 runs — each maps spans back to the raw text

_ESC = re.compile(r'\\(?:u(?![dD][89a-fA-F])[0-9a-fA-F]{4}|["\\/bfnrt])')  # no surrogate halves
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_B64RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/=_-])")  # greedy: whole runs
_B64_MAX = 1 << 20


class _View:
    """A string derived from a raw text, with a map from its spans to spans of the raw text."""

    __slots__ = ("text", "parent", "run", "escaped", "_segs")

    def __init__(self, text, parent=None, run=None, escaped=False):
        self.text, self.parent, self.run, self.escaped, self._segs = text, parent, run, escaped, None

    def to_raw(self, start: int, end: int) -> tuple[int, int]:
        if self.run is not None:  # decoded base64: any hit covers the whole run
            start, end = self.run
        elif self.escaped:
            start, end = self._unmap(start, False), self._unmap(end - 1, True)
        return self.parent.to_raw(start, end) if self.parent else (start, end)

    def _unmap(self, v: int, end: bool) -> int:
        if self._segs is None:
            self._segs = _escape_segments(self.parent.text)
        vstarts, rstarts, rends = self._segs
        i = bisect.bisect_right(vstarts, v) - 1
        if rends[i] < 0:  # literal segment: offsets shift
            pos = rstarts[i] + (v - vstarts[i])
            return pos + 1 if end else pos
        return rends[i] if end else rstarts[i]  # an escape sequence maps as a whole


def _unescape_char(m: re.Match) -> str:
    s = m[0]
    return _SIMPLE[s[1]] if s[1] != "u" else chr(int(s[2:], 16))


def _unescape(view: _View) -> _View | None:
    """The JSON-unescaped view; its offset map is built only if a finding lands in it."""
    if "\\" not in view.text:
        return None
    text = _ESC.sub(_unescape_char, view.text)
    return _View(text, view, escaped=True) if len(text) != len(view.text) else None


def _escape_segments(text: str) -> tuple[list[int], list[int], list[int]]:
    """(view start, raw start, raw end or -1 for literal runs) of each segment of the view."""
    vstarts, rstarts, rends = [], [], []
    pos = vpos = 0
    for m in _ESC.finditer(text):
        if m.start() > pos:
            vstarts.append(vpos), rstarts.append(pos), rends.append(-1)
            vpos += m.start() - pos
        vstarts.append(vpos), rstarts.append(m.start()), rends.append(m.end())
        vpos += 1
        pos = m.end()
    vstarts.append(vpos), rstarts.append(pos), rends.append(-1)
    return vstarts, rstarts, rends


def _decode_b64(run: str) -> str | None:
    body = run.rstrip("=")
    if len(body) > _B64_MAX or len(set(body)) < 16:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
        out = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in out)
    return out if out and printable >= 0.95 * len(out) and any(c.isalpha() for c in out) else None


def _views(text: str) -> list[_View]:
    """The raw text, its decoded base64 runs, and the JSON-unescaped form (two levels) of each."""
    raw = _View(text)
    views = [raw]
    for m in _B64RUN.finditer(text):
        decoded = _decode_b64(m.group())
        if decoded:
            views.append(_View(decoded, raw, run=m.span()))
    for v in list(views):
        u = _unescape(v)
        if u is not None:
            views.append(u)
            u2 = _unescape(u)
            if u2 is not None:
                views.append(u2)
    return views


# ---------------------------------------------------------------------------------------------
# value heuristics shared by the rules (placeholders, code references, randomness)

_PLACEHOLDER_WORDS = set(
    """password passwd pass pwd secret secrets token tokens key apikey api_key none null nil
    undefined true false yes no on off changeme change_me changeit example sample test testing
    dummy fake placeholder redacted hidden masked required optional string str int integer bool
    boolean number float any object bytes text value default empty todo tbd fixme secretstr
    unknown admin root user username guest demo foo bar baz foobar qwerty letmein mysecret
    mypassword yourpassword secretkey secret_key password123 hunter hidden_value env""".split()
)
_PLACEHOLDER = re.compile(
    r"(?i)x{4,}|\*{3,}|\.{3}|…|•{2}|<[^>]*>|\{\{|\}\}|\$\{|\$\(|%\(|%[sd]\b|\byour[\s_-]|"
    r"[_-]here\b|change[_-]?me|placeholder|redacted|example|dummy|replace[_-]?(?:me|with|this)|"
    r"\btodo\b|^your|^my[_-]|(?:^|[_.-])(?:test|fake|dummy|sample|mock|example|demo)(?:$|[_.-])|"
    r"^<|>$|^\[|\]$"
)
_CODE_REF = re.compile(
    r"(?:process\.env|os\.environ|os\.getenv|getenv|env\(|ENV\[|import\.meta|Deno\.env|System\."
    r"getenv|secrets\.|vars\.|self\.|this\.|config\.|settings\.|props\.|ctx\.|args\.|opts\.|"
    r"options\.|params\.|request\.|req\.|cfg\.|conf\.|app\.config|Environment\.)"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|->)[A-Za-z_][A-Za-z0-9_]*)*(?:\(\)?)?")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|(?:~|\.{1,2})/[\w.@+-]+|[A-Za-z]:[\\/][^\s]*")
_FILE = re.compile(r"[\w.\-/\\~]+\.(?:json|pem|key|txt|env|ya?ml|toml|ini|cfg|conf|p12|pfx|crt|cer|gpg|asc|pub)", re.I)
_UPPER_SNAKE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # a constant or variable name
_MARKER = re.compile(r"\[REDACTED:[A-Za-z0-9_.+-]{1,40}\]")


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s))) if n else 0.0


def _placeholder(v: str) -> bool:
    low = v.lower()
    return (
        len(v) < 4
        or low in _PLACEHOLDER_WORDS
        or "[REDACTED" in v
        or bool(_PLACEHOLDER.search(v))
        or len(set(v)) <= 2
        or v[0] in "$%@&*:\\"
        or bool(_UPPER_SNAKE.fullmatch(v))
        or bool(_CODE_REF.match(v))
        or bool(_PATH.fullmatch(v) or _FILE.fullmatch(v))
        or "(" in v
        or v.isdigit()
        or low.startswith(("http://", "https://", "file:"))
    )


def _random_enough(v: str, min_len: int = 16) -> bool:
    """Looks machine-generated: long, letters and digits mixed, high per-char entropy."""
    return (
        len(v) >= min_len
        and any(c.isdigit() for c in v)
        and any(c.isalpha() for c in v)
        and _entropy(v) >= 3.2
    )


_DUMMY_TOKEN = re.compile(
    r"(?i)x{5,}|\*{3,}|\.{3}|[<>{}$]|example|placeholder|redacted|your[_-]|dummy|fake|sample|0{8}|"
    r"12345678|abcdefgh"
)


def _token_ok(v: str) -> bool:
    """A prefixed provider token: not a placeholder and not a low-entropy dummy body."""
    body = re.sub(r"^[A-Za-z0-9]{1,12}[_.-]", "", v, count=1)
    return not _DUMMY_TOKEN.search(v) and len(set(body)) >= 8 and _entropy(body) >= 3.0


# ---------------------------------------------------------------------------------------------
# secret-ish names (`DB_PASSWORD`, `apiKey`, `client_secret`, but not `token_count`, `max_tokens`)

_SECRET_WORDS = {"password", "passwd", "pwd", "pass", "passphrase", "passcode", "secret",
                 "token", "apikey", "credential", "credentials", "creds", "auth", "privatekey",
                 "dsn"}
_QUALIFIED_WORDS = {"pat", "sig"}  # `GITHUB_PAT`, `url_sig`, but not `pat = re.compile(...)`
_KEY_QUALIFIERS = {"api", "access", "secret", "private", "client", "auth", "signing", "encryption",
                   "master", "service", "account", "app", "consumer", "license", "subscription",
                   "admin", "session", "webhook", "deploy", "storage", "shared", "hmac", "jwt",
                   "encrypt", "crypt", "cipher", "aes", "openai", "anthropic", "stripe", "github"}
_NOT_SECRET_LAST = set(
    """id ids uuid name names type types kind url uri urls endpoint path file filename files dir
    directory len length size count limit limits max min num number expires expiry expiration exp
    ttl timeout header headers field fields env var vars variable prefix suffix hash hashed format
    mode policy pattern regex enabled required label hint message msg error errors text
    placeholder description desc help title ref refs source provider manager store class input
    button form status state usage used index idx at date time timestamp version location scope
    scopes method algorithm alg strategy rotation validation valid reset changed updated created
    generator helper prompt config settings option options length stdin file env reference
    argument arguments arg args param params parameter parameters namespace signature
    visible visibility hidden show toggle strength policy rules icon style color dialog modal
    page screen view component handler callback service route routes schema validator test tests
    spec mock""".split()
)
_NOT_SECRET_FIRST = {"max", "min", "num", "is", "has", "use", "enable", "enabled", "show", "hide",
                     "create", "delete", "update", "get", "list", "fetch", "load", "save", "read",
                     "write", "remove", "rotate", "generate", "validate", "verify", "check", "handle",
                     "on", "parse", "render", "refresh", "revoke",
                     "should", "allow", "require", "forgot", "count", "total", "input", "output",
                     "cache", "prompt", "completion", "reasoning"}
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _secret_name(name: str) -> str | None:
    """'Password' or 'Secret' when `name` names a credential, else None."""
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words or words[-1] in _NOT_SECRET_LAST or words[0] in _NOT_SECRET_FIRST:
        return None
    for i, w in enumerate(words):
        if w in ("password", "passwd", "pwd", "pass", "passphrase", "passcode"):
            return "Password"
        if w in _SECRET_WORDS or (w == "key" and i > 0 and words[i - 1] in _KEY_QUALIFIERS) or (
            w in _QUALIFIED_WORDS and i > 0
        ):
            return "Secret"
    joined = "".join(words)
    if joined.endswith(("apikey", "secretkey", "privatekey", "accesskey", "authkey")):
        return "Secret"
    return None


# ---------------------------------------------------------------------------------------------
# funes rules. Every token regex starts with a literal (Python's re then skips ahead at C speed;
# a leading \b would make it try every position): the word boundary before it is checked here.

_T = "[A-Za-z0-9_\\-]"
_TOKEN_RULES: list[tuple[str, str, str | None]] = [  # (kind, regex, digits/context required before)
    ("GitHub", r"gh[pousr]_[A-Za-z0-9]{30,255}\b", None),
    ("GitHub", r"github_pat_[A-Za-z0-9_]{40,255}\b", None),
    ("GitLab", r"gl(?:pat|dt|rt|ptt|ft|soat|cbt|oas|imt|agent)-" + _T + "{20,}", None),
    ("Slack", r"xox[abposer]-(?:[0-9]{6,}-)*[A-Za-z0-9-]{10,}", None),
    ("Slack", r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", None),
    ("Slack", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{20,}", None),
    ("Stripe", r"sk_(?:live|test|prod)_[A-Za-z0-9]{16,}", None),
    ("Stripe", r"rk_(?:live|test|prod)_[A-Za-z0-9]{16,}", None),
    ("Stripe", r"whsec_[A-Za-z0-9+/=]{24,}", None),
    ("Anthropic", r"sk-ant-[a-z]{2,8}[0-9]{0,3}-" + _T + "{20,}", None),
    ("OpenAI", r"sk-(?:proj|svcacct|admin|None)-" + _T + "{20,}", None),
    ("OpenAI", r"T3BlbkFJ[A-Za-z0-9_\-]{16,}", r"sk-[A-Za-z0-9_\-]{16,}$"),
    ("APIKey", r"sk-[A-Za-z0-9]{32,}\b", None),
    ("HuggingFace", r"hf_[A-Za-z0-9]{30,}\b", None),
    ("HuggingFace", r"api_org_[A-Za-z0-9]{30,}\b", None),
    ("npm", r"npm_[A-Za-z0-9]{36}\b", None),
    ("PyPI", r"pypi-" + _T + "{50,}", None),
    ("SendGrid", r"SG\." + _T + r"{16,32}\." + _T + "{16,64}", None),
    ("Twilio", r"SK[0-9a-fA-F]{32}\b", None),
    ("Telegram", r":AA" + _T + r"{33}(?![A-Za-z0-9_-])", r"(?<![0-9])[0-9]{8,10}$"),
    ("AWS", r"AKIA[A-Z2-7]{16}\b", None),
    ("AWS", r"ASIA[A-Z2-7]{16}\b", None),
    ("AWS", r"ABIA[A-Z2-7]{16}\b", None),
    ("AWS", r"ACCA[A-Z2-7]{16}\b", None),
    ("Google", r"AIza" + _T + r"{35}\b", None),
    ("Google", r"ya29\." + _T + "{20,}", None),
    ("Google", r"GOCSPX-" + _T + "{20,}", None),
    ("Google", r"1//0" + _T + "{30,}", None),
    ("JWT", r"eyJ" + _T + r"{8,}\.eyJ" + _T + r"{8,}\." + _T + "*", None),
    ("DigitalOcean", r"do[por]_v1_[a-f0-9]{64}\b", None),
    ("Shopify", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b", None),
    ("Vault", r"hv[sbr]\." + _T + "{24,}", None),
    ("Databricks", r"dapi[a-f0-9]{32}(?:-\d)?\b", None),
    ("Linear", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}\b", None),
    ("Notion", r"ntn_[A-Za-z0-9]{40,}\b", None),
    ("Supabase", r"sbp_[a-f0-9]{40}\b", None),
    ("Groq", r"gsk_[A-Za-z0-9]{48,}\b", None),
    ("xAI", r"xai-[A-Za-z0-9]{60,}\b", None),
    ("Replicate", r"r8_[A-Za-z0-9]{37,}\b", None),
    ("Perplexity", r"pplx-[A-Za-z0-9]{40,}\b", None),
    ("Tavily", r"tvly-[A-Za-z0-9\-]{20,}\b", None),
    ("Docker", r"dckr_pat_" + _T + "{20,}", None),
    ("Atlassian", r"ATATT3[A-Za-z0-9_\-=]{100,}", None),
    ("Figma", r"figd_" + _T + "{40,}", None),
    ("Grafana", r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}\b", None),
    ("Grafana", r"glc_[A-Za-z0-9+/]{32,}={0,2}", None),
    ("Age", r"AGE-SECRET-KEY-1[0-9A-Z]{58}\b", None),
    ("Sentry", r"sntry[su]_[A-Za-z0-9+/=_\-]{40,}", None),
    ("Doppler", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", None),
    ("Mailgun", r"key-[0-9a-f]{32}\b", None),
    ("Square", r"sq0(?:atp|csp)-" + _T + "{22,}", None),
    ("Azure", r"AccountKey=([A-Za-z0-9+/]{40,90}={0,2})", None),
    ("Azure", r"SharedAccessKey=([A-Za-z0-9+/]{40,50}={0,2})", None),
]
_TOKEN_RE = [(k, re.compile(p), re.compile(b) if b else None) for k, p, b in _TOKEN_RULES]
_AWS_SECRET = re.compile(r"(?i)aws.{0,20}?(?:secret|session).{0,20}?(?:=|:|=>|\s)\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\s→|]|\\[nrt]|[A-Za-z-]+: [^\n\\]*)+")  # `12→` Read prefixes
_PUTTY = re.compile(r"Private-Lines:\s*\d+\s*((?:[A-Za-z0-9+/=]+\s*){1,200})")

_URL_CRED = re.compile(r"://(?P<user>[^\s:/@'\"`<>()\[\]{}]{0,128}):(?P<v>[^\s@/'\"`<>]{1,256})@(?=[A-Za-z0-9\[])")
_SCHEME = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}$")
_QUERY = re.compile(r"[?&;](?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,40})=(?P<v>[^&#;\s\"'<>`\\]{4,})")
_QUERY_SECRETS = {"sig", "signature", "x-amz-signature", "x-amz-security-token", "x-goog-signature",
                  "x-goog-credential", "code_verifier"}
_BEARER = re.compile(r"(?i)\b(?P<scheme>bearer|token)\s+(?P<v>[A-Za-z0-9._~+/\-]{16,}=*)")
_AUTH_HEADER = re.compile(
    r"(?i)\b(?:proxy-)?authorization\s*[\"']?\s*[:=]\s*[\"']?(?P<scheme>basic|digest|bearer|token|"
    r"apikey|api-key|key|sso-key|sharedkey)?\s*(?P<v>[A-Za-z0-9._~+/\-:]{8,}=*)"
    r"|\b(?P<hname>x-[a-z0-9-]*(?:key|token|secret|auth)[a-z0-9-]*|api-?key|private-token|"
    r"x-auth|apikey)\s*[\"']?\s*:\s*[\"']?(?P<hv>[A-Za-z0-9._~+/\-]{12,}=*)"
)
_CLI_FLAG = re.compile(
    r"(?<![\w-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]{1,40})(?:=|[ \t]+)"
    r"(?P<v>\"(?:[^\"\\\n]|\\.){4,}\"|'[^'\n]{4,}'|[^\s\"'`|;&<>\\]{4,})"
)
_XML = re.compile(r"<(?P<name>[A-Za-z_][\w.\-:]{0,63})(?:\s[^<>]{0,200})?>(?P<v>[^<>\n]{4,200})</(?P=name)>")
_XML_ATTR = re.compile(r"(?i)(?:key|name)\s*=\s*[\"'](?P<name>[^\"'<>]{1,64})[\"']\s+value\s*=\s*[\"'](?P<v>[^\"'<>]{4,})[\"']")
_CALL_PAIR = re.compile(  # define('DB_PASSWORD', 'x'), os.Setenv("API_KEY", "x")
    r"\(\s*(?P<q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P=q)\s*,\s*"
    r"(?P<v>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')"
)
_CONN_PW = re.compile(r"(?i)(?:password|pwd)\s*=\s*(?P<v>[^;\"'\s][^;\"'\n]{0,200}?)\s*(?=;|[\"']|$)")
_NETRC = re.compile(r"machine\s+\S+\s+login\s+\S+\s+password\s+(?P<v>\S+)")
_PROSE = re.compile(  # `the password for the staging db is X`, `Azure key: X`, `token was X`
    r"(?i)\b(?:password|passwd|passphrase|pwd|token|secret|(?:api|access|secret|private|license|"
    r"storage|account|auth|client|signing|encryption|master|service|azure|aws|gcp|openai|anthropic|"
    r"stripe|github|gitlab|slack)[ _-]?key)\b(?:(?:[ \t][\w-]+){0,6}?\s+(?:is|was)\s+|:[ \t]*)"
    r"[\"'`]?(?P<v>[^\s\"'`\\]{6,})"
)
_SHELL_P = re.compile(  # sshpass -p X, redis-cli -a X, gh secret set NAME --body X
    r"\b(?:sshpass\s+-p|redis-cli\b[^\n]{0,100}?\s-a|secret set\s+\S+\s+(?:--body|-b)(?:=|\s+))"
    r"\s*[\"']?(?P<v>[^\s\"']{4,})"
)
_CURL_USER = re.compile(r"(?:-u|--user)(?:=|[ \t]+)[\"']?[^\s:\"']{1,64}:(?P<v>[^\s\"']{3,})")
_MYSQL_P = re.compile(r"(?:mysql|mysqldump|mariadb)\b[^\n]{0,200}?\s-p(?P<v>[^\s\"'-][^\s\"']{2,})")

# assignments: quoted keys (JSON, dicts, YAML) and bare keys (env, export, code, YAML, .properties)
_VALUE = r"(?P<v>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|[^\s\"'`,;)}\]\\]+)"
_QUOTED_KEY = re.compile(
    r"(?P<q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P=q)\]?\s*(?P<op>:=|=>|={1,3}|:)\s*" + _VALUE
)
_BARE_KEY = re.compile(
    r"(?<![A-Za-z0-9_$.\-])(?P<export>(?:export|set|setx|declare|local|readonly|ENV)\s+|\$env:)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P<sp>[ \t]*)(?P<op>:=|=>|={1,3}|:|\+=)[ \t]*" + _VALUE
)
_KEYWORDS = ("pass", "pw", "secret", "token", "key", "cred", "auth", "sig", "dsn", "bearer",
             "pat", "contrase", "basic")
_TYPE_WORDS = {"str", "string", "int", "bool", "bytes", "none", "optional", "any", "object",
               "secretstr", "number", "text", "char", "varchar", "uuid", "boolean"}
_ENVNAME = re.compile(r"[A-Z][A-Z0-9_]*")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _assignment_kind(m: re.Match, quoted_key: bool) -> str | None:
    name, val, op = m.group("name"), m.group("v"), m.group("op")
    kind = _secret_name(name.rsplit(".", 1)[-1])
    if kind is None:
        return None
    quoted = val[:1] in "\"'`"
    v = val[1:-1] if quoted and len(val) >= 2 and val[-1] == val[0] else val
    if _placeholder(v) or v.lower() in _TYPE_WORDS or _spaced(v, kind):
        return None
    envish = not quoted_key and (m.group("export") or (_ENVNAME.fullmatch(name) and (op == "=" or "_" in name)))
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    if not quoted_key and op == "=" and not m.group("sp") and not m.string[line_start : m.start()].strip():
        return "EnvAssignment" if envish else kind  # `password=x` opening a line: ini/.env/.properties
    if envish and op in ("=", ":"):
        if op == "=" and m.group("sp") and not m.group("export"):  # `NAME = value`: code
            return kind if (quoted or _random_enough(v)) else None
        return "EnvAssignment"
    if quoted:
        return kind
    if op == ":":  # YAML / prose `password: s3cr3t!` vs a type annotation `token: str`
        if len(v) < 6 or "[" in v or "(" in v:
            return None
        return kind if any(c.isdigit() for c in v) or not _IDENT.fullmatch(v) else None
    # `password = value` / kwargs `password=value`: an unquoted identifier is a variable, but
    # `--from-literal=password=S3cret!` is not
    literal = _random_enough(v) or (not _IDENT.fullmatch(v) and _password_like(v))
    return kind if literal and not _CODE_REF.match(v) else None


def _spaced(v: str, kind: str) -> bool:
    """Prose or a command, not a credential: keys and tokens hold no spaces; a password may
    hold one (not two, not a path)."""
    return any(c.isspace() for c in v) and (kind != "Password" or v.count(" ") >= 2 or "/" in v)


def _value_span(m: re.Match, group: str = "v") -> tuple[int, int]:
    s, e = m.span(group)
    val = m.group(group)
    if len(val) >= 2 and val[0] in "\"'`" and val[-1] == val[0]:
        return s + 1, e - 1
    return s, e


def _pem_spans(text: str) -> Iterable[tuple[int, int]]:
    if "PRIVATE KEY" not in text:
        return
    for m in _PEM_BEGIN.finditer(text):
        end = _PEM_END.search(text, m.end(), m.end() + 20000)
        if end:
            yield m.start(), end.end()
            continue
        body = _PEM_BODY.match(text, m.end())
        if body and sum(c.isalnum() for c in body.group()) >= 40:
            yield m.start(), body.end()


def _word_start(text: str, s: int) -> bool:
    return s == 0 or not (text[s - 1].isalnum() or text[s - 1] == "_")


_KW_ASSIGN = re.compile(r"[a-z0-9_.\-]{0,40}(?:[\"'\]]?\s{0,3}(?:=|:)|>|[\"']\s{0,3},)")  # `=` `:` `>` `",`
_KW_FLAG = re.compile(r"(?:^|[\s\"'])--?[a-z0-9_\-]{0,40}$")  # `--api-token`, `-password`
_KW_SCHEMES = ("bearer", "token", "basic")
_KW_PROSE_WORDS = ("pass", "pw", "secret", "token", "key")
_KW_PROSE = re.compile(r"[^\n]{0,60}?\s(?:is|was)\s|word\s+\S{4}")  # `password for the db is x`, .netrc


def _windows(text: str, low: str, words: Iterable[str] | None = None,
                   before: int = 120, after: int = 1000) -> list[tuple[int, int]]:
    """Merged windows (within one line, `before`/`after` chars around each hit) around the
    occurrences of `words`; by default, of secret-ish words used as a name (followed by `=`/`:`,
    or a `--flag`) or as an auth scheme: all the slower rules ever look at."""
    hits = []
    for kw in _KEYWORDS if words is None else words:
        i = low.find(kw)
        while i >= 0:
            j = i + len(kw)
            if words is not None or _KW_ASSIGN.match(low, j) or (
                low.rfind("-", max(0, i - 44), i) >= 0 and _KW_FLAG.search(low, max(0, i - 44), i)
            ) or (
                kw in _KW_SCHEMES and low[j : j + 1] in (" ", "\t")
            ) or (kw in _KW_PROSE_WORDS and _KW_PROSE.match(low, j)):
                hits.append(i)
            i = low.find(kw, j)
    return _near(text, hits, before, after)


def _near(text: str, hits: list[int], before: int = 120, after: int = 1000) -> list[tuple[int, int]]:
    """Merged windows around `hits`, each cut at the line ends."""
    out: list[list[int]] = []
    for i in sorted(hits):
        if out and i < out[-1][1]:
            continue
        ws = max(text.rfind("\n", max(0, i - before), i) + 1, i - before, 0)
        we = text.find("\n", i, i + after)
        we = min(len(text), i + after) if we < 0 else we
        if out and ws <= out[-1][1]:
            out[-1][1] = max(out[-1][1], we)
        else:
            out.append([ws, we])
    return [(ws, we) for ws, we in out]


def _lower(text: str) -> str:
    """Lower-cased text with the same offsets (str.lower can change the length; rarely)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _rule_findings(text: str, low: str | None = None, lines: list | None = None) -> list[tuple[str, int, int]]:
    low = _lower(text) if low is None else low
    out: list[tuple[str, int, int]] = []
    for kind, rx, back in _TOKEN_RE:
        for m in rx.finditer(text):
            g = 1 if rx.groups else 0
            s = m.start(g)
            if back is not None:
                b = back.search(text, max(0, s - 40), s)
                if not b:
                    continue
                s = b.start()
            if (g or back or _word_start(text, s)) and _token_ok(text[s : m.end(g)]):
                out.append((kind, s, m.end(g)))
    if "aws" in low:
        out.extend(("AWS", *m.span(1)) for m in _AWS_SECRET.finditer(text))
    out.extend(("PrivateKey", s, e) for s, e in _pem_spans(text))
    if "Private-Lines" in text:
        out.extend(("PrivateKey", *m.span(1)) for m in _PUTTY.finditer(text))
    if "://" in text and "@" in text:
        for m in _URL_CRED.finditer(text):
            v = m.group("v")
            if _SCHEME.search(text, max(0, m.start() - 22), m.start()) and not _placeholder(v):
                out.append(("URLPassword", *m.span("v")))
    if " -p" in text and ("mysql" in low or "mariadb" in low):
        out.extend(("Password", *m.span("v")) for m in _MYSQL_P.finditer(text) if not _placeholder(m.group("v")))
    if "-u" in text:
        out.extend(("BasicAuth", *m.span("v")) for m in _CURL_USER.finditer(text) if not _placeholder(m.group("v")))
    if "sshpass" in text or "redis-cli" in text or "secret set" in text:
        out.extend(("Password", *m.span("v")) for m in _SHELL_P.finditer(text) if not _placeholder(m.group("v")))
    for ls, le in _windows(text, low) if lines is None else lines:
        out.extend(_keyword_findings(text, ls, le, low))
    return out


def _keyword_findings(text: str, ls: int, le: int, low: str) -> list[tuple[str, int, int]]:
    """The context rules, on one secret-ish window text[ls:le]."""
    return (_header_findings(text, ls, le) + _flag_findings(text, ls, le)
            + _assignment_findings(text, ls, le) + _config_findings(text, ls, le, low))


def _header_findings(text: str, ls: int, le: int) -> list[tuple[str, int, int]]:
    """`Bearer <token>`, `Authorization: Basic <b64>`, `X-API-Key: <key>`."""
    out = []
    for m in _BEARER.finditer(text, ls, le):
        v = m.group("v")
        if not _placeholder(v) and (_random_enough(v) or (len(v) >= 20 and _entropy(v) >= 3.5)):
            out.append(("Bearer", *m.span("v")))
    for m in _AUTH_HEADER.finditer(text, ls, le):
        g = "v" if m.group("v") else "hv"
        v = m.group(g)
        basic = (m.group("scheme") or "").lower() == "basic"
        if v and not _placeholder(v) and (len(v) >= 16 or any(c.isdigit() for c in v) or (basic and _is_basic(v))):
            out.append(("BasicAuth" if basic else "AuthHeader", *m.span(g)))
    return out


def _flag_findings(text: str, ls: int, le: int) -> list[tuple[str, int, int]]:
    """`?access_token=<v>` query parameters and `--password <v>` CLI flags."""
    out = []
    for m in _QUERY.finditer(text, ls, le):
        v = m.group("v")
        named = _secret_name(m.group("name")) or m.group("name").lower() in _QUERY_SECRETS
        if named and not _placeholder(v) and (_random_enough(v, 8) or len(v) >= 20 or named == "Password"):
            out.append(("URLToken", *m.span("v")))
    for m in _CLI_FLAG.finditer(text, ls, le):
        kind = _secret_name(m.group("name"))
        s, e = _value_span(m)
        v = text[s:e]
        if kind and not _placeholder(v) and v[0] != "-" and (len(v) >= 6 or any(c.isdigit() for c in v)):
            out.append((kind, s, e))
    return out


def _assignment_findings(text: str, ls: int, le: int) -> list[tuple[str, int, int]]:
    """Values assigned to secret-ish names: env/export lines, JSON/YAML/dict keys, code, XML,
    `define('DB_PASSWORD', 'x')`-style calls."""
    out = []
    for rx, quoted_key in ((_QUOTED_KEY, True), (_BARE_KEY, False)):
        for m in rx.finditer(text, ls, le):
            kind = _assignment_kind(m, quoted_key)
            if kind:
                out.append((kind, *_value_span(m)))
    for rx, gate in ((_XML, "</"), (_XML_ATTR, "value"), (_CALL_PAIR, "(")):
        if text.find(gate, ls, le) < 0:
            continue
        for m in rx.finditer(text, ls, le):
            kind = _secret_name(m.group("name"))
            s, e = _value_span(m)
            if kind and not _placeholder(text[s:e]) and not _spaced(text[s:e], kind):
                out.append((kind, s, e))
    return out


def _config_findings(text: str, ls: int, le: int, low: str) -> list[tuple[str, int, int]]:
    """`...;Password=x;` connection strings, .netrc lines, `the password is x` in prose."""
    out = []
    for rx, gates in ((_CONN_PW, (";",)), (_NETRC, ("machine",)), (_PROSE, (" is ", " was ", ":"))):
        if all(low.find(g, ls, le) < 0 for g in gates):
            continue
        for m in rx.finditer(text, ls, le):
            v = m.group("v")
            if rx is _CONN_PW and ";" not in text[max(ls, m.start() - 200) : m.end() + 2]:
                continue
            if not _placeholder(v) and (rx is not _PROSE or _password_like(v)):
                named = _secret_name(m.group(0).split()[0]) if rx is _PROSE else "Password"
                out.append((named or "Secret", *m.span("v")))
    return out


def _password_like(v: str) -> bool:
    """A free-text value that looks typed as a password: digits or symbols, not code or a path."""
    v = v.rstrip(".,;:!?)")
    return (len(v) >= 6 and v[0] not in "/#" and (any(c.isdigit() for c in v) or not v.isalnum()) and not _CODEISH.search(v)
            and not _DOTTED.fullmatch(v) and not _placeholder(v))


_CODEISH = re.compile(r"[\[\](){}<>]|\+\+|--|\|\||&&|\?\.|->|::")  # args[++i], a || b


_DOTTED = re.compile(r"[\w?!]+(?:(?:\.|\?\.|::|->)[\w?!]+)+")  # options?.apiKey, a.b.c


def _is_basic(v: str) -> bool:
    """`Authorization: Basic <base64 of user:password>`."""
    try:
        return ":" in base64.b64decode(v + "=" * (-len(v) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# detect-secrets (in-process)

_DS_KIND = {
    "AWS Access Key": "AWS", "Artifactory Credentials": "Artifactory",
    "Azure Storage Account access key": "Azure", "Basic Auth Credentials": "URLPassword",
    "Cloudant Credentials": "Cloudant", "Discord Bot Token": "Discord", "GitHub Token": "GitHub",
    "GitLab Token": "GitLab", "IBM Cloud IAM Key": "IBM", "IBM COS HMAC Credentials": "IBM",
    "JSON Web Token": "JWT", "Mailchimp Access Key": "Mailchimp", "NPM tokens": "npm",
    "OpenAI Token": "OpenAI", "Private Key": "PrivateKey", "PyPI upload token": "PyPI",
    "SendGrid API Key": "SendGrid", "Slack Token": "Slack", "SoftLayer Credentials": "SoftLayer",
    "Square OAuth Secret": "Square", "Stripe Access Key": "Stripe",
    "Telegram Bot Token": "Telegram", "Twilio API Key": "Twilio", "Secret Keyword": "Secret",
}
# IPPublicDetector (addresses are not secrets) and the high-entropy string plugins (git SHAs,
# ids and hashes flood transcripts; see SECURITY.md for the measurement) are not used.
_DS_SKIP = {"IPPublicDetector", "HexHighEntropyString", "Base64HighEntropyString", "KeywordDetector"}


class _InWindows:
    """Gate: run the plugin in the secret-ish windows where this (lowered) pattern occurs."""

    def __init__(self, pattern: str):
        self.rx = re.compile(pattern)


# Every match of these plugins lies within one line, so each runs only around a literal its
# regexes require (ASCII-lowered), or, for the keyword-assignment plugins, in the secret-ish
# windows where a necessary pattern occurs; the cheap ungated ones run on the whole batch.
_DS_GATE = {
    "AWSKeyDetector": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "ArtifactoryDetector": re.compile(r"AKC|AP[0-9A-F]"),
    "AzureStorageKeyDetector": ("accountkey=",), "BasicAuthDetector": ("://",),
    "CloudantDetector": _InWindows(r"cl(?:oudant|ou)?[_-]?(?:api)?(?:key|pw|pass|token)|cloudant\.com"),
    "IbmCloudIamDetector": _InWindows(r"(?:key|pwd|pass|token)[\"'\]]? *(?:=|:|=>| ) *[\"']?[a-z0-9_\-]{44}"),
    "IbmCosHmacDetector": _InWindows(r"secret[-_]?(?:access)?[-_]?key"),
    "SoftlayerDetector": _InWindows(r"(?:softlayer|sl)[_-]?(?:api)?(?:key|pw|pass|token)|softlayer\.com"),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-"), "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": re.compile(r"-us[0-9]"), "NpmDetector": (":_authtoken",), "OpenAIDetector": ("t3blbkfj",),
    "PrivateKeyDetector": None, "PypiTokenDetector": ("pypi-",),
    "SendGridDetector": ("sg.",), "SlackDetector": ("xox", "hooks.slack"), "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",), "TelegramBotTokenDetector": re.compile(r":[0-9A-Za-z_-]{35}"),
}


@functools.lru_cache(maxsize=1)
def _ds_plugins():
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import DENYLIST, KeywordDetector

    plugins = [
        (_DS_KIND.get(t, re.sub(r"\W", "", t.title())), cls(), _DS_GATE.get(cls.__name__))
        for t, cls in sorted(get_mapping_from_secret_type_to_class().items())
        if cls.__name__ not in _DS_SKIP
    ]
    trigger = re.compile("|".join(DENYLIST), re.IGNORECASE)
    return plugins, KeywordDetector(), trigger


def _ds_filtered(secret: str, line: str) -> bool:
    from detect_secrets.filters import heuristic as h

    return (
        h.is_sequential_string(secret) or h.is_potential_uuid(secret) or h.is_templated_secret(secret)
        or h.is_prefixed_with_dollar_sign(secret) or h.is_indirect_reference(line)
        or h.is_likely_id_string(secret, line) or h.is_not_alphanumeric_string(secret)
    )


def _ds_findings(text: str, low: str | None = None, lines: list | None = None) -> list[tuple[str, int, int]]:
    low = _lower(text) if low is None else low
    plugins, keyword, trigger = _ds_plugins()
    out: list[tuple[str, int, int]] = []
    lines = _windows(text, low) if lines is None else lines
    for kind, plugin, gate in plugins:
        if gate is None:
            out.extend((kind, a, b) for a, b in _ds_values(text, kind, plugin))
            continue
        if isinstance(gate, _InWindows):  # keyword-assignment plugins: secret-ish windows only
            windows = [(a, b) for a, b in lines if gate.rx.search(low, a, b)]
        elif isinstance(gate, re.Pattern):  # case-sensitive necessary pattern
            windows = _near(text, [m.start() for m in gate.finditer(text)])
        else:
            windows = _windows(text, low, gate)
        for ls, le in windows:
            out.extend((kind, ls + a, ls + b) for a, b in _ds_values(text[ls:le], kind, plugin))
    for ls, le in lines:
        line = text[ls:le]
        if trigger.search(line):
            for value in set(keyword.analyze_string(line)):
                if not value or _placeholder(value) or _spaced(value, "Secret") or _ds_filtered(value, line):
                    continue
                out.extend(("Secret", ls + s, ls + s + len(value)) for s in _occurrences(line, value)
                           if _named_secret(line, s))
    return out


_NAME_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)[\"'\]]*\s*(?::=|=>|={1,3}|:)\s*[\"'`]?$")


def _named_secret(line: str, s: int) -> bool:
    """False when the value at `s` is assigned to a name that is not a credential (`SecretName`)."""
    m = _NAME_BEFORE.search(line, max(0, s - 100), s)
    return m is None or _secret_name(m.group(1).rsplit(".", 1)[-1]) is not None


def _ds_values(text: str, kind: str, plugin) -> Iterable[tuple[int, int]]:
    """Spans of one plugin's matches. Its own `analyze_string` returns `findall` values, which
    for a pattern like `(ghp|gho)_...` is just the prefix: so the regexes are run here, taking
    the longest capturing group when it holds the secret (>= 8 chars), else the whole match."""
    if kind == "PrivateKey":  # the plugin names the header; the finding is the whole block
        if any(rx.search(text) for rx in plugin.denylist):
            yield from _pem_spans(text)
        return
    if "analyze_string" in type(plugin).__dict__:  # validating plugins (JWT): trust their values
        for value in set(plugin.analyze_string(text)):
            if len(value) >= 8 and not _dummy(value):
                yield from ((s, s + len(value)) for s in _occurrences(text, value))
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
            if len(v) >= 6 and not (_placeholder(v) if grouped else _dummy(v)):
                yield s, e


def _dummy(v: str) -> bool:
    """A token-shaped value that is a placeholder (`ghp_xxxx...`, `<token>`, `sk-...`)."""
    return bool(_DUMMY_TOKEN.search(v)) or len(set(v)) <= 4


def _occurrences(text: str, value: str) -> Iterable[int]:
    i = text.find(value)
    while i >= 0:
        yield i
        i = text.find(value, i + len(value))


# ---------------------------------------------------------------------------------------------
# Kingfisher (subprocess, once per batch, stdin, validation and update checks off)

_KF_KINDS = {
    "aws": "AWS", "gcp": "GCP", "google": "Google", "azure": "Azure", "github": "GitHub",
    "gitlab": "GitLab", "slack": "Slack", "stripe": "Stripe", "openai": "OpenAI",
    "anthropic": "Anthropic", "huggingface": "HuggingFace", "npm": "npm", "pypi": "PyPI",
    "twilio": "Twilio", "sendgrid": "SendGrid", "telegram": "Telegram", "jwt": "JWT",
    "private-key": "PrivateKey", "generic-credential-uri": "URLPassword",
    "mongodb-connection-string": "URLPassword", "curl-auth-header": "Bearer",
    "curl-auth-user": "BasicAuth", "digitalocean": "DigitalOcean", "grokxai": "xAI", "xai": "xAI",
    "hcp": "HashiCorp", "hashicorp": "HashiCorp", "vault": "Vault", "kubernetes": "Kubernetes",
    "cloudflare": "Cloudflare", "discord": "Discord", "mailchimp": "Mailchimp", "shopify": "Shopify",
    "databricks": "Databricks", "datadog": "Datadog", "docker": "Docker", "heroku": "Heroku",
    "openrouter": "OpenRouter", "postman": "Postman", "sentry": "Sentry", "square": "Square",
}
_KF_CONTAINERS = {"gcp-service-account": re.compile(r'"private_key(?:_id)?"\s*:\s*"((?:[^"\\]|\\.)+)"')}


def _kf_kind(rule_id: str) -> str:
    name = re.sub(r"\.\d+$", "", rule_id.split(".", 1)[-1].split("/")[-1])
    for prefix in sorted(_KF_KINDS, key=len, reverse=True):
        if name.startswith(prefix):
            return _KF_KINDS[prefix]
    first = re.split(r"[-_]", name)[0]
    return (first[:1].upper() + first[1:]) if first else "Secret"


def _kingfisher_binary() -> tuple[str | None, str]:
    """(path, "") when Kingfisher is expected; (None, why) when it is not installed or disabled."""
    env = os.environ.get("FUNES_KINGFISHER", "").strip()
    if env.lower() in ("off", "0", "none", "disabled"):
        return None, "disabled by FUNES_KINGFISHER"
    if env:
        return env, ""
    try:
        import kingfisher  # the kingfisher-bin wheel

        return kingfisher.get_binary_path(), ""
    except (ImportError, OSError, AttributeError):
        pass
    for cand in (Path(sys.executable).with_name("kingfisher"), shutil.which("kingfisher")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return str(cand), ""
    return None, "not installed (pip install kingfisher-bin)"


@functools.lru_cache(maxsize=8)
def _kf_version(path: str) -> str:
    try:
        p = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"unavailable: cannot run {path} ({type(e).__name__})"
    words = p.stdout.split()
    return words[-1] if p.returncode == 0 and words else f"unavailable: {path} --version exit {p.returncode}"


def _kf_env() -> dict[str, str]:
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


_KF_HINT = "reinstall kingfisher-bin, or set FUNES_KINGFISHER=off to index without it"


class _KingfisherJob:
    """One Kingfisher process over a whole batch (stdin), started at once and read when its
    findings are needed, so that the in-process engines run meanwhile."""

    def __init__(self, path: str, texts: list[str]):
        global KINGFISHER_CALLS
        self.safe = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # lone surrogates
        self.first_lines, line = [], 1
        for t in self.safe:
            self.first_lines.append(line)
            line += t.count("\n") + 1
        cmd = [path, "scan", "-", "--no-validate", "--no-update-check", "--format", "jsonl",
               "--quiet", "--no-dedup"]
        KINGFISHER_CALLS += 1
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=_kf_env())
        except OSError as e:
            raise FunesError(f"kingfisher could not be run ({e.strerror or type(e).__name__})", _KF_HINT) from None
        self.result: tuple[bytes, bytes] | None = None
        self.timed_out = False
        data = "\n".join(self.safe).encode("utf-8")
        self.thread = threading.Thread(target=self._communicate, args=(data,), daemon=True)
        self.thread.start()

    def _communicate(self, data: bytes) -> None:
        try:
            self.result = self.proc.communicate(data, timeout=KINGFISHER_TIMEOUT_S)
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
            raise FunesError(f"kingfisher timed out after {KINGFISHER_TIMEOUT_S}s", _KF_HINT)
        out = []
        for rec in self._records():
            f, rule_id = rec["finding"], rec["rule"]["id"]
            i = bisect.bisect_right(self.first_lines, f["line"]) - 1
            kind = _kf_kind(rule_id)
            spans, line = _kf_locate(self.safe[i], f, f["line"] - self.first_lines[i], rule_id)
            hits = [(i, s, e) for s, e in spans]
            if line is not None:  # not on its line: the snippet wherever it is, else the line
                snip = f["snippet"]
                if snip:
                    hits += [(j, k, k + len(snip)) for j, t in enumerate(self.safe) for k in _occurrences(t, snip)]
                if not hits:
                    hits = [(i, *line)]  # fail closed
            hits += [(i, s, e) for s, e in _kf_dependents(self.safe[i], f)]
            out.extend((j, kind, s, e) for j, s, e in hits)
        return out

    def _records(self) -> list[dict]:
        stdout, stderr = self.result or (b"", b"")
        if self.proc.returncode not in (0, 200, 205):
            why = _scrub(stderr.decode("utf-8", "replace"))
            raise FunesError(f"kingfisher failed (exit {self.proc.returncode}){': ' + why if why else ''}", _KF_HINT)
        records = []
        for n, line in enumerate(stdout.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise FunesError(f"kingfisher output record {n} is not JSON", _KF_HINT) from None
            if not isinstance(rec, dict):
                raise FunesError(f"kingfisher output record {n} is not an object", _KF_HINT)
            summary = rec.get("audit", {}).get("summary", {})
            if summary.get("scan_failed") or summary.get("scan_partial"):
                raise FunesError("kingfisher could not scan the whole batch", _KF_HINT)
            if "rule" in rec:
                f, rule = rec.get("finding"), rec.get("rule")
                ok = isinstance(f, dict) and isinstance(rule, dict) and isinstance(rule.get("id"), str)
                if not ok or not isinstance(f.get("line"), int) or f["line"] < 1 or not isinstance(f.get("snippet"), str):
                    raise FunesError(f"kingfisher finding record {n} is malformed", _KF_HINT)
                records.append(rec)
        return records


def _kf_locate(text: str, f: dict, line_no: int, rule_id: str) -> tuple[list[tuple[int, int]], tuple | None]:
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
        for m in _B64RUN.finditer(text, ls, le):
            decoded = _decode_b64(m.group())
            if decoded and snippet and snippet in decoded:
                spans.append(m.span())
        line = (ls, le) if le - ls <= 4000 else (ls + col, min(le, ls + col + 400))
    container = _KF_CONTAINERS.get(rule_id.split(".", 1)[-1])
    if container and len(spans) == 1:
        inner = [m.span(1) for m in container.finditer(text, *spans[0])]
        spans = inner or spans
    return spans, line


def _kf_dependents(text: str, f: dict) -> list[tuple[int, int]]:
    """Values Kingfisher matched alongside (the AWS secret key next to its key id)."""
    return [(k, k + len(v)) for v in (f.get("dependent_captures") or {}).values()
            if isinstance(v, str) and len(v) >= 8 for k in _occurrences(text, v)]


# ---------------------------------------------------------------------------------------------
# public API

_GENERIC_RANK = {"URLPassword": 1, "JWT": 1, "PrivateKey": 0, "Bearer": 2, "BasicAuth": 2,
                 "AuthHeader": 2, "URLToken": 3, "EnvAssignment": 3, "Password": 3, "Secret": 3,
                 "APIKey": 2}


def engines() -> dict[str, str]:
    """Engine name -> version, or "unavailable: <why>" (status shows it)."""
    path, why = _kingfisher_binary()
    out = {"kingfisher": _kf_version(path) if path else f"unavailable: {why}"}
    try:
        import detect_secrets

        out["detect-secrets"] = getattr(detect_secrets, "__version__", None) or _dist_version("detect-secrets")
    except ImportError:
        out["detect-secrets"] = "unavailable: not installed"
    out["funes-rules"] = f"builtin ({len(_TOKEN_RULES)} token patterns + context rules)"
    return out


def _dist_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def find(texts: list[str], *, only: Iterable[str] | None = None) -> list[list[Finding]]:
    """Secret spans per text: all engines (or `only` those named) over every view, merged."""
    use = set(only) if only is not None else set(ENGINE_NAMES)
    if use - set(ENGINE_NAMES):
        raise ValueError(f"unknown scanner engine(s): {sorted(use - set(ENGINE_NAMES))}")
    flat = [(i, v) for i, t in enumerate(texts) for v in _views(t)]
    hits: list[list[tuple[str, int, int]]] = [[] for _ in texts]

    def add(j: int, kind: str, s: int, e: int) -> None:
        i, v = flat[j]
        hits[i].append((kind, *v.to_raw(s, e)))

    path = _kingfisher_binary()[0] if "kingfisher" in use else None
    job = _KingfisherJob(path, [v.text for _, v in flat]) if path and any(t.strip() for t in texts) else None
    try:
        rules, ds = "funes-rules" in use, "detect-secrets" in use and _have_detect_secrets()
        if flat and (rules or ds):
            # the in-process engines scan the whole batch as one string: no per-text overhead
            big = _SEP.join(v.text for _, v in flat)
            starts = list(itertools.accumulate((len(v.text) + len(_SEP) for _, v in flat[:-1]), initial=0))
            low = _lower(big)
            lines = _windows(big, low)
            found = (_rule_findings(big, low, lines) if rules else []) + (_ds_findings(big, low, lines) if ds else [])
            for kind, s, e in found:
                j = bisect.bisect_right(starts, s) - 1
                end = min(e, starts[j] + len(flat[j][1].text))
                if end > s:
                    add(j, kind, s - starts[j], end - starts[j])
        for j, kind, s, e in job.findings() if job else ():
            add(j, kind, s, e)
    finally:
        if job:
            job.close()
    return [_merge(t, h) for t, h in zip(texts, hits)]


_SEP = "\n\x00\n"  # no rule matches across it (no token charset holds NUL; lines end at it)


@functools.lru_cache(maxsize=1)
def _have_detect_secrets() -> bool:
    try:
        import detect_secrets  # noqa: F401

        return True
    except ImportError:
        return False


def _merge(text: str, hits: list[tuple[str, int, int]]) -> list[Finding]:
    markers = [m.span() for m in _MARKER.finditer(text)] if "[REDACTED:" in text else []
    spans = []
    for kind, s, e in hits:
        s, e = max(0, s), min(len(text), e)
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s and not any(a < e and s < b for a, b in markers):  # markers are never re-redacted
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
