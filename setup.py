"""Packaging glue: the wheel carries the repo-root schemas/ and cards/ inside the package.

schemas/ and cards/ stay at the repo root (the single source of truth that docs and tests name);
`build_py` copies them to `funes/_schemas` and `funes/_cards` in the build, where
`funes.paths.schemas_dir()` and `cards_dir()` look first. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = {"schemas": "_schemas", "cards": "_cards"}


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        for folder, target in SHIPPED.items():
            src, dst = ROOT / folder, Path(self.build_lib) / "funes" / target
            if not src.is_dir():
                raise SystemExit(f"setup.py: {src} is missing; the wheel would not work without it")
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)


setup(cmdclass={"build_py": BuildWithData})
