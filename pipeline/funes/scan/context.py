"""Context rules: a value is a secret because of what names it (`password=`, `--token`,
`Authorization:`, `?access_token=`, `<password>`, `the password is`), within one window."""

from __future__ import annotations

import base64
import binascii
import re

from funes.scan.names import secret_name
from funes.scan.values import CODE_REF, IDENT, entropy, password_like, placeholder, random_enough, spaced

_QUERY = re.compile(r"[?&;](?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,40})=(?P<v>[^&#;\s\"'<>`\\]{4,})")
_QUERY_SECRETS = {
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "code_verifier",
}
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
_XML_ATTR = re.compile(
    r"(?i)(?:key|name)\s*=\s*[\"'](?P<name>[^\"'<>]{1,64})[\"']\s+value\s*=\s*[\"'](?P<v>[^\"'<>]{4,})[\"']"
)
_CALL_PAIR = re.compile(  # define('DB_PASSWORD', 'x'), os.Setenv("API_KEY", "x")
    r"\(\s*(?P<q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P=q)\s*,\s*"
    r"(?P<v>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')"
)
_CONN_PW = re.compile(r"(?i)(?:password|pwd)\s*=\s*(?P<v>[^;\"'\s][^;\"'\n]{0,200}?)\s*(?=;|[\"']|$)")
_NETRC = re.compile(r"machine\s+\S+\s+login\s+\S+\s+password\s+(?P<v>\S+)")
_PROSE = re.compile(  # `the password for the staging db is X`, `Azure key: X`, `token was X`
    r"(?i)\b(?:password|passwd|passphrase|pwd|token|secret|(?:api|access|secret|private|license|"
    r"storage|account|auth|client|signing|encryption|master|service|azure|aws|gcp|openai|anthropic|"
    r"stripe|github|gitlab|slack)[ _-]?key)\b(?:(?:[ \t][\w-]+){0,6}?\s+(?:is|was)\s+|(?:[ \t][\w-]+){0,2}?:[ \t]*)"
    r"[\"'`]?(?P<v>[^\s\"'`\\]{6,})"
)

# assignments: quoted keys (JSON, dicts, YAML) and bare keys (env, export, code, YAML, .properties)
_VALUE = r"(?P<v>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|[^\s\"'`,;)}\]\\]+)"
_QUOTED_KEY = re.compile(
    r"(?P<q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P=q)\]?\s*(?P<op>:=|=>|={1,3}|:)\s*" + _VALUE
)
_BARE_KEY = re.compile(
    r"(?<![A-Za-z0-9_$.\-])(?P<export>(?:export|set|setx|declare|local|readonly|ENV)\s+|\$env:)?"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P<sp>[ \t]*)(?P<op>:=|=>|={1,3}|:|\+=)[ \t]*" + _VALUE
)
_TYPE_WORDS = {
    "str",
    "string",
    "int",
    "bool",
    "bytes",
    "none",
    "optional",
    "any",
    "object",
    "secretstr",
    "number",
    "text",
    "char",
    "varchar",
    "uuid",
    "boolean",
}
_ENVNAME = re.compile(r"[A-Z][A-Z0-9_]*")


def window_findings(text: str, ls: int, le: int, low: str) -> list[tuple[str, int, int]]:
    """The context rules, on one secret-ish window text[ls:le]."""
    return (
        _header_findings(text, ls, le)
        + _flag_findings(text, ls, le)
        + _assignment_findings(text, ls, le)
        + _config_findings(text, ls, le, low)
    )


def _header_findings(text: str, ls: int, le: int) -> list[tuple[str, int, int]]:
    """`Bearer <token>`, `Authorization: Basic <b64>`, `X-API-Key: <key>`."""
    out = []
    for m in _BEARER.finditer(text, ls, le):
        v = m.group("v")
        if not placeholder(v) and (random_enough(v) or (len(v) >= 20 and entropy(v) >= 3.5)):
            out.append(("Bearer", *m.span("v")))
    for m in _AUTH_HEADER.finditer(text, ls, le):
        g = "v" if m.group("v") else "hv"
        v = m.group(g)
        basic = (m.group("scheme") or "").lower() == "basic"
        if v and not placeholder(v) and (len(v) >= 16 or any(c.isdigit() for c in v) or (basic and _is_basic(v))):
            out.append(("BasicAuth" if basic else "AuthHeader", *m.span(g)))
    return out


