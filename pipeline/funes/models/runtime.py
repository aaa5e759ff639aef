"""Run an exported ONNX model on CPU: fast-tokenize, sort by token length, pad per batch, scatter back."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def threads() -> int | None:
    """FUNES_THREADS, else None (the runtime's own default: one thread per physical core)."""
    raw = os.environ.get("FUNES_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


class OnnxModel:
    """One ONNX Runtime session plus the `tokenizers` fast tokenizer it was exported with."""

    def __init__(self, onnx_path: Path, tokenizer_path: Path, inputs: list[str], max_length: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # no spin-waiting between runs: idle workers would steal the CPU that faiss/BM25 (recall) or other
        # processes need next (an interleaved A/B on the shared 2-core box: 13.7 vs 11.1 chunks/s)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads():
            opts.intra_op_num_threads = threads()
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        padding = self.tokenizer.padding or {}
        self.pad_id = int(padding.get("pad_id", 0))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length, strategy="longest_first")
        self.inputs = inputs

    def run(self, items: list, batch_size: int) -> np.ndarray:
        """Items are strings or (query, passage) pairs; returns the first output, in input order."""
        encodings = self.tokenizer.encode_batch(items)
        order = sorted(range(len(items)), key=lambda i: -len(encodings[i].ids))
        out = None
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            result = self.session.run(None, self._feed([encodings[i] for i in idx]))[0]
            if out is None:
                out = np.empty((len(items), *result.shape[1:]), dtype=np.float32)
            out[idx] = result
        return out if out is not None else np.empty(0, dtype=np.float32)

    def _feed(self, encodings: list) -> dict[str, np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = enc.ids, 1, enc.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: feed[name] for name in self.inputs}
