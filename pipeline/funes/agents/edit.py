"""Structural edits of agents' config files that keep everything else byte for byte, and atomic writes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import tempfile
from pathlib import Path

from funes.errors import FunesError

LEGACY_SCRIPTS = ("funes-index.sh", "funes-push.sh")  # the Rust original's hook scripts


class MalformedConfig(FunesError):
    """A user's config file funes cannot parse or that is not a mapping: it is never overwritten."""


def sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise MalformedConfig(f"cannot read {path}: {e}") from None


def write_atomic(path: Path, text: str, mode: int = 0o600) -> bool:
    """Temp file beside it, fsync, rename; keeps an existing file's mode; writes nothing when unchanged."""
    if read(path) == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    keep = path.stat().st_mode & 0o7777 if path.exists() else mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".funes-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, keep)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


# ---- ownership -------------------------------------------------------------------------------


def runs_funes_hook(command: object, args: object = None) -> bool:
    """A hook command funes owns: `<funes…> hook <agent> <event>`, or one of the original's scripts."""
    if not isinstance(command, str):
        return False
    if any(s in command for s in LEGACY_SCRIPTS):
        return True
    try:
        argv = shlex.split(command) + [str(a) for a in (args if isinstance(args, list) else [])]
    except ValueError:
        return False
    return any(word == "hook" and i > 0 and _is_funes(argv[:i]) for i, word in enumerate(argv[:-2]))


def _is_funes(prefix: list[str]) -> bool:
    return any(Path(w).name.startswith("funes") or w in ("funes.cli", "funes") for w in prefix)


# ---- JSON -----------------------------------------------------------------------------------

_BOM = "\ufeff"


def json_load(path: Path, text: str | None, what: str = "a JSON object") -> tuple[dict, dict]:
    """(document, style) — style remembers BOM, indent and the trailing newline so a dump looks the same."""
    if text is None or not text.strip(_BOM).strip():
        return {}, {"bom": "", "indent": 2, "newline": "\n"}
    body = text[1:] if text.startswith(_BOM) else text
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as e:
        raise MalformedConfig(f"{path} is not valid JSON ({e.msg}, line {e.lineno}); it was left untouched") from None
    if not isinstance(doc, dict):
        raise MalformedConfig(f"{path} does not hold {what}; it was left untouched")
    m = re.search(r"\n([ \t]+)\S", body)
    indent: int | str = (len(m.group(1)) if m.group(1).strip(" ") == "" else m.group(1)) if m else 2
    style = {
        "bom": _BOM if text.startswith(_BOM) else "",
        "indent": indent,
        "newline": "\n" if body.endswith("\n") else "",
    }
    return doc, style


def json_dump(doc: dict, style: dict) -> str:
    return style["bom"] + json.dumps(doc, indent=style["indent"], ensure_ascii=False) + style["newline"]


def merge_hook_groups(doc: dict, desired: dict[str, dict]) -> dict:
    """Claude/Codex `hooks` merge: a funes group is replaced in place, appended when absent, dropped when unwanted.

    In-place replacement keeps the position of every group, so Codex's positional trust keys stay valid.
    """
    hooks = doc.get("hooks")
    if hooks is None:
        if not desired:
            return doc
        hooks = doc["hooks"] = {}
    if not isinstance(hooks, dict):
        raise MalformedConfig("its `hooks` value is not an object")
    for event in list(hooks) + [e for e in desired if e not in hooks]:
        groups = hooks.get(event, [])
        if isinstance(groups, list):
            out = _merge_event(groups, desired.get(event))
            if out:
                hooks[event] = out
            elif event in hooks:
                del hooks[event]
    if not hooks:
        del doc["hooks"]
    return doc


def _merge_event(groups: list, want: dict | None) -> list:
    out, placed = [], False
    for group in groups:
        if not _funes_group(group):
            out.append(group)
        elif want is not None and not placed:
            out.append(want)
            placed = True
    if want is not None and not placed:
        out.append(want)
    return out


def _funes_group(group: object) -> bool:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return False
    return any(isinstance(h, dict) and runs_funes_hook(h.get("command"), h.get("args")) for h in group["hooks"])


# ---- TOML (Codex) ---------------------------------------------------------------------------


def toml_load(path: Path, text: str | None):
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text or "")
    except TOMLKitError as e:
        raise MalformedConfig(f"{path} is not valid TOML ({e}); it was left untouched") from None


# ---- YAML (Hermes) --------------------------------------------------------------------------


def yaml_load(path: Path, text: str | None):
    """(yaml instance with the file's own indentation, document) in round-trip mode (comments kept)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.util import load_yaml_guess_indent

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    if not (text or "").strip():
        yaml.indent(mapping=2, sequence=4, offset=2)
        return yaml, None
    try:
        _, indent, bsi = load_yaml_guess_indent(text)
        yaml.indent(mapping=indent or 2, sequence=(indent or 2) + (bsi or 0), offset=bsi or 0)
        doc = yaml.load(text)
    except YAMLError as e:
        raise MalformedConfig(f"{path} is not valid YAML ({str(e).splitlines()[0]}); it was left untouched") from None
    if doc is not None and not isinstance(doc, dict):
        raise MalformedConfig(f"{path} is not a YAML mapping; it was left untouched")
    return yaml, doc


def yaml_dump(yaml, doc) -> str:
    import io

    buf = io.StringIO()
    yaml.dump(doc, buf)
    return buf.getvalue()
