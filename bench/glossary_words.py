"""The candidate words of funes's cross-lingual glossary (pipeline/funes/retrieval/glossary.tsv).

    .venv/bin/python bench/glossary_words.py --home /tmp/devhome [--top 800] > words.txt

HOME is a FUNES_HOME whose memory holds the ../shared/corpus (e.g. the one `bench/devset_eval.py
--home HOME` keeps). The words: lowercase runs of 3+ letters in every stored chunk (all block types, all
sessions), counted once per chunk, stopwords and question framing words (memory/tokenize.py) out, one
word per stem (its most common form), the TOP most common. The rule was fixed before the list was
read; the glossary then holds every listed word with a settled technical rendering (names, code
identifiers and function words left out). The dev set's questions play no part in it.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path


def words(home: Path, top: int) -> list[str]:
    import lance

    from funes.memory import tokenize as tk

    table = lance.dataset(str(home / "memory" / "chunks.lance")).to_table(columns=["text"])
    df: Counter[str] = Counter()
    for text in table.column("text").to_pylist():
        df.update(set(re.findall(r"[a-z]{3,}", text.lower())))
    drop = tk.STOPWORDS | tk.SCAFFOLD
    stems: set[str] = set()
    out: list[str] = []
    for word, _ in df.most_common():
        stem = tk.query_terms(word)
        if word in drop or not stem or stem[0] in stems:
            continue
        stems.add(stem[0])
        out.append(word)
        if len(out) == top:
            break
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--top", type=int, default=800)
    args = p.parse_args(argv)
    sys.stdout.write("\n".join(words(args.home, args.top)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
