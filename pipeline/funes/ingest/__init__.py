"""Pure ingest stages over Arrow batches (chunk, redact, embed); run.py chains them with datasets.map."""
