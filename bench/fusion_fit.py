"""A per-query BM25 weight fitted by logistic regression on half A only, written as `conf:W:G:C` specs.

    .venv/bin/python bench/fusion_fit.py bench/out/dump_*.jsonl  ->  specs for bench/fusion_tune.py

For each half-A question where the two legs disagree (graded alone through bench/fusion_tune.py's
replay: first gold session, dev set first gold passage), the target is "BM25 is the better leg"
and the features are the two signs `hybrid.confident_weights` reads: BM25's gap (s0 - s3) / s0
and the vector leg's best cosine. The L2 strength is chosen by 5-fold cross-validation on half A
(folds by crc32 of the question id: deterministic), then the model is fitted on all of half A by
Newton's method. Its log-odds `a + bg * gap + bc * cos` is `conf:W:G:C` with G = bg, C = -bc and
W = sigmoid(a + bg * 0.3 + bc * 0.55) (conf centres gap at 0.3 and cos at 0.55). Half B is never read.
"""

from __future__ import annotations

import sys
import zlib

import numpy as np

from fusion_tune import grade, load

LAMBDAS = (0.0, 0.1, 1.0, 10.0)


def features(q: dict) -> list[float]:
    from funes.retrieval.hybrid import CONF_TAIL

    b = [s for _, s in q["legs"].get("bm25", [])]
    v = [s for _, s in q["legs"].get("vector", [])]
    gap = (b[0] - b[min(CONF_TAIL, len(b) - 1)]) / b[0] if b and b[0] > 0 else 0.0
    return [gap, v[0] if v else 0.0]


def fit(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Logistic regression (intercept unpenalised) by Newton's method: deterministic."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    pen = np.diag([0.0] + [lam] * x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-xb @ w))
        grad = xb.T @ (p - y) + pen @ w
        hess = (xb.T * (p * (1 - p))) @ xb + pen + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def logloss(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(1.0 / (1.0 + np.exp(-(w[0] + x @ w[1:]))), 1e-9, 1 - 1e-9)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def auc(score: np.ndarray, y: np.ndarray) -> float:
    pos, neg = score[y == 1], score[y == 0]
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def main(argv: list[str]) -> int:
    qs = [q for q in load(argv) if q["half"] == "A"]
    rows, ys, folds = [], [], []
    for q in qs:
        b, v = grade(q, "bm25")["mrr"], grade(q, "vector")["mrr"]
        if b != v:
            rows.append(features(q))
            ys.append(1.0 if b > v else 0.0)
            folds.append(zlib.crc32(f"{q['suite']}/{q['qid']}".encode()) % 5)
    x, y, fold = np.array(rows), np.array(ys), np.array(folds)
    print(f"half A questions where the legs disagree: {len(y)} (BM25 better in {int(y.sum())})")
    best = None
    for lam in LAMBDAS:
        loss, pred = 0.0, np.zeros(len(y))
        for k in range(5):
            w = fit(x[fold != k], y[fold != k], lam)
            loss += logloss(w, x[fold == k], y[fold == k]) * (fold == k).sum() / len(y)
            pred[fold == k] = w[0] + x[fold == k] @ w[1:]
        print(f"  L2 {lam:g}: cross-validated log loss {loss:.4f}, AUC {auc(pred, y):.3f}")
        if best is None or loss < best[0] - 1e-12:
            best = (loss, lam)
    lam = best[1]
    a, bg, bc = fit(x, y, lam)
    w0 = 1.0 / (1.0 + np.exp(-(a + bg * 0.3 + bc * 0.55)))
    print(f"chosen L2 {lam:g}; fitted on all of half A: log-odds {a:+.3f} {bg:+.3f}*gap {bc:+.3f}*cos")
    g, c = round(float(bg), 2), round(float(-bc), 2)
    specs = [f"conf:{round(float(w0), 2):g}:{g:g}:{c:g}"]
    specs += [f"conf:{w:g}:{round(g * s, 2):g}:{round(c * s, 2):g}" for w in (0.7, 0.8) for s in (0.5, 1.0, 2.0)]
    print("specs=" + ",".join(specs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
