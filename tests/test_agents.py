"""funes add / remove for every agent in a temporary HOME that already holds the user's own configs."""

from __future__ import annotations

import json
import tomllib

import pytest
from ruamel.yaml import YAML

from agent_configs import USER_FILES, funes, snapshot, write_user_configs

AGENTS = ("claude", "codex", "hermes", "pi")


@pytest.fixture
def home(funes_home, monkeypatch):
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME", "PI_CODING_AGENT_DIR", "FUNES_BIN"):
        monkeypatch.delenv(var, raising=False)
    write_user_configs(funes_home.parent)
    return funes_home.parent


def _add(home, agent, *extra):
    out = funes(home / ".funes", "add", agent, *extra, "--yes", "--no-index")
    assert out.returncode == 0, out.stderr
    return out


def _funes_entries(home) -> dict[str, int]:
    """How many funes registrations each agent's files hold (MCP servers and hooks)."""
    codex_cfg = tomllib.loads((home / ".codex/config.toml").read_text())
    codex_hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    hermes = YAML().load((home / ".hermes/config.yaml").read_text())
    pi = json.loads((home / ".pi/agent/mcp.json").read_text())
    claude_hooks = json.loads((home / ".claude/skills/funes/hooks/hooks.json").read_text())["hooks"]
    funes_hooks = lambda groups: sum(" hook " in json.dumps(g) or '"hook"' in json.dumps(g) for g in groups)  # noqa: E731
    return {
        "codex mcp": int("funes" in codex_cfg["mcp_servers"]),
        "codex Stop": funes_hooks(codex_hooks["Stop"]),
        "codex SessionEnd": funes_hooks(codex_hooks["SessionEnd"]),
        "hermes mcp": int("funes" in hermes["mcp_servers"]),
        "hermes post_llm_call": funes_hooks(hermes["hooks"]["post_llm_call"]),
        "pi mcp": int("funes" in pi["mcpServers"]),
        "claude Stop": funes_hooks(claude_hooks["Stop"]),
    }


def test_add_twice_is_one_entry_each_and_changes_nothing(home):
    for agent in AGENTS:
        _add(home, agent)
    first = snapshot(home)
    assert set(_funes_entries(home).values()) == {1}
    for agent in AGENTS:
        out = _add(home, agent)
        assert "nothing changed" in out.stdout
    assert snapshot(home) == first
    # user entries survived next to funes's
    cfg = (home / ".codex/config.toml").read_text()
    assert "# my codex config" in cfg and "[mcp_servers.context7]" in cfg and "# docs server" in cfg
    assert '\n\n[projects."/home/ada/x"]' in cfg  # layout kept around the inserted table
    hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["command"] == "notify-send done" and "PreToolUse" in hooks
    yml = (home / ".hermes/config.yaml").read_text()
    assert "# hermes config" in yml and "# main model" in yml and "github:" in yml and "audit.sh" in yml
    assert json.loads((home / ".pi/agent/mcp.json").read_text())["mcpServers"]["other"]["args"] == ["--x"]
    assert (home / ".claude/settings.json").read_text() == USER_FILES[".claude/settings.json"]  # never edited


