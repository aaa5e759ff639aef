"""Detection classes that index-time redaction once missed, and look-alikes it must keep.

Secrets are generated at test time (seeded RNG, several variants per class, no literal credential
in this file); each class is written in more than one phrasing, because the next transcript will
not use the phrasing of this one.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from pathlib import Path

import pytest

from funes import scan
from funes.ingest.redact import apply, redact_texts

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


class _G:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        while True:
            out = "".join(self.r.choice(alphabet) for _ in range(n))
            if alphabet != ALNUM or (any(c.isdigit() for c in out) and any(c.isupper() for c in out)):
                return out

    def aws_secret(self, slash: bool = True) -> str:
        while True:
            body = self.s(40, ALNUM + ("/+" if slash else ""))
            if (("/" in body or "+" in body) == slash) and any(c.islower() for c in body):
                return body

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def azure(self) -> str:
        return self.s(3) + self.r.choice(string.digits) + "Q~" + self.s(34, ALNUM + "_~.-")


def _cases(seed: int) -> list[tuple[str, str, list[str]]]:
    g = _G(seed)
    c: list[tuple[str, str, list[str]]] = []

    def add(label: str, text: str, *secrets: str) -> None:
        c.append((label, text, list(secrets)))

    filler = " ".join(g.r.choice(["bucket", "region", "policy", "deploy", "retry", "the", "and"]) for _ in range(80))
    k = g.aws_secret()
    add("aws-prose-far", f"We set AWS_ACCESS_KEY_ID earlier. {filler}. The secret you pasted, '{k}', works.", k)
    k = g.aws_secret()
    add("aws-reasoning", f"The user gave me {k} — that should be the secret half of the access key pair.", k)
    k = g.aws_secret(slash=False)
    add("aws-noslash-prose", f"Okay, so for the aws cli I will use {k} as the secret.", k)
    k = g.aws_secret()
    add("aws-list-item", f"- key id: (see above)\n- {k}\n", k)

    for label, yaml_entry in (("k8s-yaml", True), ("k8s-json", False)):
        vals = [base64.b64encode(g.s(n).encode()).decode() for n in (12, 24, 40)]
        names = ["password", "tls.key", "DATABASE_URL"]
        if yaml_entry:
            body = "\n".join(f"  {n}: {v}" for n, v in zip(names, vals))
            text = f"apiVersion: v1\ndata:\n{body}\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\n"
        else:
            text = json.dumps({"apiVersion": "v1", "kind": "Secret", "data": dict(zip(names, vals))}, indent=2)
        add(label, text, *vals)
    v = g.s(20)
    add(
        "k8s-stringdata",
        f"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nstringData:\n  api-endpoint-credential: {v}\n",
        v,
    )

    a = g.azure()
    add("azure-portal-copy", f"Client secret value: {a}\nSecret ID: {g.uuid()}", a)
    a = g.azure()
    add("azure-bare", f"az login --service-principal -u {g.uuid()} -p {a} --tenant contoso.onmicrosoft.com", a)
    a = g.azure()
    add("azure-json", json.dumps({"appId": g.uuid(), "password": "x", "clientSecret": a}), a)

    u = g.uuid()
    add("uuid-heroku-prose", f"Heroku: here is the API key {u} for the deploy bot", u)
    u = g.uuid()
    add("uuid-snyk-cli", f"snyk auth {u}", u)
    u = g.uuid()
    add("uuid-after", f"{u} is the new Datadog API key", u)
    u = g.uuid()
    add("uuid-pagerduty-token", f"PagerDuty integration token -> {u}", u)

    h = g.s(40, HEX)
    add("hex-fish", f"set -x GITLAB_TOKEN {h}", h)
    h = g.s(64, HEX)
    add("hex-setenv", f"setenv VAULT_TOKEN {h}", h)
    h = g.s(40, HEX)
    add("hex-prose", f"the DEPLOY_TOKEN is {h}", h)
    h = g.s(48, HEX)
    add("hex-arrow", f"CI_PUSH_TOKEN → {h}", h)
    h = g.s(40, HEX)
    add("hex-export", f"export MY_SERVICE_TOKEN={h}", h)
    return c


def _look_alikes(seed: int) -> list[str]:
    g = _G(seed)
    return [
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "In the docs the example key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, with AKIAI44QH8DHBEXAMPLE.",
        f"commit {g.s(40, HEX)} fixed the github token refresh",
        f"tenant id: {g.uuid()}",
        f"Azure subscription id {g.uuid()} in westeurope",
        f"the Heroku app id is {g.uuid()}",
        f"request {g.uuid()} failed with a 401 from the Datadog API",
        "kind: ConfigMap\ndata:\n  LOG_LEVEL: ZGVidWc=\n  mode: fast\n",
        "src/components/Settings/Profile/index2024.tsx",
        "getUserProfileByAccountIdentifierAndName",
        f"sha256-{base64.b64encode(g.s(32).encode()).decode()}",
        f"session {g.uuid()} resumed",
        "TOKEN_LIMIT is 4096",
        "the GITHUB_TOKEN is set in the workflow env",
        f"cache_key: {g.s(40, HEX)}",
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_class_is_redacted_in_every_phrasing(seed, monkeypatch):
    cases = _cases(seed)
    out, kinds = redact_texts([t for _, t, _ in cases])
    missed = [label for (label, _, secrets), o in zip(cases, out) if any(s in o for s in secrets)]
    assert not missed
    assert all(k for k in kinds)


def test_each_class_is_found_by_funes_rules_alone():
    cases = _cases(4)
    found = scan.find([t for _, t, _ in cases], only=["funes-rules"])
    missed = [label for (label, t, secrets), fs in zip(cases, found) if any(s in apply(t, fs) for s in secrets)]
    assert not missed


def test_look_alikes_and_documented_examples_are_kept():
    texts = _look_alikes(5)
    out, _ = redact_texts(texts)
    changed = [(t, o) for t, o in zip(texts, out) if t != o]
    assert not changed


def test_kinds_name_the_provider():
    g = _G(6)
    texts = [f"Heroku API key: {g.uuid()}", f"Client secret value: {g.azure()}", "kind: Secret\ndata:\n  a: YWJjZGVm\n"]
    _, kinds = redact_texts(texts)
    assert kinds == [["Heroku"], ["Azure"], ["Kubernetes"]]


@pytest.mark.parametrize(
    "command",
    [
        '{"command": "aws configure get aws_secret_access_key --profile prod"}',
        '{"command": "gh auth token"}',
        '{"command": "vault kv get -field=password secret/db"}',
        '{"command": "op read op://Private/stripe/credential"}',
        '{"command": "kubectl get secret app -o jsonpath={.data.key} | base64 -d"}',
        '{"command": "security find-generic-password -s deploy -w"}',
        '{"command": "cat ~/.config/hub/token"}',
    ],
)
def test_the_lone_output_of_a_credential_command_is_a_secret(command):
    g = _G(len(command))
    value = g.s(32)  # no prefix, no cloud-key shape: only the command says what it is
    assert redact_texts([value])[0] == [value]
    for output in (value, value + "\n", f'"{value}"\n'):
        (red,), (kinds,) = redact_texts([output], [command])
        assert value not in red and kinds
    (red,), _ = redact_texts([f"Key        Value\n---        -----\npassword   {g.s(14)}!\n"], [command])
    assert "!" not in red.split("password")[1]


@pytest.mark.parametrize(
    "command,output",
    [
        ('{"command": "git rev-parse HEAD"}', "".join(random.Random(1).choice(HEX) for _ in range(40))),
        ('{"command": "uuidgen"}', str(uuid.UUID(int=7))),
        ('{"command": "gh auth status"}', "github.com\n  ✓ Logged in to github.com account octocat"),
        ('{"command": "cat secret_notes.txt"}', "remember to rotate the keys on friday"),
        ('{"command": "aws configure get region"}', "eu-west-1"),
    ],
)
def test_other_lone_outputs_are_kept(command, output):
    (red,), (kinds,) = redact_texts([output], [command])
    assert red == output and not kinds


def test_value_only_secret_never_reaches_the_memory(funes_home, tmp_path):
    """B10 end to end: the tool_result holds nothing but the value; no byte of it is stored."""
    from funes.commands import index

    value = _G(9).aws_secret(slash=False)
    assert redact_texts([value])[0] == [value]  # alone, nothing marks it: the command does
    sid = "sess-b10"
    tool_id = "toolu_01B10"
    records = [
        {"role": "user", "content": "what is the prod secret key?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": "Bash",
                    "input": {"command": "aws configure get aws_secret_access_key --profile prod"},
                }
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": value + "\n"}]},
    ]
    path = tmp_path / "projects" / "-home-u-proj" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("w") as f:
        for i, m in enumerate(records):
            rec = {
                "type": m["role"],
                "sessionId": sid,
                "cwd": "/home/u/proj",
                "uuid": f"{sid}-u{i}",
                "parentUuid": f"{sid}-u{i - 1}" if i else None,
                "timestamp": f"2026-05-01T10:0{i}:00.000Z",
                "message": m,
            }
            f.write(json.dumps(rec) + "\n")
    index.index(index.Options(path=str(tmp_path / "projects"), no_embed=True))
    needles = [value.encode(), value.lower().encode(), value[:20].encode()]
    needles += [p.lower().encode() for p in value.replace("+", "/").split("/") if len(p) >= 8]
    hits = [p for p in Path(funes_home).rglob("*") if p.is_file() and any(n in p.read_bytes() for n in needles)]
    assert not hits
