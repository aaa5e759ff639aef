"""funes: a local-first memory for coding agents.

The flow in one paragraph: `traces/` turns each agent's transcripts (Claude Code, Codex, pi,
Hermes, Parquet trace exports) into one canonical turn/block table (schemas/turns.json), as
column lists or an Arrow table;
`ingest/` chunks, redacts and embeds those rows as pure stages over Arrow batches, called in
turn by ingest/run.py (the chunk stages straight over Arrow slices, the embed stage as a
`datasets.map`; a large run's secret scan runs whole in one worker process, `scan/remote.py` and
`scan/worker.py`, so that it takes the other core); `memory/` appends the chunk rows to an append-only Lance dataset
(memory/chunks.lance, vectors in memory/vectors.lance so text is searchable before it is
embedded) and keeps the faiss + bm25s indexes fresh incrementally; `retrieval/` fuses vector and
BM25 legs (the lexical one bridged to Chinese and Japanese, `retrieval/bridge.py`), reranks, weighs
recency and block type, and attaches neighbours; `commands/` decide what to do and
return values (typed in results.py); `render/` turns values into text and `cli.py` prints it;
`mcp.py` serves the same answers to agents as MCP tools, `serve.py` is the one shared process
holding the models, and `agents/` registers funes with each agent (`funes add` / `remove`).
Publishing (`commands/publish.py`) mirrors the embedded rows as Parquet shards to a private Hub
dataset (`memory/mirror.py`, `memory/card.py`, transport in `hub.py`) behind the fail-closed
egress gate (`commands/gate.py`); `commands/scrub.py` is the one audited rewrite of the memory.

Layers, top to bottom (a module imports only from layers below; `make check` enforces it):

    cli : mcp : serve
    commands
    render | agents
    retrieval
    ingest | memory
    traces | hub | models | scan
    schema : paths : errors : vocab : results   (bottom modules may import each other)

Where a new function goes: turns a raw transcript into canonical rows -> traces/; transforms a
batch and does no I/O -> ingest/; names the Hub, a token or a revision -> hub.py; names the Lance
table, the Parquet mirror, receipts or index files -> memory/; ranks or assembles results -> retrieval/; decides what to do ->
commands/; a value a command returns -> results.py; turns a value into text -> render/; a word
stored or accepted (harness, block type, tier) -> vocab.py. Fits two -> the lower layer. Fits
none -> a new stage or command, never a utils.py.
"""

__version__ = "0.1.0"