def test_remove_restores_the_original_bytes(home):
    before = snapshot(home)
    for agent in AGENTS:
        _add(home, agent)
    for agent in AGENTS:
        out = funes(home / ".funes", "remove", agent)
        assert out.returncode == 0, out.stderr
    assert snapshot(home) == before  # files funes created are gone, edited ones byte-identical
    again = funes(home / ".funes", "remove", "codex")
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_remove_after_user_edits_keeps_them(home):
    for agent in ("codex", "hermes", "pi"):
        _add(home, agent)
    with open(home / ".codex/config.toml", "a") as f:
        f.write('\n[profiles.fast]\nmodel = "o4-mini"\n')
    yml = home / ".hermes/config.yaml"
    yml.write_text(yml.read_text().replace("gpt-5", "gpt-6"))
    pi = home / ".pi/agent/mcp.json"
    doc = json.loads(pi.read_text())
    doc["mcpServers"]["mine"] = {"command": "mine"}
    pi.write_text(json.dumps(doc))
    for agent in ("codex", "hermes", "pi"):
        assert funes(home / ".funes", "remove", agent).returncode == 0
    cfg = (home / ".codex/config.toml").read_text()
    assert "funes" not in cfg and "[profiles.fast]" in cfg and "context7" in cfg and "# docs server" in cfg
    text = yml.read_text()
    assert "funes" not in text and "gpt-6   # main model" in text and "audit.sh" in text
    assert set(json.loads(pi.read_text())["mcpServers"]) == {"other", "mine"}
    assert "funes" not in (home / ".hermes/shell-hooks-allowlist.json").read_text()


@pytest.mark.parametrize(
    ("agent", "rel", "bad"),
    [
        ("codex", ".codex/config.toml", "[mcp_servers\nbroken = "),
        ("codex", ".codex/hooks.json", "{not json"),
        ("hermes", ".hermes/config.yaml", "model: [unclosed\n"),
        ("hermes", ".hermes/shell-hooks-allowlist.json", "[1, 2]"),
        ("pi", ".pi/agent/mcp.json", '{"mcpServers": '),
    ],
)
def test_malformed_user_config_is_never_overwritten(home, agent, rel, bad):
    path = home / rel
    path.write_text(bad)
    before = snapshot(home)
    out = funes(home / ".funes", "add", agent, "--yes", "--no-index")
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("funes: ") and str(path) in lines[0] and "Traceback" not in out.stderr
    assert lines[1].startswith("  hint: ")
    assert snapshot(home) == before  # no file of that agent was written, not even the valid ones


def test_remove_with_a_malformed_file_fails_cleanly_and_undoes_the_rest(home):
    _add(home, "codex")
    (home / ".codex/config.toml").write_text("[broken\n")
    out = funes(home / ".funes", "remove", "codex")
    assert out.returncode == 1 and "config.toml" in out.stderr and "Traceback" not in out.stderr
    assert (home / ".codex/config.toml").read_text() == "[broken\n"
    assert json.loads((home / ".codex/hooks.json").read_text()) == json.loads(USER_FILES[".codex/hooks.json"])


def test_hub_memory_adds_session_start_and_local_drops_it(home):
    _add(home, "codex", "acme/mem")
    hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert "SessionStart" in hooks and hooks["SessionEnd"][0]["hooks"][0]["statusMessage"] == "Publishing funes memory"
    assert json.loads((home / ".funes/integrations/codex.json").read_text())["memory"] == "acme/mem"
    cfg = tomllib.loads((home / ".codex/config.toml").read_text())
    # recall reads the local memory it publishes and the Hub memory, as one ranking
    assert cfg["mcp_servers"]["funes"]["args"][-2:] == ["mcp", "local,acme/mem"]
    _add(home, "codex", "hf://datasets/acme/mem")  # the same memory, spelled as a URI: nothing moves
    stop_position = [g["hooks"][0]["command"] for g in hooks["Stop"]]
    _add(home, "codex", "local")
    hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert "SessionStart" not in hooks
    assert [g["hooks"][0]["command"] for g in hooks["Stop"]] == stop_position  # trust keys are positional
    claude = _add(home, "claude", "acme/mem")
    assert "publish" in claude.stdout
    assert "SessionStart" in json.loads((home / ".claude/skills/funes/hooks/hooks.json").read_text())["hooks"]


