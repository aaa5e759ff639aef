"""Value-only secrets: what a credential command prints (`aws configure get aws_secret_access_key`,
`gh auth token`, `vault kv get -field=…`, `op read`, `kubectl get secret … -o jsonpath`) is the
secret itself, with no name or prefix beside it; the name sits in the command that produced it.

So a tool result is scanned together with its command: when the command reads a credential,
each line of the output that holds one lone machine-made value (or `name value`, where the
name is secret-ish, as `vault kv get` prints) is a secret.
"""

from __future__ import annotations

import re

from funes.scan.names import secret_name
from funes.scan.values import entropy, placeholder

_CREDENTIAL_COMMAND = re.compile(
    r"(?i)secret|token|passw|passphrase|credential|creds|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"\bauth\b|auth[ _-]|keychain|keyring|\bvault\b|\bop\s+(?:read|item\s+get)|\bpass\s+(?:show|otp)\b|\bpass\s+[\w.-]+/|"
    r"\bgpg\b.*(?:-d\b|--decrypt)|\bage\b.*(?:-d\b|--decrypt)|\bsops\b|printenv|\$\{?[A-Z_]*(?:KEY|TOKEN|SECRET|PASS|PWD)|"
    r"base64\s+(?:-d|--decode|-D)\b|get-secret-value|get-parameters?\b|find-(?:generic|internet)-password|"
    r"print-access-token|print-identity-token|get-access-token|get-login-password|configure\s+get|\.env\b|"
    r"\.netrc|\.npmrc|\.pypirc|id_[rd]sa|id_ed25519|\.pem\b|\.key\b"
)
_LINE_VALUE = re.compile(r"[ \t]*[\"'`]?(?P<v>[^\s\"'`]{12,4096})[\"'`]?[ \t]*")
_NAME_VALUE = re.compile(
    r"[ \t]*(?P<name>[A-Za-z_][\w.\-]{0,63})[ \t]*[:=]?[ \t]+[\"'`]?(?P<v>[^\s\"'`]{6,4096})[\"'`]?[ \t]*"
)
_MAX_LINES = 40  # a credential read prints a value or a short table, not a log


def credential_command(command: str | None) -> bool:
    return command is not None and bool(_CREDENTIAL_COMMAND.search(command))


def machine_made(v: str) -> bool:
    """A lone value that is not a word, a number, a path, a URL or a placeholder."""
    classes = sum((any(c.islower() for c in v), any(c.isupper() for c in v), any(c.isdigit() for c in v)))
    return (
        not placeholder(v)
        and not v.isdigit()
        and "://" not in v
        and not v.startswith(("/", "~", "./"))
        and classes >= 2
        and entropy(v) >= 3.0
        and len(set(v)) >= 8
    )


def findings(output: str, command: str | None) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each value-only secret in the output of `command`."""
    if not credential_command(command) or output.count("\n") > _MAX_LINES:
        return []
    kind = "AWS" if command and "aws" in command.lower() else "Secret"
    out = []
    pos = 0
    for line in output.split("\n"):
        m = _LINE_VALUE.fullmatch(line)
        if m and machine_made(m.group("v")):
            out.append((kind, pos + m.start("v"), pos + m.end("v")))
        else:
            n = _NAME_VALUE.fullmatch(line)
            if n and secret_name(n.group("name")) and not placeholder(n.group("v")):
                out.append((kind, pos + n.start("v"), pos + n.end("v")))
        pos += len(line) + 1
    return out
