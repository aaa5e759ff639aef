"""Tiny BERT models built locally in tests (nothing is downloaded): a cross-encoder and a sentence embedder."""

from __future__ import annotations

import json
import string
from pathlib import Path

_WORDS = [
    "the",
    "a",
    "an",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "for",
    "with",
    "is",
    "are",
    "was",
    "be",
    "it",
    "this",
    "that",
    "why",
    "how",
    "what",
    "when",
    "where",
    "who",
    "we",
    "you",
    "i",
    "did",
    "do",
    "does",
    "not",
    "no",
    "yes",
    "ok",
    "fix",
    "bug",
    "test",
    "tests",
    "error",
    "fail",
    "failed",
    "failure",
    "pass",
    "parser",
    "parse",
    "index",
    "indexing",
    "vector",
    "vectors",
    "memory",
    "recall",
    "chunk",
    "chunks",
    "model",
    "models",
    "embed",
    "embedding",
    "rerank",
    "query",
    "search",
    "session",
    "turn",
    "tool",
    "use",
    "result",
    "bash",
    "run",
    "python",
    "file",
    "files",
    "path",
    "code",
    "change",
    "changed",
    "approach",
    "because",
    "after",
    "before",
    "add",
    "remove",
    "lance",
    "table",
    "kmeans",
    "train",
    "with",
    "few",
    "small",
    "large",
    "data",
    "json",
    "sql",
    "select",
    "from",
    "where",
    "group",
    "order",
    "by",
]


def _vocab() -> list[str]:
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    pieces = ["##" + c for c in string.ascii_lowercase + string.digits]
    return list(dict.fromkeys(special + chars + pieces + sorted(_WORDS)))  # ids must be dense: no repeats


def _save_tokenizer(path: Path) -> int:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast

    vocab = {tok: i for i, tok in enumerate(_vocab())}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece()
    fast = BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )
    fast.save_pretrained(str(path))
    return len(vocab)


def _config(vocab_size: int, **extra):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        **extra,
    )


def build_tiny_cross_encoder(path: Path, seed: int = 0) -> Path:
    """A random 2-layer, 32-wide BERT cross-encoder (one logit) saved like a Hub model; returns `path`."""
    import torch
    from transformers import BertForSequenceClassification

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab_size = _save_tokenizer(path)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(_config(vocab_size, num_labels=1)).eval()
    model.save_pretrained(str(path))
    return path


def build_tiny_embedder(path: Path, seed: int = 0) -> Path:
    """A random 2-layer, 32-wide sentence-transformers model (mean pooling, normalised); returns `path`."""
    import torch
    from transformers import BertModel

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab_size = _save_tokenizer(path)
    torch.manual_seed(seed)
    BertModel(_config(vocab_size)).eval().save_pretrained(str(path))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (path / "modules.json").write_text(json.dumps(modules))
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}))
    (path / "1_Pooling").mkdir(exist_ok=True)
    (path / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True})
    )
    return path


def lay_out_hf_cache(cache: Path, repo_id: str, model_dir: Path, revision: str = "0" * 40) -> Path:
    """Copy `model_dir` into an HF hub cache layout (models--org--name/{refs/main,snapshots/<rev>}); returns the snapshot."""
    import shutil

    root = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    snapshot = root / "snapshots" / revision
    shutil.copytree(model_dir, snapshot, dirs_exist_ok=True)
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(revision)
    return snapshot
