"""The text files funes installs (skill, pi extension), read from agents/assets/."""

from __future__ import annotations

import json
from pathlib import Path

_DIR = Path(__file__).resolve().parent / "assets"


def skill(recall: str, get: str, allowed: list[str] | None = None) -> str:
    line = f"allowed-tools: {' '.join(allowed)}\n" if allowed else ""
    text = (_DIR / "SKILL.md").read_text(encoding="utf-8")
    return text.replace("{allowed}", line).replace("{recall}", recall).replace("{get}", get)


def pi_extension(funes_argv: list[str]) -> str:
    return (_DIR / "pi-extension.js").read_text(encoding="utf-8").replace("__FUNES_ARGV__", json.dumps(funes_argv))
