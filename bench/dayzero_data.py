"""Day-zero transcripts: LongMemEval-S haystack sessions written as Claude Code and Codex files.

The 1,673 unique sessions of ../shared/benchdata/longmemeval/s_subset are replicated under fresh
ids (`<sid>~r<k>`, so the original id is the part before `~`) until the requested count; even
replicas go to ~/.claude/projects, odd ones to ~/.codex/sessions. Real sessions are not all prose:
every third assistant turn also carries one tool call and its output (a quoted slice of the
conversation), so the tool tiers have work the way they do in real use.

Fast and deterministic: each unique session is rendered once as a byte template with an id
placeholder; replicas are one `bytes.replace` and one write each (20k sessions in a few seconds).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

LME = Path(__file__).resolve().parents[2] / "shared" / "benchdata" / "longmemeval" / "s_subset"
SID = "@@SID@@"


def questions(lme: Path = LME) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(lme.glob("*.json"))]


def sessions(qs: list[dict]) -> list[tuple[str, str, list[dict]]]:
    """(session id, earliest date, turns), one per unique id, in id order."""
    seen: dict[str, tuple[str, list[dict]]] = {}
    for q in qs:
        for sid, date, turns in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
            if sid not in seen or date < seen[sid][0]:
                seen[sid] = (date, turns)
    return [(sid, *seen[sid]) for sid in sorted(seen)]


def _stamp(date: str, i: int) -> str:
    t = datetime.strptime(date[:10] + date[-6:], "%Y/%m/%d %H:%M") + timedelta(seconds=30 * i)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _tool(turn: dict, i: int) -> tuple[str, str]:
    words = turn["content"].split()
    cmd = "grep -n " + json.dumps(" ".join(words[:3])[:40]) + " notes.md"
    return cmd, "\n".join(f"{n + 1}: " + " ".join(words[n * 12 : n * 12 + 12]) for n in range(min(6, len(words) // 12)))


def claude_template(date: str, turns: list[dict]) -> bytes:
    lines, parent = [], None
    for i, turn in enumerate(turns):
        uuid, role = f"{SID}-u{i}", turn["role"]
        content = turn["content"] if role == "user" else [{"type": "text", "text": turn["content"]}]
        rec = {"type": role, "sessionId": SID, "cwd": "/home/u/notes", "uuid": uuid, "parentUuid": parent}
        rec |= {"timestamp": _stamp(date, 2 * i), "message": {"role": role, "content": content}}
        lines.append(rec)
        parent = uuid
        if role == "assistant" and i % 3 == 1:
            cmd, out = _tool(turn, i)
            tid = f"toolu_{SID}_{i}"
            use = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": cmd}}
            res = {"type": "tool_result", "tool_use_id": tid, "content": out}
            for k, (r, c) in enumerate((("assistant", [use]), ("user", [res]))):
                u = f"{SID}-u{i}t{k}"
                lines.append(
                    {"type": r, "sessionId": SID, "cwd": "/home/u/notes", "uuid": u, "parentUuid": parent}
                    | {"timestamp": _stamp(date, 2 * i + 1), "message": {"role": r, "content": c}}
                )
                parent = u
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines).encode()


def codex_template(date: str, turns: list[dict]) -> bytes:
    meta = {"id": SID, "timestamp": _stamp(date, 0), "cwd": "/home/u/notes", "originator": "codex_cli_rs"}
    lines = [{"timestamp": _stamp(date, 0), "type": "session_meta", "payload": meta}]
    for i, turn in enumerate(turns):
        role = turn["role"]
        part = {"type": "input_text" if role == "user" else "output_text", "text": turn["content"]}
        item = {"type": "message", "role": role, "content": [part]}
        lines.append({"timestamp": _stamp(date, 2 * i), "type": "response_item", "payload": item})
        if role == "assistant" and i % 3 == 1:
            cmd, out = _tool(turn, i)
            call = {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", cmd]}),
            }
            call["call_id"] = f"call_{i}"
            res = {"type": "function_call_output", "call_id": f"call_{i}", "output": out}
            for it in (call, res):
                lines.append({"timestamp": _stamp(date, 2 * i + 1), "type": "response_item", "payload": it})
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines).encode()


def write(home: Path, count: int, lme: Path = LME) -> dict:
    """Write `count` sessions under home/.claude/projects and home/.codex/sessions; returns a summary."""
    uniq = sessions(questions(lme))
    claude = [claude_template(d, t) for _, d, t in uniq]
    codex = [codex_template(d, t) for _, d, t in uniq]
    proj = home / ".claude" / "projects" / "-home-u-notes"
    proj.mkdir(parents=True, exist_ok=True)
    dirs: dict[str, Path] = {}
    size = 0
    for n in range(count):
        sid, date, _ = uniq[n % len(uniq)]
        new = f"{sid}~r{n // len(uniq)}" if n >= len(uniq) else sid
        # replica k of the pool alternates harness, so every original is present in both from 2 × pool
        if (n // len(uniq) + n) % 2 == 0:
            data, path = claude[n % len(uniq)], proj / f"{new}.jsonl"
        else:
            day = date[:10].replace("/", "-")
            d = dirs.get(day) or dirs.setdefault(day, home / ".codex" / "sessions" / day.replace("-", "/"))
            d.mkdir(parents=True, exist_ok=True)
            data, path = codex[n % len(uniq)], d / f"rollout-{day}T00-00-00-{new}.jsonl"
        blob = data.replace(SID.encode(), new.encode())
        path.write_bytes(blob)
        size += len(blob)
    return {"sessions": count, "unique": len(uniq), "bytes": size}