def _flag_findings(text: str, ls: int, le: int) -> list[tuple[str, int, int]]:
    """`?access_token=<v>` query parameters and `--password <v>` CLI flags."""
    out = []
    for m in _QUERY.finditer(text, ls, le):
        v = m.group("v")
        named = secret_name(m.group("name")) or m.group("name").lower() in _QUERY_SECRETS
        if named and not placeholder(v) and (random_enough(v, 8) or len(v) >= 20 or named == "Password"):
            out.append(("URLToken", *m.span("v")))
    for m in _CLI_FLAG.finditer(text, ls, le):
        kind = secret_name(m.group("name"))
        s, e = _value_span(m)
        v = text[s:e]
        if kind and not placeholder(v) and v[0] != "-" and (len(v) >= 6 or any(c.isdigit() for c in v)):
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
            kind = secret_name(m.group("name"))
            s, e = _value_span(m)
            if kind and not placeholder(text[s:e]) and not spaced(text[s:e], kind):
                out.append((kind, s, e))
    return out


def _assignment_kind(m: re.Match, quoted_key: bool) -> str | None:
    """The kind of secret a `name op value` match assigns, or None when the value is a
    placeholder, a type, a variable or code rather than a literal secret."""
    name, val, op = m.group("name"), m.group("v"), m.group("op")
    kind = secret_name(name.rsplit(".", 1)[-1])
    if kind is None:
        return None
    quoted = val[:1] in "\"'`"
    v = val[1:-1] if quoted and len(val) >= 2 and val[-1] == val[0] else val
    if placeholder(v) or v.lower() in _TYPE_WORDS or spaced(v, kind):
        return None
    envish = not quoted_key and (m.group("export") or (_ENVNAME.fullmatch(name) and (op == "=" or "_" in name)))
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    if not quoted_key and op == "=" and not m.group("sp") and not m.string[line_start : m.start()].strip():
        return "EnvAssignment" if envish else kind  # `password=x` opening a line: ini/.env/.properties
    if envish and op in ("=", ":"):
        if op == "=" and m.group("sp") and not m.group("export"):  # `NAME = value`: code
            return kind if (quoted or random_enough(v)) else None
        return "EnvAssignment"
    if quoted:
        return kind
    if op == ":":  # YAML / prose `password: s3cr3t!` vs a type annotation `token: str`
        if len(v) < 6 or "[" in v or "(" in v:
            return None
        return kind if any(c.isdigit() for c in v) or not IDENT.fullmatch(v) else None
    # `password = value` / kwargs `password=value`: an unquoted identifier is a variable, but
    # `--from-literal=password=S3cret!` is not
    literal = random_enough(v) or (not IDENT.fullmatch(v) and password_like(v))
    return kind if literal and not CODE_REF.match(v) else None


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
            if not placeholder(v) and (rx is not _PROSE or password_like(v)):
                named = secret_name(m.group(0).split()[0]) if rx is _PROSE else "Password"
                out.append((named or "Secret", *m.span("v")))
    return out


def _value_span(m: re.Match, group: str = "v") -> tuple[int, int]:
    """The span of a matched value, inside its quotes when it is quoted."""
    s, e = m.span(group)
    val = m.group(group)
    if len(val) >= 2 and val[0] in "\"'`" and val[-1] == val[0]:
        return s + 1, e - 1
    return s, e


def _is_basic(v: str) -> bool:
    """`Authorization: Basic <base64 of user:password>`."""
    try:
        return ":" in base64.b64decode(v + "=" * (-len(v) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
