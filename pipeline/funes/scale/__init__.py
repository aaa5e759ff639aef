"""Scale-out engines for `funes index`: the same ingest stages, run on a distributed engine.

`rayjob.py` runs parse -> chunk -> redact as Ray Data `map_batches` tasks (one shard per task,
calling `ingest.blocks` and `ingest.run.chunk_blocks` exactly as the single-machine indexer
does) and embeds with an actor pool that loads the pinned model once per actor. Workers write
Lance fragments (`memory/fragments.py`); the driver only gathers their small metadata and
commits them, so its memory stays flat as the input grows. Ray is optional (`funes[ray]`) and
imported only here, only when `--engine ray` is asked for.
"""
