"""Pure ingest stages over Arrow batches (select, clean, split; embed); run.py calls the chunk
stages straight over Arrow slices and runs the embed stage as one datasets.map."""
