"""Values of a Kubernetes Secret: every entry under `data:` (base64) or `stringData:` (plain) of a
document whose kind is Secret, in YAML or JSON (`kubectl get secret -o yaml|json`), whatever the
entry is called — `tls.key`, `config.json` and `DATABASE_URL` name no secret, but they are one."""

from __future__ import annotations

import re

_KIND = re.compile(r"""(?m)["']?kind["']?\s*:\s*["']?Secret["']?\s*(?:,|$|\})""")
_DOC_SPLIT = re.compile(r"(?m)^---[ \t]*$|\x00")  # YAML documents; texts of a joined batch
_YAML_MAP = re.compile(r"(?m)^(?P<ind>[ \t]*)(?:data|stringData):[ \t]*$")
_YAML_ENTRY = re.compile(r"(?P<ind>[ \t]+)(?P<key>[^\s:#][^:\n]{0,252}):[ \t]*(?P<v>[^\n]*)")
_JSON_MAP = re.compile(r"""["'](?:data|stringData)["']\s*:\s*\{""")
_JSON_ENTRY = re.compile(r"""\s*["'](?P<key>[^"'\n]{1,253})["']\s*:\s*["'](?P<v>[^"'\n]*)["']\s*(?P<sep>,|\})""")

NECESSARY: list[re.Pattern | str] = [_KIND]  # in every document that yields a finding (`gate.py`)


def findings(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each Secret entry value."""
    if "Secret" not in text or ("data" not in text and "Data" not in text):
        return []
    if not may_hold_secret_kind(text):
        return []
    out: list[tuple[str, int, int]] = []
    pos = 0
    for part in [*_DOC_SPLIT.split(text)]:
        start = text.find(part, pos)
        pos = start + len(part)
        if _KIND.search(part):
            out.extend(("Kubernetes", start + s, start + e) for s, e in _yaml_values(part) + _json_values(part))
    return out


def may_hold_secret_kind(text: str) -> bool:
    """False when no document of `text` says `kind: Secret`: a match cannot cross a `---` line or
    a batch separator (neither `-` nor NUL is in the pattern), so one pass over the whole batch
    spares splitting it into its documents."""
    return _KIND.search(text) is not None


def _yaml_values(doc: str) -> list[tuple[int, int]]:
    spans = []
    for m in _YAML_MAP.finditer(doc):
        base = len(m.group("ind").expandtabs())
        i = m.end() + 1
        child = None
        while i < len(doc):
            le = doc.find("\n", i)
            le = len(doc) if le < 0 else le
            line = doc[i:le]
            if line.strip() and not line.lstrip().startswith("#"):
                ind = len(line) - len(line.lstrip())
                if ind <= base:
                    break
                e = _YAML_ENTRY.fullmatch(line)
                if child is None:
                    child = ind
                if e and ind == child:
                    v = e.group("v").strip()
                    if v and v not in ("|", ">", "|-", ">-", "|+", ">+"):
                        vs = i + e.start("v") + (len(e.group("v")) - len(e.group("v").lstrip()))
                        spans.append(_unquote(doc, vs, vs + len(v)))
                elif ind > child:  # the body of a block scalar (`config.yaml: |`)
                    spans.append((i + ind, le))
            i = le + 1
    return [(s, e) for s, e in spans if e > s]


def _json_values(doc: str) -> list[tuple[int, int]]:
    spans = []
    for m in _JSON_MAP.finditer(doc):
        i = m.end()
        while True:
            e = _JSON_ENTRY.match(doc, i)
            if not e:
                break
            if e.group("v"):
                spans.append(e.span("v"))
            if e.group("sep") == "}":
                break
            i = e.end()
    return spans


def _unquote(doc: str, s: int, e: int) -> tuple[int, int]:
    if e - s >= 2 and doc[s] in "\"'" and doc[e - 1] == doc[s]:
        return s + 1, e - 1
    return s, e
