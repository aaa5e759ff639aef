"""Secret-ish names: `DB_PASSWORD`, `apiKey`, `client_secret` name credentials; `token_count`,
`max_tokens` do not."""

from __future__ import annotations

import re

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


def secret_name(name: str) -> str | None:
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

