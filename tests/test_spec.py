"""The one memory-spec parser: local, paths, owner/name, hf://datasets/owner/name[@rev]."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("text", "kind", "repo", "rev"),
    [
        (None, "local", None, None),
        ("  local ", "local", None, None),
        ("acme/mem", "hub", "acme/mem", None),
        ("hf://datasets/acme/mem", "hub", "acme/mem", None),
        ("hf://datasets/acme/mem@v1.2", "hub", "acme/mem", "v1.2"),
        ("/abs/memory", "path", None, None),
        ("./acme/mem", "path", None, None),
        ("a/b/c", "path", None, None),
    ],
)
def test_specs(text, kind, repo, rev):
    from funes.memory.spec import parse

    s = parse(text)
    assert (s.kind, s.repo_id, s.revision) == (kind, repo, rev)
    if kind == "path":
        assert isinstance(s.path, Path)


def test_bad_hub_uri_is_a_usage_error_and_uri_is_canonical():
    from funes.errors import UsageError
    from funes.memory.spec import parse

    with pytest.raises(UsageError, match="not a Hub memory"):
        parse("hf://acme/mem")
    assert parse("acme/mem").uri == "hf://datasets/acme/mem"


def test_local_readers_refuse_a_hub_spec_with_a_usage_error(funes_home):
    from funes.commands.scrub import scrub
    from funes.errors import UsageError

    # status, recall and get read a Hub memory (tests/test_remote.py); scrub rewrites a local one
    with pytest.raises(UsageError, match="is a Hub memory"):
        scrub("acme/mem")