def test_the_original_funes_integration_is_replaced_not_doubled(home):
    legacy_cmd = 'bash "/home/ada/.codex/hooks/funes-index.sh" "codex"'
    doc = json.loads(USER_FILES[".codex/hooks.json"])
    doc["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": legacy_cmd, "timeout": 15}]})
    (home / ".codex/hooks.json").write_text(json.dumps(doc, indent=2))
    scripts = home / ".codex/hooks"
    scripts.mkdir()
    (scripts / "funes-index.sh").write_text("#!/bin/bash\n")
    yml = home / ".hermes/config.yaml"
    yml.write_text(
        yml.read_text()
        + '  post_llm_call:\n  - command: bash "/x/.hermes/hooks/funes-index.sh" "hermes"\n    timeout: 30\n'
    )
    _add(home, "codex")
    _add(home, "hermes")
    stop = json.loads((home / ".codex/hooks.json").read_text())["hooks"]["Stop"]
    assert len(stop) == 2 and " hook codex Stop" in stop[0]["hooks"][0]["command"]  # in the old one's place
    assert stop[1]["hooks"][0]["command"] == "notify-send done"
    assert not scripts.exists()
    hooks = YAML().load(yml.read_text())["hooks"]["post_llm_call"]
    assert len(hooks) == 1 and "hook hermes post_llm_call" in hooks[0]["command"]


def test_bad_agent_and_bad_memory_are_one_line_errors(home):
    for args in (("add", "cursor", "--yes"), ("remove", "cursor"), ("add", "codex", "hf://datasets/nope", "--yes")):
        out = funes(home / ".funes", *args)
        assert out.returncode == 2 and out.stderr.startswith("funes: ") and "Traceback" not in out.stderr


def test_add_without_yes_off_a_terminal_changes_nothing(home):
    before = snapshot(home)
    out = funes(home / ".funes", "add", "codex")
    assert out.returncode == 2 and "--yes" in out.stderr
    assert snapshot(home) == before


def test_add_seeds_the_first_index_of_that_agents_sessions(home):
    import shutil

    from mcp_support import SAMPLES

    shutil.copytree(SAMPLES / "claude", home / ".claude" / "projects")
    out = funes(home / ".funes", "add", "claude", "--yes", timeout=300, FUNES_INDEX_BUDGET="120")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("indexed ") and "from 1 sessions" in out.stdout.splitlines()[0]
    status = json.loads(funes(home / ".funes", "status", "--json").stdout)
    assert status["by_harness"] == {"claude_code": status["chunks"]} and status["chunks"] > 0
    again = funes(home / ".funes", "add", "claude", "--yes")
    assert again.stdout.startswith("funes is already registered")  # no second seed, no change
    codex = funes(home / ".funes", "add", "codex", "--yes")
    assert codex.returncode == 0 and "no first index: no codex session dir" in codex.stdout


def test_url_registration_for_a_running_funes_serve(home):
    url = "http://127.0.0.1:8765/mcp"
    for agent in ("claude", "codex", "hermes", "pi"):
        _add(home, agent, "--url", url)
    assert json.loads((home / ".claude/skills/funes/.mcp.json").read_text())["mcpServers"]["funes"] == {
        "type": "http",
        "url": url,
    }
    assert tomllib.loads((home / ".codex/config.toml").read_text())["mcp_servers"]["funes"] == {"url": url}
    assert YAML().load((home / ".hermes/config.yaml").read_text())["mcp_servers"]["funes"]["url"] == url
    assert json.loads((home / ".pi/agent/mcp.json").read_text())["mcpServers"]["funes"]["url"] == url
    bad = funes(home / ".funes", "add", "codex", "--url", "http://example.com/mcp", "--yes")
    assert bad.returncode == 2 and "loopback" in bad.stderr


