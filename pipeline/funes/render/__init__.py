"""Values -> text. `agent` is the byte-stable contract of AGENTS.md (recall, get); `human` the terminal
view of get; `status` and `index` the two reports. Value in, str out: nothing here reads or prints.

The public functions are re-exported so callers can write `render.recall_agent(result)`.
"""

from __future__ import annotations

from funes.render.agent import escape, get_agent, get_command, preview, recall_agent, recall_json, unescape
from funes.render.human import get_human
from funes.render.index import index_summary
from funes.render.status import age, stamp, status_json, status_text

__all__ = [
    "age",
    "escape",
    "get_agent",
    "get_command",
    "get_human",
    "index_summary",
    "preview",
    "recall_agent",
    "recall_json",
    "stamp",
    "status_json",
    "status_text",
    "unescape",
]
