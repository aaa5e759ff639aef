"""A Hugging Face Hub-compatible HTTP server for tests and benchmarks (dataset repos, LFS, no Xet).

It serves what the real huggingface_hub / datasets / HfFileSystem clients call for publishing and
reading a dataset (../shared/docs/hub-protocol.md) and enforces what the Hub enforces there:
private repos need their owner's token, 401/403/404 carry `X-Error-Code`, a bad token gets 401,
read-only tokens get 403 on writes, `parentCommit` must still be the branch head (else 412), and
a commit is atomic (all its files, or nothing, become visible). Clients must run with Xet off
(`HF_HUB_DISABLE_XET=1`): `*.parquet` and binary or large files go through LFS basic transfers.

Storage under ROOT: `blobs/<sha256>` (content-addressed, LFS uploads land here before any commit
names them) and `repos/datasets/<ns>/<name>.json` (refs and every commit's full file map).

Standalone: `python tests/hubserver.py --port PORT --root DIR --token USER:TOKEN
[--read-token USER:TOKEN] [--log FILE]` prints `ready <url>` once it listens (`--port 0` picks a
free port) and serves until killed. In tests, `HubServer(root, ...)` runs it on a thread;
`faults` injects failures (drop the connection during an LFS upload, delay a commit).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_RESOLVE = re.compile(r"^/datasets/([^/]+)/([^/]+)/resolve/([^/]+)/(.+)$")
_API_REPO = re.compile(r"^/api/datasets/([^/]+)/([^/]+)(?:/(.*))?$")
_LFS_BATCH = re.compile(r"^/datasets/([^/]+)/([^/]+?)(?:\.git)?/info/lfs/objects/batch$")
_LFS_OBJ = re.compile(r"^/_lfs/([0-9a-f]{64})(/verify)?$")
_LFS_MIN = 10 * 1024 * 1024  # files this big (or binary, or *.parquet) travel by LFS, as on the Hub


class HubError(Exception):
    def __init__(self, status: int, code: str | None, message: str, extra: dict | None = None, headers=None):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra or {}
        self.headers = headers or {}


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Store:
    """Repos and blobs on disk; every mutation happens under one lock and lands by atomic rename."""

    def __init__(self, root: Path):
        self.root = Path(root)
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()

    # ---- blobs -------------------------------------------------------------------------------

    def blob_path(self, sha256: str) -> Path:
        return self.root / "blobs" / sha256

    def put_blob(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self.blob_path(sha)
        if not path.exists():
            tmp = path.with_name(f".{sha}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return sha

    # ---- repos -------------------------------------------------------------------------------

    def _repo_file(self, ns: str, name: str) -> Path:
        return self.root / "repos" / "datasets" / ns / f"{name}.json"

    def load(self, ns: str, name: str) -> dict | None:
        try:
            return json.loads(self._repo_file(ns, name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def save(self, ns: str, name: str, repo: dict) -> None:
        path = self._repo_file(ns, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(repo), encoding="utf-8")
        os.replace(tmp, path)

    def delete(self, ns: str, name: str) -> None:
        self._repo_file(ns, name).unlink(missing_ok=True)

    def create(self, ns: str, name: str, private: bool) -> dict:
        attrs = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
        repo = {"private": private, "created": time.time(), "refs": {}, "commits": {}}
        files = {".gitattributes": self._entry(attrs, lfs=False)}
        self.commit(repo, files, "initial commit", "", None)
        self.save(ns, name, repo)
        return repo

    def _entry(self, data: bytes, lfs: bool) -> dict:
        sha = self.put_blob(data)
        return {"sha256": sha, "size": len(data), "oid": _git_oid(data), "lfs": lfs}

    def commit(self, repo: dict, files: dict, title: str, message: str, parent: str | None) -> str:
        seed = json.dumps([parent, title, time.time_ns(), sorted(files)]).encode()
        sha = hashlib.sha1(seed).hexdigest()
        repo["commits"][sha] = {
            "parent": parent,
            "title": title,
            "message": message,
            "date": time.time(),
            "files": files,
        }
        repo["refs"]["main"] = sha
        return sha

    @staticmethod
    def resolve(repo: dict, rev: str) -> str | None:
        rev = urllib.parse.unquote(rev)
        if rev in repo["refs"]:
            return repo["refs"][rev]
        return rev if rev in repo["commits"] else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HubHTTPServer

    def log_message(self, format, *args):  # the request log is ours (--log), not stderr noise
        pass

    # ---- plumbing ----------------------------------------------------------------------------

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, ctype: str = "application/json"):
        self.server.log_request_line(self.command, self.path, status)  # before the reply: a client reads it after
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj, headers: dict | None = None):
        self._send(status, json.dumps(obj).encode(), headers)

    def _user(self) -> tuple[str | None, bool]:
        """(user, can_write) from the bearer token; a token we do not know is a 401."""
        auth = self.headers.get("Authorization", "")
        if not auth.lower().startswith("bearer "):
            return None, False
        found = self.server.tokens.get(auth[7:].strip())
        if found is None:
            raise HubError(401, None, "Invalid credentials in Authorization header")
        return found

    def _repo(self, ns: str, name: str, write: bool = False) -> dict:
        user, can_write = self._user()
        repo = self.server.store.load(ns, name)
        owner = user == ns
        if repo is None or (repo["private"] and not owner):
            status = 401 if user is None else 404
            raise HubError(status, "RepoNotFound", "Repository not found")
        if write and user is None:
            raise HubError(401, None, "You must be authenticated to write")
        if write and not (owner and can_write):
            raise HubError(403, None, "You don't have the rights to write to this repository (read-only token)")
        return repo

    def _dispatch(self, method: str):
        path = urllib.parse.urlsplit(self.path).path
        try:
            self._route(method, path)
        except HubError as e:
            headers = {"X-Error-Message": e.message, **e.headers}
            if e.code:
                headers["X-Error-Code"] = e.code
            self._json(e.status, {"error": e.message, **e.extra}, headers)
        except ConnectionError:
            self.close_connection = True

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    # ---- routes ------------------------------------------------------------------------------

    def _route(self, method: str, path: str):
        routes = [
            ("GET", re.compile(r"^/api/whoami-v2$"), self.whoami),
            ("POST", re.compile(r"^/api/repos/create$"), self.create_repo),
            ("DELETE", re.compile(r"^/api/repos/delete$"), self.delete_repo),
            ("POST", re.compile(r"^/api/validate-yaml$"), self.validate_yaml),
            ("POST", _LFS_BATCH, self.lfs_batch),
            ("PUT", _LFS_OBJ, self.lfs_put),
            ("POST", _LFS_OBJ, self.lfs_verify),
            ("GET", _RESOLVE, self.resolve),
            ("HEAD", _RESOLVE, self.resolve),
            (None, _API_REPO, self.repo_api),
        ]
        for m, rx, fn in routes:
            match = rx.match(path)
            if match and (m is None or m == method):
                return fn(method, *match.groups())
        self._body()
        raise HubError(404, None, f"no route for {method} {path}")

    def whoami(self, method):
        user, can_write = self._user()
        if user is None:
            raise HubError(401, None, "Invalid credentials in Authorization header")
        role = "write" if can_write else "read"
        self._json(200, {"name": user, "type": "user", "orgs": [], "auth": {"accessToken": {"role": role}}})

    def create_repo(self, method):
        body = json.loads(self._body() or b"{}")
        user, can_write = self._user()
        if user is None:
            raise HubError(401, None, "You must be authenticated to create a repository")
        ns, name = body.get("organization") or user, body["name"]
        url = f"{self.server.url}/datasets/{ns}/{name}"
        if ns != user or not can_write:
            raise HubError(403, None, "You don't have the rights to create a repository here")
        with self.server.store.lock:
            if self.server.store.load(ns, name) is not None:
                raise HubError(409, None, "You already created this dataset repo", {"url": url})
            private = body.get("visibility", "private" if body.get("private") else "public") == "private"
            self.server.store.create(ns, name, private)
        self._json(200, {"url": url, "name": f"{ns}/{name}", "id": f"{ns}/{name}"})

    def delete_repo(self, method):
        body = json.loads(self._body() or b"{}")
        ns, name = body.get("organization"), body["name"]
        if ns is None:
            ns = self._user()[0]
        with self.server.store.lock:
            self._repo(ns, name, write=True)
            self.server.store.delete(ns, name)
        self._json(200, {})

    def validate_yaml(self, method):
        body = json.loads(self._body() or b"{}")
        errors = _yaml_errors(body.get("content", ""))
        self._json(400 if errors else 200, {"errors": [{"message": e} for e in errors], "warnings": []})

    def repo_api(self, method, ns, name, rest):
        rest = rest or ""
        head, _, tail = rest.partition("/")
        if method == "GET" and head in ("", "revision"):
            return self.info(ns, name, tail or "main")
        if method == "GET" and head == "tree":
            rev, _, sub = tail.partition("/")
            return self.tree(ns, name, rev, urllib.parse.unquote(sub))
        if method == "POST" and head == "paths-info":
            return self.paths_info(ns, name, tail)
        if method == "GET" and head == "refs":
            return self.refs(ns, name)
        if method == "GET" and head == "commits":
            return self.commits(ns, name, tail)
        if method == "POST" and head == "preupload":
            return self.preupload(ns, name)
        if method == "POST" and head == "commit":
            return self.commit(ns, name, tail)
        self._body()
        raise HubError(404, None, f"no route for {method} {self.path}")

    def _files(self, ns: str, name: str, rev: str) -> tuple[dict, str, dict]:
        repo = self._repo(ns, name)
        sha = Store.resolve(repo, rev)
        if sha is None:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {urllib.parse.unquote(rev)}")
        return repo, sha, repo["commits"][sha]["files"]

    def info(self, ns, name, rev):
        repo, sha, files = self._files(ns, name, rev)
        card = None
        if "README.md" in files:
            card = _front_matter(self.server.store.blob_path(files["README.md"]["sha256"]).read_text("utf-8"))
        when = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(repo["commits"][sha]["date"]))
        self._json(
            200,
            {
                "_id": f"{ns}/{name}",
                "id": f"{ns}/{name}",
                "author": ns,
                "sha": sha,
                "private": repo["private"],
                "disabled": False,
                "gated": False,
                "lastModified": when,
                "createdAt": when,
                "tags": (card or {}).get("tags", []) if isinstance(card, dict) else [],
                "cardData": card if isinstance(card, dict) else None,
                "siblings": [self._sibling(p, e) for p, e in sorted(files.items())],
            },
        )

    @staticmethod
    def _sibling(path: str, e: dict) -> dict:
        out = {"rfilename": path, "size": e["size"], "blobId": e["oid"]}
        if e["lfs"]:
            out["lfs"] = {"size": e["size"], "sha256": e["sha256"], "pointerSize": 134}
        return out

    @staticmethod
    def _entries(files: dict, prefix: str, recursive: bool) -> list[dict]:
        out, dirs = [], set()
        base = prefix.strip("/")
        for path, e in sorted(files.items()):
            if base and not path.startswith(base + "/"):
                continue
            rel = path[len(base) + 1 :] if base else path
            parts = rel.split("/")
            for i in range(1, len(parts)):
                d = "/".join(([base] if base else []) + parts[:i])
                if d not in dirs and (recursive or i == 1):
                    dirs.add(d)
                    out.append({"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "path": d})
            if recursive or len(parts) == 1:
                out.append(Handler._tree_file(path, e))
        return out

    @staticmethod
    def _tree_file(path: str, e: dict) -> dict:
        out = {"type": "file", "oid": e["oid"], "size": e["size"], "path": path}
        if e["lfs"]:
            out["lfs"] = {"oid": e["sha256"], "size": e["size"], "pointerSize": 134}
        return out

    def tree(self, ns, name, rev, sub):
        _, _, files = self._files(ns, name, rev)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        recursive = query.get("recursive", ["false"])[0] in ("true", "1", "True")
        entries = self._entries(files, sub, recursive)
        if sub and not entries and sub not in files:
            raise HubError(404, "EntryNotFound", f"{sub} does not exist")
        self._json(200, entries)

    def paths_info(self, ns, name, rev):
        form = urllib.parse.parse_qs(self._body().decode())
        _, _, files = self._files(ns, name, rev)
        out = []
        for p in form.get("paths", []):
            p = p.strip("/")
            if p in files:
                out.append(self._tree_file(p, files[p]))
            elif any(f.startswith(p + "/") for f in files):
                out.append({"type": "directory", "oid": hashlib.sha1(p.encode()).hexdigest(), "path": p})
        self._json(200, out)

    def refs(self, ns, name):
        repo = self._repo(ns, name)
        branches = [{"name": b, "ref": f"refs/heads/{b}", "targetCommit": s} for b, s in repo["refs"].items()]
        self._json(200, {"branches": branches, "converts": [], "tags": []})

    def commits(self, ns, name, rev):
        repo, sha, _ = self._files(ns, name, rev)
        out = []
        while sha:
            c = repo["commits"][sha]
            date = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(c["date"]))
            out.append({"id": sha, "title": c["title"], "message": c["message"], "date": date, "authors": []})
            sha = c["parent"]
        self._json(200, out)

    def preupload(self, ns, name):
        body = json.loads(self._body() or b"{}")
        self._repo(ns, name, write=True)
        out = []
        for f in body.get("files", []):
            sample = base64.b64decode(f.get("sample", ""))
            lfs = f["path"].endswith(".parquet") or f["size"] >= _LFS_MIN or b"\0" in sample
            out.append(
                {"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False, "oid": None}
            )
        self._json(200, {"files": out})

    def lfs_batch(self, method, ns, name):
        body = json.loads(self._body() or b"{}")
        self._repo(ns, name, write=True)
        objects = []
        for o in body.get("objects", []):
            obj = {"oid": o["oid"], "size": o["size"]}
            if not self.server.store.blob_path(o["oid"]).exists():
                href = f"{self.server.url}/_lfs/{o['oid']}"
                obj["actions"] = {"upload": {"href": href}, "verify": {"href": href + "/verify"}}
            objects.append(obj)
        self._send(
            200, json.dumps({"transfer": "basic", "objects": objects}).encode(), ctype="application/vnd.git-lfs+json"
        )

    def lfs_put(self, method, oid, _verify):
        n = int(self.headers.get("Content-Length") or 0)
        if self.server.take_fault("drop_upload"):
            self.rfile.read(n // 2)
            self.close_connection = True
            self.server.log_request_line(method, self.path, 0)
            self.connection.shutdown(socket.SHUT_RDWR)
            raise ConnectionError("dropped on purpose")
        data = self.rfile.read(n)
        if hashlib.sha256(data).hexdigest() != oid:
            raise HubError(400, None, "sha256 mismatch")
        self.server.store.put_blob(data)
        self._send(200, b"", {"ETag": f'"{oid[:32]}"'})

    def lfs_verify(self, method, oid, _verify):
        self._body()
        if not self.server.store.blob_path(oid).exists():
            raise HubError(404, None, "object not uploaded")
        self._json(200, {})

    def commit(self, ns, name, rev):
        lines = [json.loads(x) for x in self._body().splitlines() if x.strip()]
        if self.server.take_fault("drop_commit"):  # the whole request was read; nothing is applied
            self.close_connection = True
            self.server.log_request_line("POST", self.path, 0)
            self.connection.shutdown(socket.SHUT_RDWR)
            raise ConnectionError("dropped on purpose")
        delay = self.server.take_fault("delay_commit")
        if delay:
            time.sleep(float(delay))
        store = self.server.store
        with store.lock:
            repo = self._repo(ns, name, write=True)
            sha = Store.resolve(repo, rev)
            if sha is None:
                raise HubError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            header = next((x["value"] for x in lines if x["key"] == "header"), {})
            parent = header.get("parentCommit")
            if parent and parent != sha:
                raise HubError(412, None, "A commit has happened since. Please refresh and try again.")
            files = self._apply(dict(repo["commits"][sha]["files"]), lines)
            if "README.md" in files:
                errors = _yaml_errors(store.blob_path(files["README.md"]["sha256"]).read_text("utf-8"))
                if errors:
                    raise HubError(400, None, "Invalid metadata in README.md: " + "; ".join(errors))
            new = store.commit(repo, files, header.get("summary", ""), header.get("description", ""), sha)
            store.save(ns, name, repo)
        url = f"{self.server.url}/datasets/{ns}/{name}/commit/{new}"
        self._json(200, {"commitOid": new, "commitUrl": url, "pullRequestUrl": None})

    def _apply(self, files: dict, lines: list[dict]) -> dict:
        store = self.server.store
        for x in lines:
            key, v = x["key"], x["value"]
            if key == "file":
                files[v["path"]] = store._entry(base64.b64decode(v["content"]), lfs=False)
            elif key == "lfsFile":
                blob = store.blob_path(v["oid"])
                if not blob.exists():
                    raise HubError(422, None, f"LFS object {v['oid']} was never uploaded")
                files[v["path"]] = {"sha256": v["oid"], "size": v["size"], "oid": v["oid"], "lfs": True}
            elif key == "deletedFile":
                if files.pop(v["path"], None) is None:
                    raise HubError(404, "EntryNotFound", "A file with this name doesn't exist")
            elif key == "deletedFolder":
                for p in [p for p in files if p.startswith(v["path"].rstrip("/") + "/")]:
                    del files[p]
        return files

    def resolve(self, method, ns, name, rev, path):
        path = urllib.parse.unquote(path)
        _repo, sha, files = self._files(ns, name, rev)
        if path not in files:  # the client caches the miss under this commit
            raise HubError(404, "EntryNotFound", f"{path} does not exist", headers={"X-Repo-Commit": sha})
        e = files[path]
        headers = {"X-Repo-Commit": sha, "ETag": f'"{e["sha256"] if e["lfs"] else e["oid"]}"', "Accept-Ranges": "bytes"}
        if e["lfs"]:
            headers.update({"X-Linked-Etag": f'"{e["sha256"]}"', "X-Linked-Size": e["size"]})
        data = self.server.store.blob_path(e["sha256"]).read_bytes()
        status, rng = 200, self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start, end = int(a or 0), min(int(b) if b else len(data) - 1, len(data) - 1)
            if start >= len(data):
                return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}", **headers})
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            data, status = data[start : end + 1], 206
        self._send(status, data, headers, ctype="application/octet-stream")


def _front_matter(text: str):
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---", 4)
    if end < 0:
        return None
    import yaml

    try:
        return yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return "invalid"


def _yaml_errors(text: str) -> list[str]:
    """The checks the Hub applies to a dataset card's metadata that matter here."""
    meta = _front_matter(text)
    if meta is None:
        return []
    if meta == "invalid" or not isinstance(meta, dict):
        return ["YAML metadata is not a mapping"]
    errors = []
    for key in ("tags", "size_categories"):
        if key in meta and not (isinstance(meta[key], list) and all(isinstance(x, str) for x in meta[key])):
            errors.append(f'"{key}" must be a list of strings')
    for cfg in meta.get("configs") or []:
        if not isinstance(cfg, dict) or "config_name" not in cfg or "data_files" not in cfg:
            errors.append('"configs" entries need config_name and data_files')
    return errors


class HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, store: Store, tokens: dict, log: Path | None):
        super().__init__(addr, Handler)
        self.store, self.tokens, self.log = store, tokens, log
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.faults: dict[str, list] = {}  # name -> remaining values, consumed one per request
        self.requests: list[tuple[str, str, int]] = []
        self._log_lock = threading.Lock()

    def take_fault(self, name: str):
        with self._log_lock:
            pending = self.faults.get(name)
            return pending.pop(0) if pending else None

    def log_request_line(self, method: str, path: str, status: int) -> None:
        with self._log_lock:
            self.requests.append((method, path, status))
            if self.log:
                with open(self.log, "a", encoding="utf-8") as f:
                    f.write(f"{method} {path} {status}\n")


def _tokens(write: list[str], read: list[str]) -> dict[str, tuple[str, bool]]:
    out = {}
    for spec, can_write in [(w, True) for w in write] + [(r, False) for r in read]:
        user, _, token = spec.partition(":")
        if not user or not token:
            raise SystemExit(f"hubserver: a token is USER:TOKEN, got {spec!r}")
        out[token] = (user, can_write)
    return out


class HubServer:
    """The server on a background thread (tests): `url`, `store`, `faults`, `requests`, `stop()`."""

    def __init__(self, root: Path, tokens: dict[str, tuple[str, bool]], port: int = 0, log: Path | None = None):
        self.httpd = HubHTTPServer(("127.0.0.1", port), Store(root), tokens, log)
        self.url, self.store = self.httpd.url, self.httpd.store
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def faults(self) -> dict[str, list]:
        return self.httpd.faults

    @property
    def requests(self) -> list[tuple[str, str, int]]:
        return self.httpd.requests

    def stored_bytes(self):
        """(path, bytes) of every file the server keeps: blobs, repo records, anything else."""
        for p in sorted(self.store.root.rglob("*")):
            if p.is_file():
                yield p, p.read_bytes()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--token", action="append", default=[], required=True, metavar="USER:TOKEN")
    ap.add_argument("--read-token", action="append", default=[], metavar="USER:TOKEN")
    ap.add_argument("--log", type=Path)
    args = ap.parse_args(argv)
    server = HubServer(args.root, _tokens(args.token, args.read_token), args.port, args.log)
    print(f"ready {server.url}", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
