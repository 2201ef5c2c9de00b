"""How good the planning durations were: error, under/over-estimation, accuracy ECDF.

Accuracy is CP'19's ``A = real / predicted``: ``A = 1`` exact, ``A > 1`` under-estimation,
``A < 1`` over-estimation. "Real" is what the job actually ran (its run time, or its
wall-time when it was killed).
"""

from __future__ import annotations

import numpy as np


def prediction_quality(predicted: np.ndarray, real: np.ndarray) -> dict[str, float]:
    ok = ~np.isnan(real)
    p, r = predicted[ok], real[ok]
    if len(p) == 0:
        return {}
    a = r / np.maximum(p, 1e-9)
    return {
        "prediction_mae_s": float(np.mean(np.abs(p - r))),
        "prediction_under_rate": float(np.mean(p < r)),
        "prediction_over_rate": float(np.mean(p > r)),
        "prediction_exact_rate": float(np.mean(p == r)),
        "prediction_within_25pct": float(np.mean((a >= 0.75) & (a <= 1.25))),
    }


def accuracy(predicted: np.ndarray, real: np.ndarray) -> np.ndarray:
    ok = ~np.isnan(real)
    return real[ok] / np.maximum(predicted[ok], 1e-9)


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(values)
    return x, np.arange(1, len(x) + 1) / max(len(x), 1)
