"""argv -> one commands.* call -> render -> print; the single error boundary (FunesError -> one line)."""

from __future__ import annotations

import argparse
import errno
import os
import re
import signal
import sys

from funes import __version__, vocab
from funes.errors import FunesError, UsageError

HARNESSES = "|".join(vocab.CLI_NAMES.values())


def _progress_printer():
    """Progress on stderr: one rewritten line on a terminal, plain lines otherwise."""
    tty = sys.stderr.isatty()

    def show(msg: str, transient: bool = False) -> None:
        msg = _visible(msg)  # unit keys are file names: no escape sequence reaches the terminal
        if tty:
            sys.stderr.write("\r\x1b[2K" + msg[:150] + ("" if transient else "\n"))
            sys.stderr.flush()
        elif not transient:
            print(msg, file=sys.stderr, flush=True)

    return show


def _visible(text: str) -> str:
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else "?" for c in text)


def index_imports(no_embed: bool) -> None:
    """What `funes index` does before it imports anything else. Without vectors nothing on its
    path converts Arrow to pandas and nothing imports pandas but pyarrow's probe for it (on its
    first array), ~0.4 s of every run (bench/README.md "## Day zero"), so that probe finds none.
    A run that embeds keeps pandas: datasets.map imports it and works with it."""
    if no_embed:
        from funes.memory.lance import import_for_reading

        import_for_reading()


def cmd_index(args) -> int:
    index_imports(args.no_embed)
    from funes.commands import index
    from funes.render import index_summary

    opts = index.Options(
        path=args.path,
        harness=args.harness,
        no_thinking=args.no_thinking,
        limit=args.limit,
        yes=args.yes,
        auto=args.auto,
        interactive=sys.stdin.isatty(),
        no_embed=args.no_embed,
        engine=args.engine,
        address=args.address,
        num_cpus=args.num_cpus,
        progress_bars=sys.stderr.isatty(),
    )
    show = _progress_printer()
    report = index.index(opts, progress=show)
    show("", True) if sys.stderr.isatty() else None
    sys.stdout.write(index_summary(report))
    return 0


def cmd_repair(args) -> int:
    from funes.commands.repair import repair

    done = repair(args.memory)
    sys.stdout.write("".join(f"repaired: {line}\n" for line in done) or "nothing to repair\n")
    return 0


def cmd_recall(args) -> int:
    from funes.memory.lance import import_for_reading

    import_for_reading()  # first: before anything below imports lance
    from funes import render
    from funes.commands.recall import recall

    result = recall(
        " ".join(args.query),
        memory=args.memory,
        k=args.k,
        candidates=args.candidates,
        half_life=args.half_life,
        recency_floor=args.recency_floor,
        tool_prior=args.tool_prior,
        thinking_prior=args.thinking_prior,
        bridge_weight=args.bridge,
        neighbors=args.neighbors,
        block_type=args.type,
        harness=args.harness,
        progress=_progress_printer(),
    )
    sys.stdout.write(render.recall_json(result) if args.json else render.recall_agent(result))
    return 0


def cmd_get(args) -> int:
    from funes.memory.lance import import_for_reading

    import_for_reading()
    from funes import render
    from funes.commands.get import get

    result = get(args.session_id, args.turn_uuid, memory=args.memory, window=args.window, progress=_progress_printer())
    human = args.format == "human" or (args.format is None and sys.stdin.isatty() and sys.stdout.isatty())
    if human:
        width = min(max(_int_env("COLUMNS", 100), 40), 120)
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        sys.stdout.write(render.get_human(result, width=width, color=color, highlight=args.highlight))
    else:
        sys.stdout.write(render.get_agent(result))
    return 0


def cmd_status(args) -> int:
    from funes import render
    from funes.commands.status import status

    st = status(args.memory or args.memory_pos, progress=_progress_printer())
    sys.stdout.write(render.status_json(st) if args.json else render.status_text(st))
    return 0


