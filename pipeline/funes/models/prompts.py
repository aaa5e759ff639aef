"""The text an embedding model expects in front of queries and passages (e5: "query: " / "passage: ").

Asymmetric models are trained with a prefix on each side and lose much of their quality without
it; symmetric ones (MiniLM, the default) have none. The prefixes come from the model's own
`config_sentence_transformers.json` ("prompts": {"query": …, "passage"/"document": …}) and, for
the e5 family, whose older snapshots do not declare them, from the model card's rule. The same
Embedder embeds local chunks, remote memories' cached shards and queries, so every side agrees.
"""

from __future__ import annotations

import json
from pathlib import Path

E5 = ("query: ", "passage: ")


def prompts(folder: Path, model_id: str) -> tuple[str, str]:
    """(query prefix, passage prefix) for the model in `folder`; ("", "") for a symmetric model."""
    try:
        declared = json.loads((Path(folder) / "config_sentence_transformers.json").read_text()).get("prompts") or {}
    except (OSError, ValueError, AttributeError):
        declared = {}
    if isinstance(declared, dict) and declared.get("query"):
        return str(declared["query"]), str(declared.get("passage") or declared.get("document") or "")
    name = model_id.rstrip("/").rsplit("/", 1)[-1].lower()
    if name.startswith(("e5-", "multilingual-e5-")):
        return E5
    return "", ""
