"""Value heuristics shared by the rules: is a candidate value a placeholder, or random enough?

A secret-shaped value is dropped when it is a placeholder (`<token>`, `changeme`, `${VAR}`), a
code reference (`process.env.X`, `self.key`), a path or a name; kept when it looks
machine-generated or typed as a password.
"""

from __future__ import annotations

import math
import re

_PLACEHOLDER_WORDS = {
    "password",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "secrets",
    "token",
    "tokens",
    "key",
    "apikey",
    "api_key",
    "none",
    "null",
    "nil",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "changeme",
    "change_me",
    "changeit",
    "example",
    "sample",
    "test",
    "testing",
    "dummy",
    "fake",
    "placeholder",
    "redacted",
    "hidden",
    "masked",
    "required",
    "optional",
    "string",
    "str",
    "int",
    "integer",
    "bool",
    "boolean",
    "number",
    "float",
    "any",
    "object",
    "bytes",
    "text",
    "value",
    "default",
    "empty",
    "todo",
    "tbd",
    "fixme",
    "secretstr",
    "unknown",
    "admin",
    "root",
    "user",
    "username",
    "guest",
    "demo",
    "foo",
    "bar",
    "baz",
    "foobar",
    "qwerty",
    "letmein",
    "mysecret",
    "mypassword",
    "yourpassword",
    "secretkey",
    "secret_key",
    "password123",
    "hunter",
    "hidden_value",
    "env",
}
_PLACEHOLDER = re.compile(
    r"(?i)x{4,}|\*{3,}|\.{3}|…|•{2}|<[^>]*>|\{\{|\}\}|\$\{|\$\(|%\(|%[sd]\b|\byour[\s_-]|"
    r"[_-]here\b|change[_-]?me|placeholder|redacted|example|dummy|replace[_-]?(?:me|with|this)|"
    r"\btodo\b|^your|^my[_-]|(?:^|[_.-])(?:test|fake|dummy|sample|mock|example|demo)(?:$|[_.-])|"
    r"^<|>$|^\[|\]$"
)
CODE_REF = re.compile(
    r"(?:process\.env|os\.environ|os\.getenv|getenv|env\(|ENV\[|import\.meta|Deno\.env|System\."
    r"getenv|secrets\.|vars\.|self\.|this\.|config\.|settings\.|props\.|ctx\.|args\.|opts\.|"
    r"options\.|params\.|request\.|req\.|cfg\.|conf\.|app\.config|Environment\.)"
)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|->)[A-Za-z_][A-Za-z0-9_]*)*(?:\(\)?)?")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|(?:~|\.{1,2})/[\w.@+-]+|[A-Za-z]:[\\/][^\s]*")
_FILE = re.compile(r"[\w.\-/\\~]+\.(?:json|pem|key|txt|env|ya?ml|toml|ini|cfg|conf|p12|pfx|crt|cer|gpg|asc|pub)", re.I)
_UPPER_SNAKE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # a constant or variable name


def entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s))) if n else 0.0


def placeholder(v: str) -> bool:
    low = v.lower()
    return (
        len(v) < 4
        or low in _PLACEHOLDER_WORDS
        or "[REDACTED" in v
        or bool(_PLACEHOLDER.search(v))
        or len(set(v)) <= 2
        or v[0] in "$%@&*:\\"
        or bool(_UPPER_SNAKE.fullmatch(v))
        or bool(CODE_REF.match(v))
        or bool(_PATH.fullmatch(v) or _FILE.fullmatch(v))
        or "(" in v
        or v.isdigit()
        or low.startswith(("http://", "https://", "file:"))
    )


def random_enough(v: str, min_len: int = 16) -> bool:
    """Looks machine-generated: long, letters and digits mixed, high per-char entropy."""
    return len(v) >= min_len and any(c.isdigit() for c in v) and any(c.isalpha() for c in v) and entropy(v) >= 3.2


_DUMMY_TOKEN = re.compile(
    r"(?i)x{5,}|\*{3,}|\.{3}|[<>{}$]|example|placeholder|redacted|your[_-]|dummy|fake|sample|0{8}|"
    r"12345678|abcdefgh"
)


def token_ok(v: str) -> bool:
    """A prefixed provider token: not a placeholder and not a low-entropy dummy body."""
    body = re.sub(r"^[A-Za-z0-9]{1,12}[_.-]", "", v, count=1)
    return not _DUMMY_TOKEN.search(v) and len(set(body)) >= 8 and entropy(body) >= 3.0


def dummy(v: str) -> bool:
    """A token-shaped value that is a placeholder (`ghp_xxxx...`, `<token>`, `sk-...`)."""
    return bool(_DUMMY_TOKEN.search(v)) or len(set(v)) <= 4


def spaced(v: str, kind: str) -> bool:
    """Prose or a command, not a credential: keys and tokens hold no spaces; a password may
    hold one (not two, not a path)."""
    return any(c.isspace() for c in v) and (kind != "Password" or v.count(" ") >= 2 or "/" in v)


_CODEISH = re.compile(r"[\[\](){}<>]|\+\+|--|\|\||&&|\?\.|->|::")  # args[++i], a || b
_DOTTED = re.compile(r"[\w?!]+(?:(?:\.|\?\.|::|->)[\w?!]+)+")  # options?.apiKey, a.b.c


def password_like(v: str) -> bool:
    """A free-text value that looks typed as a password: digits or symbols, not code or a path."""
    v = v.rstrip(".,;:!?)")
    return (
        len(v) >= 6
        and v[0] not in "/#"
        and (any(c.isdigit() for c in v) or not v.isalnum())
        and not _CODEISH.search(v)
        and not _DOTTED.fullmatch(v)
        and not placeholder(v)
    )


# Values that providers print in their own documentation (AWS's `AKIAIOSFODNN7EXAMPLE` style, and
# a few well-known ones kept as hashes so no scanner flags this file): never a user's secret.
_DOC_SUFFIX = re.compile(r"[A-Za-z0-9/+=_\-]*EXAMPLE(?:KEY)?(?:[0-9]{0,2})")
_DOC_HASHES = {
    "2cafc0970149a84f3b9e62eaf169f36f",  # Stripe's documented test secret key
    "b1471f544ceeea31333bde7e1ecbaad6",  # Stripe's documented test publishable key
    "7f75367e7881255134e1375e723d1dea",  # jwt.io's example token
    "0011cc25eb4320717494d2703e8cba85",  # the Azure storage emulator's published account key
    "0e3fd41c01a697720785471d74558508",  # Slack's "not a real token" example
}
_DOC_TOKEN = re.compile(r"[A-Za-z0-9/+=_.\-]{8,}")


def documented_example(v: str) -> bool:
    """A value from a provider's documentation: an `...EXAMPLE`/`...EXAMPLEKEY` key (AWS) or a
    known published example, with nothing random left beside it."""
    import hashlib

    rest = v
    for m in _DOC_TOKEN.finditer(v):
        tok = m.group().strip("=")
        if _DOC_SUFFIX.fullmatch(tok) or hashlib.sha256(m.group().encode()).hexdigest()[:32] in _DOC_HASHES:
            rest = rest.replace(m.group(), " ")
    return rest != v and not any(random_enough(t.group(), 8) for t in _DOC_TOKEN.finditer(rest))