def cmd_add(args) -> int:
    from funes.commands.add import add, plan_for
    from funes.render.agents import LABELS, add_report

    plan = plan_for(args.agent, args.memory, args.url)  # bad names fail before any question
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(
                f"funes add {plan.agent} edits {LABELS[plan.agent]}'s config and may index its sessions",
                f"re-run with --yes: funes add {plan.agent} --yes",
            )
        if not _confirm(f"index your {LABELS[plan.agent]} sessions (about a minute) and register funes with it?"):
            print("nothing was changed", file=sys.stderr)
            return 1
    result = add(
        args.agent,
        args.memory,
        url=args.url,
        approve=not args.no_approve,
        seed=not args.no_index,
        progress=_progress_printer(),
    )
    sys.stdout.write(add_report(result))
    return 0


def cmd_bind(args) -> int:
    from funes.commands.bind import bind
    from funes.render.agents import add_report

    for result in bind(args.memory):
        body = "".join(f"  {line}\n" for line in add_report(result).splitlines())
        sys.stdout.write(f"{result.report.agent}:\n{body}")
    return 0


def cmd_curate(args) -> int:
    from funes.commands import curate
    from funes.render import curation as view

    include, exclude = args.include or [], args.exclude or []
    # on a terminal with nothing decided by flags: review session by session; elsewhere never ask
    interactive = not include and not exclude and sys.stdin.isatty()
    if interactive:
        done = curate.review(args.remote, args.repo, _read_answer, _say)
        sys.stdout.write(view.review_summary(done))
    p = curate.curate(args.remote, args.repo, include, exclude)
    sys.stdout.write(view.summary(len(p.ship), len(p.undecided) + len(p.grown), len(p.grown), len(p.excluded)))
    if not interactive:
        sys.stdout.write(view.waiting_list(args.remote, curate.waiting(args.remote)))
    return 0


