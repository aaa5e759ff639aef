"""tests/hubserver.py on its own: `ready`, the request log, and the Hub's refusals (401/403/404/412)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

SERVER = Path(__file__).resolve().parent / "hubserver.py"


def _call(url, method="GET", token=None, body=None):
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body else None)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_standalone_server_prints_ready_logs_requests_and_enforces_tokens(tmp_path):
    log = tmp_path / "requests.log"
    cmd = [sys.executable, str(SERVER), "--port", "0", "--root", str(tmp_path / "hub"), "--token", "acme:w"]
    p = subprocess.Popen([*cmd, "--read-token", "acme:r", "--log", str(log)], stdout=subprocess.PIPE, text=True)
    try:
        ready, url = p.stdout.readline().split()
        assert ready == "ready" and url.startswith("http://127.0.0.1:")
        assert _call(f"{url}/api/whoami-v2", token="w")[0] == 200
        status, headers, _ = _call(f"{url}/api/whoami-v2", token="nope")
        assert status == 401 and headers["X-Error-Message"] == "Invalid credentials in Authorization header"
        create = {"name": "mem", "organization": "acme", "type": "dataset", "visibility": "private"}
        assert _call(f"{url}/api/repos/create", "POST", "r", create)[0] == 403  # read-only token
        assert _call(f"{url}/api/repos/create", "POST", "w", create)[0] == 200
        status, _, body = _call(f"{url}/api/repos/create", "POST", "w", create)
        assert status == 409 and json.loads(body)["url"].endswith("/datasets/acme/mem")
        status, headers, _ = _call(f"{url}/api/datasets/acme/mem")  # private, anonymous
        assert status == 401 and headers["X-Error-Code"] == "RepoNotFound"
        status, _, body = _call(f"{url}/api/datasets/acme/mem", token="r")
        assert status == 200 and json.loads(body)["private"] is True
        status, headers, _ = _call(f"{url}/datasets/acme/mem/resolve/main/nope.txt", token="r")
        assert status == 404 and headers["X-Error-Code"] == "EntryNotFound" and len(headers["X-Repo-Commit"]) == 40
        lines = log.read_text().splitlines()
        assert lines[0].split() == ["GET", "/api/whoami-v2", "200"] and len(lines) == 8
    finally:
        p.terminate()
        p.wait(timeout=10)


def test_a_stale_parent_commit_is_refused_and_nothing_lands(hub):
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi()
    api.create_repo(hub.repo_id, repo_type="dataset", private=True)
    first = api.dataset_info(hub.repo_id).sha
    api.create_commit(hub.repo_id, [CommitOperationAdd("a.txt", b"a")], commit_message="a", repo_type="dataset")
    try:
        api.create_commit(
            hub.repo_id,
            [CommitOperationAdd("b.txt", b"b")],
            commit_message="b",
            repo_type="dataset",
            parent_commit=first,
        )
        raise AssertionError("a stale parent commit must be refused")
    except HfHubHTTPError as e:
        assert e.response.status_code == 412
    assert sorted(hub.files()) == [".gitattributes", "a.txt"]
