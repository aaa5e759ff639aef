"""funes's own secret rules: provider token shapes, private keys, URL passwords and shell
commands over the whole text, then the context rules (`context.py`) in secret-ish windows.

They cover what Kingfisher and detect-secrets miss or pin too narrowly: `hf_` with digits,
`sk-ant-`/`sk-proj-` of any length, truncated PEM blocks, `mysql -p...`, `sshpass -p ...`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from funes.scan import bare, manifests
from funes.scan.context import window_findings
from funes.scan.prefilter import literal_prefixes, may_match, present
from funes.scan.values import placeholder, token_ok
from funes.scan.windows import lower, word_windows

# Every token regex starts with a literal (Python's re then skips ahead at C speed; a leading \b
# would make it try every position): the word boundary before it is checked in _token_findings.
_T = "[A-Za-z0-9_\\-]"
TOKEN_RULES: list[tuple[str, str, str | None]] = [  # (kind, regex, digits/context required before)
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
    # Azure AD (Entra) client secrets: 3 chars, a digit, `Q~`, then 31-34 chars
    ("Azure", r"Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}[0-9]$"),
    ("Azure", r"SharedAccessKey=([A-Za-z0-9+/]{40,50}={0,2})", None),
]
_TOKEN_RE = [(k, re.compile(p), re.compile(b) if b else None, literal_prefixes(p)) for k, p, b in TOKEN_RULES]
_TOKEN_LITERALS = frozenset(x for *_, pre in _TOKEN_RE if pre for x in pre)
_AWS_SECRET = re.compile(
    r"(?i)aws.{0,20}?(?:secret|session).{0,20}?(?:=|:|=>|\s)\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\s→|]|\\[nrt]|[A-Za-z-]+: [^\n\\]*)+")  # `12→` Read prefixes
_PUTTY = re.compile(r"Private-Lines:\s*\d+\s*((?:[A-Za-z0-9+/=]+\s*){1,200})")

_URL_CRED = re.compile(r"://(?P<user>[^\s:/@'\"`<>()\[\]{}]{0,128}):(?P<v>[^\s@/'\"`<>]{1,256})@(?=[A-Za-z0-9\[])")
_SCHEME = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}$")
_SHELL_P = re.compile(  # sshpass -p X, redis-cli -a X, gh secret set NAME --body X
    r"\b(?:sshpass\s+-p|redis-cli\b[^\n]{0,100}?\s-a|secret set\s+\S+\s+(?:--body|-b)(?:=|\s+))"
    r"\s*[\"']?(?P<v>[^\s\"']{4,})"
)
_CURL_USER = re.compile(r"(?:-u|--user)(?:=|[ \t]+)[\"']?[^\s:\"']{1,64}:(?P<v>[^\s\"']{3,})")
_MYSQL_P = re.compile(r"(?:mysql|mysqldump|mariadb)\b[^\n]{0,200}?\s-p(?P<v>[^\s\"'-][^\s\"']{2,})")

# every finding of `findings` outside the secret-ish windows starts with a match of one of these
# (`gate.py`; the windows have their own conditions in `windows.NECESSARY_LOWERED`)
NECESSARY: list[re.Pattern | str] = [
    *(rx for _, rx, _, _ in _TOKEN_RE),
    _AWS_SECRET,
    _PEM_BEGIN,
    _PUTTY,
    _URL_CRED,
    _SHELL_P,
    _CURL_USER,
    _MYSQL_P,
]


def pem_spans(text: str) -> Iterable[tuple[int, int]]:
    """PEM private key blocks; a truncated one (no END line) up to where its body stops."""
    if "PRIVATE KEY" not in text:
        return
    for m in _PEM_BEGIN.finditer(text):
        # not past the text's end in a joined batch: a key's END line is in its own text
        stop = text.find("\x00", m.end(), m.end() + 20000)
        end = _PEM_END.search(text, m.end(), m.end() + 20000 if stop < 0 else stop)
        if end:
            yield m.start(), end.end()
            continue
        body = _PEM_BODY.match(text, m.end())
        if body and sum(c.isalnum() for c in body.group()) >= 40:
            yield m.start(), body.end()


def findings(
    text: str, low: str | None = None, lines: list | None = None, shapes: bool = True
) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every funes-rule secret in `text`; `low` is its `lower()` and
    `lines` its `word_windows`, when the caller has them already. `shapes=False`: all but
    `bare`'s (the caller runs `bare.findings` over the texts the gate picked for it)."""
    low = lower(text) if low is None else low
    out = _token_findings(text)
    if "aws" in low or "awſ" in low:  # (?i) `s` also matches the long s
        out.extend(("AWS", *m.span(1)) for m in _AWS_SECRET.finditer(text))
    out.extend(("PrivateKey", s, e) for s, e in pem_spans(text))
    out.extend(manifests.findings(text))
    if shapes:
        out.extend(bare.findings(text, low))
    if "Private-Lines" in text:
        out.extend(("PrivateKey", *m.span(1)) for m in _PUTTY.finditer(text))
    if "://" in text and "@" in text:
        for m in _URL_CRED.finditer(text):
            v = m.group("v")
            if _SCHEME.search(text, max(0, m.start() - 22), m.start()) and not placeholder(v):
                out.append(("URLPassword", *m.span("v")))
    if "-p" in text and ("mysql" in low or "mariadb" in low):
        out.extend(("Password", *m.span("v")) for m in _MYSQL_P.finditer(text) if not placeholder(m.group("v")))
    if "-u" in text:
        out.extend(("BasicAuth", *m.span("v")) for m in _CURL_USER.finditer(text) if not placeholder(m.group("v")))
    if "sshpass" in text or "redis-cli" in text or "secret set" in text:
        out.extend(("Password", *m.span("v")) for m in _SHELL_P.finditer(text) if not placeholder(m.group("v")))
    for ls, le in word_windows(text, low) if lines is None else lines:
        out.extend(window_findings(text, ls, le, low))
    return out


def _token_findings(text: str) -> list[tuple[str, int, int]]:
    """Provider tokens: each at a word start (or with its required context just before)."""
    out: list[tuple[str, int, int]] = []
    found = present(_TOKEN_LITERALS, text)
    for kind, rx, back, prefixes in _TOKEN_RE:
        if not may_match(prefixes, found):
            continue
        for m in rx.finditer(text):
            g = 1 if rx.groups else 0
            s = m.start(g)
            if back is not None:
                b = back.search(text, max(0, s - 40), s)
                if not b:
                    continue
                s = b.start()
            if (g or back or _word_start(text, s)) and token_ok(text[s : m.end(g)]):
                out.append((kind, s, m.end(g)))
    return out


def _word_start(text: str, s: int) -> bool:
    return s == 0 or not (text[s - 1].isalnum() or text[s - 1] == "_")
