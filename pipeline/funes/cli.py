"""argv -> one commands.* call -> render -> print; the single error boundary (FunesError -> one line)."""

from __future__ import annotations

import argparse
import os
import sys

from funes import __version__
from funes.errors import FunesError

HARNESSES = "claude|codex|pi|hermes"


def _progress_printer():
    """Progress on stderr: one rewritten line on a terminal, plain lines otherwise."""
    tty = sys.stderr.isatty()

    def show(msg: str, transient: bool = False) -> None:
        if tty:
            sys.stderr.write("\r\x1b[2K" + msg[:150] + ("" if transient else "\n"))
            sys.stderr.flush()
        elif not transient:
            print(msg, file=sys.stderr, flush=True)

    return show


def cmd_index(args) -> int:
    from funes.commands import index
    from funes.render_index import index_summary

    opts = index.Options(
        path=args.path, harness=args.harness, no_thinking=args.no_thinking, limit=args.limit,
        yes=args.yes, auto=args.auto, interactive=sys.stdin.isatty(), no_embed=args.no_embed,
    )
    show = _progress_printer()
    report = index.index(opts, progress=show)
    show("", True) if sys.stderr.isatty() else None
    sys.stdout.write(index_summary(report))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="funes", description="Local-first memory for coding agents.")
    p.add_argument("--version", action="version", version=f"funes {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    ix = sub.add_parser("index", help="index agent transcripts into the local memory")
    ix.add_argument("path", nargs="?", help="a transcript tree, one file, a state.db, or a Parquet trace export")
    ix.add_argument("--harness", metavar=HARNESSES, help="only this agent's sessions (or force the format of PATH)")
    ix.add_argument("--no-thinking", action="store_true", help="leave thinking blocks out")
    ix.add_argument("--limit", type=int, metavar="N", help="only the N most recent sessions per source")
    ix.add_argument("--yes", action="store_true", help="no time budget: store and embed everything now")
    ix.add_argument("--auto", action="store_true",
                    help="sweep every agent folder found (or the bundled samples when there is none)")
    ix.add_argument("--no-embed", action="store_true", help="store text only; vectors are backfilled later")
    ix.set_defaults(func=cmd_index)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except FunesError as e:
        print(f"funes: {e.message}", file=sys.stderr)
        if e.hint:
            print(f"  hint: {e.hint}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("funes: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