def _read_answer(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        sys.stdout.write("\n")
        return None


def _say(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def cmd_ask(args) -> int:
    from funes.commands.ask import ask

    sys.stdout.write(ask(args.agent, " ".join(args.question), memory=args.memory, progress=_progress_printer()))
    return 0


def cmd_remove(args) -> int:
    from funes.commands.remove import remove
    from funes.render.agents import remove_report

    report = remove(args.agent)
    sys.stdout.write(remove_report(report))
    if report.errors:
        raise FunesError(
            report.errors[0], "remove the funes entries from that file by hand, then re-run `funes remove`"
        )
    return 0


def cmd_hook(args) -> int:
    try:
        from funes.commands.hook import fire

        fire(args.agent, args.event, args.session_file)
    except Exception:  # a hook never fails the agent's turn (fire() logs its own errors)
        pass
    return 0


def cmd_sync(args) -> int:
    from funes.commands.sync import run

    return run()


def cmd_mcp(args) -> int:
    from funes.mcp import run_stdio

    run_stdio(args.memory, backend=args.backend)
    return 0


def cmd_serve(args) -> int:
    from funes.serve import serve

    return serve(port=args.port, idle=args.idle)


def _confirm(question: str) -> bool:
    print(f"{question} [Y/n] ", end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline().strip().lower()
    except (OSError, KeyboardInterrupt):
        return False
    return answer in ("", "y", "yes")


def cmd_publish(args) -> int:
    if not sys.stderr.isatty():  # huggingface_hub's upload bars are for terminals; logs get our lines only
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from funes.commands import publish
    from funes.render.publish import publish_summary

    target = args.memory or os.environ.get("FUNES_REMOTE", "").strip()
    if not target:
        raise UsageError("publish needs a Hub dataset: funes publish owner/name", "or set FUNES_REMOTE=owner/name")
    opts = publish.Options(
        memory=target,
        source=args.source,
        create=args.create,
        no_embed=args.no_embed,
        confirm=_ask if sys.stdin.isatty() and sys.stderr.isatty() and not args.yes else None,
    )
    show = _progress_printer()
    report = publish.publish(opts, progress=show)
    show("", True) if sys.stderr.isatty() else None
    sys.stdout.write(publish_summary(report))
    return report.exit_code


def cmd_scrub(args) -> int:
    from funes.commands.scrub import scrub
    from funes.render.scrub import scrub_summary

    show = _progress_printer()
    report = scrub(args.memory, progress=show)
    show("", True) if sys.stderr.isatty() else None
    sys.stdout.write(scrub_summary(report))
    return 0


def _ask(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _int_env(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="funes", description="Local-first memory for coding agents.")
    p.add_argument("--version", action="version", version=f"funes {__version__}")
    p.add_argument("--home", metavar="DIR", help="use DIR as FUNES_HOME (agents' hooks and servers pass it)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for add in (
        _add_index,
        _add_recall,
        _add_get,
        _add_status,
        _add_publish,
        _add_scrub,
        _add_repair,
        _add_agent_commands,
    ):
        add(sub)
    return p


def _memory_option(
    p: argparse.ArgumentParser,
    help: str = "local, a path, owner/name or hf://datasets/owner/name[@rev] (default: local)",
    metavar: str = "MEMORY",
) -> None:
    p.add_argument("--memory", metavar=metavar, help=help)


def _harness_option(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--harness", metavar=HARNESSES, help=help)


def _add_index(sub) -> None:
    ix = sub.add_parser("index", help="index agent transcripts into the local memory")
    ix.add_argument(
        "path",
        nargs="?",
        help="a transcript tree, one file, a state.db, a Parquet trace export, or a Hub agent-traces dataset "
        "(owner/name or hf://datasets/owner/name)",
    )
    _harness_option(ix, "only this agent's sessions (or force the format of PATH)")
    ix.add_argument("--no-thinking", action="store_true", help="leave thinking blocks out")
    ix.add_argument("--limit", type=int, metavar="N", help="only the N most recent sessions per source")
    ix.add_argument("--yes", action="store_true", help="no time budget: store and embed everything now")
    ix.add_argument(
        "--auto", action="store_true", help="sweep every agent folder found (or the bundled samples when there is none)"
    )
    ix.add_argument("--no-embed", action="store_true", help="store text only; vectors are backfilled later")
    ix.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="where the stages run: this process (default) or a Ray cluster (pip install 'funes[ray]')",
    )
    ix.add_argument(
        "--address", metavar="ADDR", help="with --engine ray: the cluster to join (default: start one here)"
    )
    ix.add_argument("--num-cpus", type=int, metavar="N", help="with --engine ray: CPUs of the local cluster it starts")
    ix.set_defaults(func=cmd_index)


def _add_recall(sub) -> None:
    rc = sub.add_parser("recall", help="recall passages from past agent sessions (agent format)")
    rc.add_argument("query", nargs="*", help="what to recall, in free text")
    rc.add_argument("-k", "--k", type=int, default=8, help="number of hits (default 8)")
    rc.add_argument("--candidates", type=int, default=30, help="fused pool the reranker sees (default 30)")
    rc.add_argument(
        "--half-life",
        type=float,
        default=30.0,
        metavar="DAYS",
        help="recency half-life in days; <= 0 turns recency off (default 30)",
    )
    rc.add_argument(
        "--recency-floor",
        type=float,
        default=0.98,
        metavar="F",
        help="share of its score the oldest hit keeps (default 0.98; 0 = the original's pure decay)",
    )
    rc.add_argument(
        "--tool-prior",
        type=float,
        default=0.4,
        metavar="P",
        help="weight of tool calls and tool output against prose of equal relevance, unless the query names output "
        "(an error, a log; default 0.4; 1 = none)",
    )
    rc.add_argument(
        "--thinking-prior",
        type=float,
        default=0.9,
        metavar="P",
        help="weight of thinking blocks against text of equal relevance (default 0.9; 1 = none)",
    )
    rc.add_argument(
        "--bridge",
        type=float,
        default=0.5,
        metavar="W",
        help="weight of the Chinese and Japanese renderings of an English query's words, and the reverse, in the "
        "keyword search (default 0.5; 0 = none)",
    )
    rc.add_argument("--neighbors", type=int, default=1, metavar="W", help="attach chunks within W seqs (default 1)")
    rc.add_argument("--type", choices=vocab.BLOCK_TYPES, help="only this block type")
    _harness_option(rc, "only this agent's sessions")
    _memory_option(
        rc,
        "local, a path, owner/name or hf://datasets/owner/name[@rev]; comma-separated memories are "
        "recalled as one ranking (default: local)",
        "MEMORY[,MEMORY…]",
    )
    rc.add_argument("--json", action="store_true", help="one JSON document instead of the agent format")
    rc.set_defaults(func=cmd_recall)


def _add_get(sub) -> None:
    gt = sub.add_parser("get", help="reopen the turns around one recalled turn")
    gt.add_argument("session_id")
    gt.add_argument("turn_uuid")
    gt.add_argument("--window", type=int, default=3, help="turns either side, by seq (default 3)")
    _memory_option(gt, "the memory named by the hit's → get line")
    gt.add_argument("--format", choices=("human", "agent"), help="default: human on a terminal, else agent")
    gt.add_argument("--highlight", metavar="TEXT", help="mark where TEXT first occurs (human format)")
    gt.set_defaults(func=cmd_get)


def _add_repair(sub) -> None:
    rp = sub.add_parser("repair", help="bring a damaged memory back to its last intact version (deletes nothing)")
    _memory_option(rp)
    rp.set_defaults(func=cmd_repair)


def _add_status(sub) -> None:
    st = sub.add_parser("status", help="what the memory holds and how fresh its indexes are")
    st.add_argument("memory_pos", nargs="?", metavar="MEMORY", help=argparse.SUPPRESS)
    _memory_option(st)
    st.add_argument("--json", action="store_true", help="machine-readable")
    st.set_defaults(func=cmd_status)


def _add_agent_commands(sub) -> None:
    agents = "claude|codex|hermes|pi"
    ad = sub.add_parser("add", help="register funes with an agent: MCP server, per-turn hooks, recall skill")
    ad.add_argument("agent", metavar=agents)
    ad.add_argument("memory", nargs="?", help="local (default), a PATH, or a Hub dataset owner/name to publish to")
    ad.add_argument("--yes", action="store_true", help="no questions (scripts)")
    ad.add_argument("--no-index", action="store_true", help="skip the first index of the agent's sessions")
    ad.add_argument("--no-approve", action="store_true", help="Hermes: leave approving the funes hooks to Hermes")
    ad.add_argument("--url", help="register a running `funes serve --port N` (http://127.0.0.1:N/mcp) instead")
    ad.set_defaults(func=cmd_add)

    bd = sub.add_parser("bind", help="point every registered agent (and its session-end publish) at MEMORY")
    bd.add_argument("memory", help="a Hub dataset owner/name, a PATH, or `local` to unbind")
    bd.set_defaults(func=cmd_bind)

    cu = sub.add_parser("curate", help="make a Hub memory a repository's project memory; only included sessions ship")
    cu.add_argument("remote", help="the Hub memory owner/name")
    cu.add_argument("repo", nargs="?", help="the repository it is the project memory of (owner/name)")
    cu.add_argument("--include", action="append", metavar="SESSION", help="reviewed: publish this session")
    cu.add_argument("--exclude", action="append", metavar="SESSION", help="never publish this session")
    cu.set_defaults(func=cmd_curate)

    ak = sub.add_parser("ask", help="a grounded answer: recalled passages, answered and cited by claude or codex")
    ak.add_argument("agent", metavar="claude|codex")
    ak.add_argument("question", nargs="+")
    ak.add_argument("--memory", help="the memory to recall from (default: local)")
    ak.set_defaults(func=cmd_ask)

    rm = sub.add_parser("remove", help="undo `funes add` exactly (memories are never touched)")
    rm.add_argument("agent", metavar=agents)
    rm.set_defaults(func=cmd_remove)

    mc = sub.add_parser("mcp", help="MCP server on stdio (what agents run): tools recall, get, status")
    mc.add_argument("memory", nargs="?", help="default memory for the tools (default: local)")
    mc.add_argument(
        "--backend",
        choices=("auto", "local", "shared"),
        default="auto",
        help="auto (default): the shared `funes serve`, started on demand; shared: only a running one; local: in-process",
    )
    mc.set_defaults(func=cmd_mcp)

    sv = sub.add_parser("serve", help="the shared model process every `funes mcp` talks to (started on demand)")
    sv.add_argument("--port", type=int, help="also serve MCP on http://127.0.0.1:PORT/mcp for URL-configured agents")
    sv.add_argument(
        "--idle", type=float, metavar="MIN", help="exit after MIN idle minutes (default 20; never with --port)"
    )
    sv.set_defaults(func=cmd_serve)

    hk = sub.add_parser("hook", help="what agents' hooks run: queue the event, return at once")
    hk.add_argument("agent")
    hk.add_argument("event")
    hk.add_argument("--session-file", help=argparse.SUPPRESS)
    hk.set_defaults(func=cmd_hook)

    sy = sub.add_parser("sync", help="drain queued hook events into the memory (started by hooks)")
    sy.set_defaults(func=cmd_sync)


def _add_publish(sub) -> None:
    for name in ("publish", "push"):
        doc = "publish the local memory to a private Hugging Face dataset" if name == "publish" else "alias of publish"
        pb = sub.add_parser(name, help=doc)
        pb.add_argument(
            "memory",
            nargs="?",
            metavar="MEMORY",
            help="owner/name or hf://datasets/owner/name (default: $FUNES_REMOTE)",
        )
        pb.add_argument("--create", action="store_true", help="create the repo (private) when it does not exist")
        pb.add_argument("--yes", "-y", action="store_true", help="ask nothing (a missing repo still needs --create)")
        pb.add_argument("--no-embed", action="store_true", help="publish only what is embedded; say how many wait")
        pb.add_argument(
            "--from", dest="source", metavar="local|PATH", help="the local memory to publish (default: local)"
        )
        pb.set_defaults(func=cmd_publish)


def _add_scrub(sub) -> None:
    sc = sub.add_parser("scrub", help="redact in place every secret the publish gate finds (local memory only)")
    _memory_option(sc)
    sc.set_defaults(func=cmd_scrub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.home:
        os.environ["FUNES_HOME"] = str(os.path.abspath(os.path.expanduser(args.home)))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    # a hook runner's timeout sends SIGTERM: unwind like Ctrl-C, so locks, temp dirs and the
    # scanner child are cleaned up instead of the process vanishing mid-write
    signal.signal(signal.SIGTERM, _terminated)
    try:
        return args.func(args)
    except FunesError as e:
        return _refuse(e.message, e.hint, e.exit_code)
    except KeyboardInterrupt:
        from funes.scan import scratch

        scratch.remove_own()
        print("funes: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:  # the file system said no: full disk, read-only, a folder where a file goes
        return _refuse(*_os_error(e))
    except BaseException as e:  # a Rust panic in Lance or faiss surfaces as its own BaseException
        if type(e).__name__ != "PanicException":
            raise
        return _refuse(
            f"the memory could not be read ({type(e).__name__}: {str(e).splitlines()[0][:160]})",
            "run `funes status` to see what is damaged, then `funes repair`",
        )


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt


def _refuse(message: str, hint: str | None, code: int = 1) -> int:
    print(f"funes: {_one_line(message)}", file=sys.stderr)
    if hint:
        print(f"  hint: {_one_line(hint)}", file=sys.stderr)
    return code


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


_OS_HINTS = {
    errno.ENOSPC: "free some space, then run the command again (what was stored stays readable)",
    errno.EDQUOT: "free some space, then run the command again (what was stored stays readable)",
    errno.EROFS: "the memory is on a read-only file system: point FUNES_HOME at a writable folder",
    errno.EACCES: "check the permissions of FUNES_HOME (or point it at a folder you own)",
    errno.EPERM: "check the permissions of FUNES_HOME (or point it at a folder you own)",
    errno.EISDIR: "a folder sits where funes keeps a file: move it aside",
    errno.ENOTDIR: "a file sits where funes keeps a folder: move it aside",
    errno.EEXIST: "a file sits where funes keeps a folder: move it aside",
}


def _os_error(e: OSError) -> tuple[str, str]:
    code = e.errno
    text = e.strerror or str(e)
    if code is None:  # Lance reports I/O failures as OSError("LanceError(IO): ... (os error 28)")
        found = re.search(r"os error (\d+)", str(e))
        code = int(found.group(1)) if found else None
        text = os.strerror(code) if code else str(e).split(",")[0][:160]
    where = f": {e.filename}" if getattr(e, "filename", None) else ""
    hint = (
        _OS_HINTS.get(code, "check FUNES_HOME and the disk it is on")
        if code
        else "check FUNES_HOME and the disk it is on"
    )
    return f"{text}{where}", hint


if __name__ == "__main__":
    sys.exit(main())