def test_the_original_claude_and_pi_installs_are_unregistered(home, tmp_path):
    legacy = home / ".funes" / "integrations"
    (legacy / "claude-plugin" / ".claude-plugin").mkdir(parents=True)
    (legacy / "claude-plugin" / ".claude-plugin" / "marketplace.json").write_text('{"name": "huggingface"}')
    (legacy / "pi").mkdir()
    (legacy / "pi" / "index.ts").write_text("// bridge\n")
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"funes": {"command": "funes", "args": ["mcp"]}}}))
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    for name in ("claude", "pi"):
        version = 'if [ "$1" = --version ]; then echo "2.1.100 (Claude Code)"; exit 0; fi\n'
        (bin_dir / name).write_text(f'#!/bin/sh\n{version}echo "{name} $*" >> {calls}\n')
        (bin_dir / name).chmod(0o755)
    path = f"{bin_dir}:/usr/bin:/bin"
    for agent in ("claude", "pi"):
        out = funes(home / ".funes", "add", agent, "--yes", "--no-index", PATH=path)
        assert out.returncode == 0, out.stderr
        assert "the original funes's integration" in out.stdout
        assert ("older than 2.1.157" in out.stdout) is (agent == "claude")
    assert calls.read_text().splitlines() == [
        "claude plugin uninstall funes@huggingface",
        "claude plugin marketplace remove huggingface",
        "claude mcp remove funes -s user",
        f"pi remove {legacy / 'pi'}",
    ]
    assert not (legacy / "claude-plugin").exists() and not (legacy / "pi").exists()


def test_without_the_agent_cli_the_manual_commands_are_printed(home):
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"funes": {"command": "funes"}}}))
    out = funes(home / ".funes", "add", "claude", "--yes", "--no-index", PATH="/usr/bin:/bin")
    assert out.returncode == 0, out.stderr
    assert "`claude` isn't on PATH; run these yourself:\n  claude mcp remove funes -s user" in out.stdout


def test_hermes_no_approve_leaves_consent_to_hermes(home):
    allow = home / ".hermes/shell-hooks-allowlist.json"
    original = allow.read_bytes()
    out = _add(home, "hermes", "--no-approve")
    assert "not pre-approved" in out.stdout
    assert allow.read_bytes() == original  # the user's approvals only
    _add(home, "hermes")  # approving later, then withdrawing it again with a re-run
    assert "hook hermes post_llm_call" in allow.read_text()
    _add(home, "hermes", "--no-approve")
    assert "hook hermes" not in allow.read_text() and "audit.sh" in allow.read_text()
    assert funes(home / ".funes", "remove", "hermes").returncode == 0
    assert allow.read_bytes() == original


def test_bind_repoints_every_integration_and_bind_local_restores_them(home):
    _add(home, "claude")
    _add(home, "codex")
    local = snapshot(home)
    out = funes(home / ".funes", "bind", "acme/mem")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("claude:\n") and "\ncodex:\n" in out.stdout and "hermes" not in out.stdout
    for agent in ("claude", "codex"):
        doc = json.loads((home / f".funes/integrations/{agent}.json").read_text())
        assert (doc["memory"], doc["kind"]) == ("acme/mem", "hub")  # what the session-end sync publishes to
    codex_hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert codex_hooks["SessionEnd"][0]["hooks"][0]["statusMessage"] == "Publishing funes memory"
    assert "SessionStart" in codex_hooks
    assert "SessionStart" in json.loads((home / ".claude/skills/funes/hooks/hooks.json").read_text())["hooks"]
    assert not (home / ".hermes/config.yaml").read_text().count("funes")  # never added: bind leaves it alone
    back = funes(home / ".funes", "bind", "local")
    assert back.returncode == 0, back.stderr
    assert snapshot(home) == local


def test_bind_without_integrations_or_with_a_bad_memory_is_one_line(home):
    out = funes(home / ".funes", "bind", "acme/mem")
    assert out.returncode != 0 and out.stderr.startswith("funes: ") and "Traceback" not in out.stderr
    _add(home, "codex")
    before = snapshot(home)
    bad = funes(home / ".funes", "bind", "hf://datasets/nope")
    assert bad.returncode != 0 and bad.stderr.startswith("funes: ") and snapshot(home) == before
