"""Export an embedder or cross-encoder to ONNX once (fp32, fused), and int8 on request behind an agreement gate."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import warnings
from pathlib import Path

import numpy as np

from funes.models import probes
from funes.models.runtime import OnnxModel
from funes.models.weights import cache_dir

RECIPE = "r2"  # bump when the export or quantisation recipe changes: old exports are then ignored
EMBED_MIN_COSINE = 0.99  # int8 vs fp32 torch, every probe
RERANK_MIN_SPEARMAN = 0.95  # int8 vs fp32 torch, per probe query, and the same top-1
FP32_TOLERANCE = 1e-4
PROBE_MAX_LENGTH = 256
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_FUSABLE = {"bert", "roberta", "xlm-roberta"}  # ONNX Runtime's BERT fusions (attention, gelu, layer norm)


class ExportFailed(RuntimeError):
    """The ONNX fast path could not be built for this model; callers fall back to torch."""


def export_dir(kind: str, sha: str) -> Path:
    return cache_dir() / f"{kind}-{sha[:16]}-{RECIPE}"


def read_meta(folder: Path) -> dict | None:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return {**meta, "dir": str(folder)} if meta.get("recipe") == RECIPE else None


def artifacts(kind: str, model_dir: Path, sha: str, int8: bool) -> dict:
    """meta.json of the fp32 export (built on first use, under a lock); with int8, also the int8 verdict."""
    folder = export_dir(kind, sha)
    meta = read_meta(folder)
    if meta is None or (int8 and "int8_gate" not in meta):
        folder.parent.mkdir(parents=True, exist_ok=True)
        with _locked(folder.parent / f".{folder.name}.lock"):
            meta = read_meta(folder) or _build(kind, model_dir, sha, folder)
            if int8 and "int8_gate" not in meta:
                meta = _add_int8(folder, meta)
    return meta


def record(folder: Path, key: str, verdict: dict) -> dict:
    """Add one backend's gate verdict to an export's meta.json (under the export's lock); the new meta."""
    with _locked(folder.parent / f".{folder.name}.lock"):
        meta = read_meta(folder)
        if meta is None:
            raise ExportFailed(f"no export in {folder} to record {key} in")
        meta = {**meta, key: verdict}
        _write_meta(folder, meta)
    return meta


@contextlib.contextmanager
def _locked(path: Path):
    """One builder per export at a time (a hook and the MCP server may start together)."""
    import fcntl

    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build(kind: str, model_dir: Path, sha: str, folder: Path) -> dict:
    failed = folder.with_name(folder.name + ".failed")
    if failed.exists():
        raise ExportFailed(f"{failed.read_text(encoding='utf-8').strip()} (delete {failed} to retry)")
    tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        meta = (_export_embedder if kind == "embed" else _export_reranker)(model_dir, tmp)
        meta.update(recipe=RECIPE, kind=kind, weights_sha256=sha, source=str(model_dir), fp32="model.onnx")
        _write_meta(tmp, meta)
        os.replace(tmp, folder)
        _prune_old_recipes(folder)
    except Exception as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        failed.write_text(f"ONNX export of {model_dir} failed: {type(exc).__name__}: {exc}", encoding="utf-8")
        raise ExportFailed(f"ONNX export of {model_dir} failed: {exc}") from exc
    built = read_meta(folder)
    if built is None:  # another process replaced it with an export of another recipe
        raise ExportFailed(f"ONNX export of {model_dir} left no readable meta.json in {folder}")
    return built


def _prune_old_recipes(folder: Path) -> None:
    """Exports of the same weights under an older recipe are dead weight (~100 MB each)."""
    stem = folder.name.rsplit("-", 1)[0]
    for old in folder.parent.glob(f"{stem}-r*"):
        if old != folder and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def _write_meta(folder: Path, meta: dict) -> None:
    tmp = folder / f".meta.json.{os.getpid()}"
    tmp.write_text(json.dumps({k: v for k, v in meta.items() if k != "dir"}, indent=1), encoding="utf-8")
    os.replace(tmp, folder / "meta.json")


# ---- fp32 exports --------------------------------------------------------------------------------


def _export_embedder(model_dir: Path, out: Path) -> dict:
    """The whole sentence-transformers pipeline (transformer, pooling, normalise) as one graph."""
    import torch
    from sentence_transformers import SentenceTransformer

    st = _eager(lambda kw: SentenceTransformer(str(model_dir), device="cpu", local_files_only=True, model_kwargs=kw))
    tokenizer = st[0].tokenizer
    names = [n for n in _INPUTS if n in tokenizer.model_input_names]

    class Pipeline(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.st = st

        def forward(self, *tensors):
            emb = self.st(dict(zip(names, tensors)))["sentence_embedding"]
            return torch.nn.functional.normalize(emb, p=2, dim=1)

    meta = {"inputs": names, "max_length": int(st.max_seq_length)}
    reference = st.encode(probes.PASSAGES, batch_size=8, convert_to_numpy=True, normalize_embeddings=True)
    meta["dim"] = int(reference.shape[1])
    _export(Pipeline(), tokenizer, names, out, pair=False)
    return _finish_fp32("embed", out, meta, reference, st[0].auto_model.config)


def _export_reranker(model_dir: Path, out: Path) -> dict:
    """The sequence-classification model up to its raw logit (no activation)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    load = AutoModelForSequenceClassification.from_pretrained
    model = _eager(lambda kw: load(str(model_dir), local_files_only=True, **kw)).eval()
    if model.config.num_labels != 1:
        raise ExportFailed(f"expected a one-logit cross-encoder, {model_dir} has {model.config.num_labels} labels")
    names = [n for n in _INPUTS if n in tokenizer.model_input_names]

    class Logit(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            return self.model(**dict(zip(names, tensors))).logits

    pairs = _probe_pairs()
    with torch.no_grad():
        feats = tokenizer(
            [q for q, _ in pairs],
            [p for _, p in pairs],
            padding=True,
            truncation="longest_first",
            max_length=PROBE_MAX_LENGTH,
            return_tensors="pt",
        )
        reference = model(**{n: feats[n] for n in names}).logits[:, 0].numpy()
    _export(Logit(), tokenizer, names, out, pair=True)
    return _finish_fp32("rerank", out, {"inputs": names, "max_length": PROBE_MAX_LENGTH}, reference, model.config)


def _finish_fp32(kind: str, out: Path, meta: dict, reference: np.ndarray, config) -> dict:
    """Keep the fused graph if it still matches torch, else the plain one; refuse an export that does not."""
    np.save(out / "probes.npy", reference)
    meta["fused"] = _fuse(out / "model.onnx", out / "model.fused.onnx", config)
    if meta["fused"] and _fp32_matches(kind, out, "model.fused.onnx", meta, reference):
        os.replace(out / "model.fused.onnx", out / "model.onnx")
    else:
        (out / "model.fused.onnx").unlink(missing_ok=True)
        meta["fused"] = False
        if not _fp32_matches(kind, out, "model.onnx", meta, reference):
            raise ExportFailed("the fp32 ONNX export disagrees with torch on the probe texts")
    return meta


def _fp32_matches(kind: str, out: Path, onnx_file: str, meta: dict, reference: np.ndarray) -> bool:
    got = _probe_outputs(kind, out, onnx_file, meta)
    if kind == "embed":
        return bool(_cosine(got, reference).min() >= 1 - FP32_TOLERANCE)
    return bool(np.abs(got - reference).max() <= 10 * FP32_TOLERANCE * max(1.0, float(np.abs(reference).max())))


def _fuse(src: Path, dst: Path, config) -> bool:
    """ONNX Runtime's offline BERT fusions (attention, gelu, skip-layer-norm): ~10-15% faster on CPU."""
    if getattr(config, "model_type", None) not in _FUSABLE:
        return False
    try:
        from onnxruntime.transformers import optimizer

        with _quiet():
            fused = optimizer.optimize_model(
                str(src),
                model_type="bert",
                opt_level=0,
                num_heads=config.num_attention_heads,
                hidden_size=config.hidden_size,
            )
            fused.save_model_to_file(str(dst))
        return True
    except Exception:  # an unfamiliar graph: the plain export is still correct
        return False


def _eager(load):
    """Plain (eager) attention traces into ONNX cleanly; fall back when a model rejects the setting."""
    try:
        return load({"attn_implementation": "eager"})
    except (TypeError, ValueError):
        return load({})


def _export(module, tokenizer, names: list[str], out: Path, pair: bool) -> None:
    import torch

    tokenizer.backend_tokenizer.save(str(out / "tokenizer.json"))
    # a padded batch of two, so the traced graph keeps the attention mask live
    first, second = ["short", "a longer second text, padded past the first one"], None
    if pair:
        first, second = ["query", "another query"], first
    feats = tokenizer(first, second, padding=True, return_tensors="pt")
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(),
            tuple(feats[n] for n in names),
            str(out / "model.onnx"),
            dynamo=False,
            input_names=names,
            output_names=["output"],
            opset_version=17,
            dynamic_axes={**axes, "output": {0: "batch"}},
        )


# ---- int8 ----------------------------------------------------------------------------------------


def _add_int8(folder: Path, meta: dict) -> dict:
    """Quantise the fp32 export and keep it only if it agrees with torch on the probes (stored at export)."""
    tmp = folder / f".model.int8.onnx.{os.getpid()}"
    try:
        _quantize(folder / "model.onnx", tmp)
        got = _probe_outputs(meta["kind"], folder, tmp.name, meta)
        gate = _gate(meta["kind"], got, np.load(folder / "probes.npy"))
    except Exception as exc:
        gate = {"passed": False, "error": f"{type(exc).__name__}: {exc}"}
    if gate["passed"]:
        os.replace(tmp, folder / "model.int8.onnx")
    tmp.unlink(missing_ok=True)
    meta = {**meta, "int8": "model.int8.onnx" if gate["passed"] else None, "int8_gate": gate}
    _write_meta(folder, meta)
    return meta


def _quantize(src: Path, dst: Path) -> None:
    """Dynamic int8 with per-channel weights; the FFN output projections stay fp32 — their inputs carry
    outliers that int8 cannot hold (on MiniLM they cause most of the cosine loss)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(src), load_external_data=False).graph
    keep = [n.name for n in graph.node if n.op_type == "MatMul" and _ffn_output(n.name)]
    with _quiet():
        quantize_dynamic(
            str(src),
            str(dst),
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_exclude=keep,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


def _ffn_output(node: str) -> bool:
    return "/output/dense/" in node and "/attention/" not in node


def _gate(kind: str, got: np.ndarray, reference: np.ndarray) -> dict:
    if kind == "embed":
        cos = _cosine(got, reference)
        return {
            "min_cosine": round(float(cos.min()), 5),
            "mean_cosine": round(float(cos.mean()), 5),
            "threshold": EMBED_MIN_COSINE,
            "passed": bool(cos.min() >= EMBED_MIN_COSINE),
        }
    rhos, top1 = [], []
    n = len(probes.PASSAGES)
    for start in range(0, len(reference), n):
        ref, new = reference[start : start + n], got[start : start + n]
        rhos.append(spearman(ref, new))
        top1.append(int(ref.argmax()) == int(new.argmax()))
    return {
        "min_spearman": round(min(rhos), 4),
        "top1_agreement": round(sum(top1) / len(top1), 4),
        "threshold": RERANK_MIN_SPEARMAN,
        "passed": bool(min(rhos) >= RERANK_MIN_SPEARMAN and all(top1)),
    }


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1]) if len(a) > 1 else 1.0


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _probe_pairs() -> list[tuple[str, str]]:
    return [(q, p) for q in probes.QUERIES for p in probes.PASSAGES]


def _probe_outputs(kind: str, folder: Path, onnx_file: str, meta: dict) -> np.ndarray:
    model = OnnxModel(folder / onnx_file, folder / "tokenizer.json", meta["inputs"], meta["max_length"])
    if kind == "embed":
        return model.run(probes.PASSAGES, batch_size=8)
    return model.run(_probe_pairs(), batch_size=8)[:, 0]


@contextlib.contextmanager
def _quiet():
    """The exporter and quantiser log chatty warnings through the root logger; keep stderr clean."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)
