"""Memory of the demo's scoring of a learning curve (issue 38: the demo's peak memory).

The demo's learning curve scores 144 predictions (9 training sizes x 5 repeats x 4
estimates, fewer at the full size) on the same test rows. Each prediction's row terms
(n_rows x (3 + n_bins + 2 n_classes + 1) float64) are larger than its probabilities
(n_rows x n_classes); they used to be built for every prediction at once and then stacked
side by side (two copies), about 6x the probabilities at 20 classes. Scoring one
prediction at a time keeps the peak well below the probabilities' own size.

tracemalloc counts NumPy's allocations exactly (no allocator retention, no other
process), so the bound does not depend on the machine; the margin is wide (the peak is
about 0.2x the probabilities here, the bound 1x, the old code 6x).
"""

import tracemalloc

import numpy as np
import pytest

from bayesnb.analysis import comparison as C

ESTIMATES = ("mle", "map", "mean", "predictive")


def _groups(n_rows, n_classes, sizes, repeats, seed=0):
    rng = np.random.default_rng(seed)
    groups = {}
    for size in sizes:
        runs = []
        for _ in range(repeats):
            run = {}
            for e in ESTIMATES:
                proba = rng.dirichlet(np.full(n_classes, 0.3), n_rows)
                dead = np.zeros(n_rows, dtype=bool)
                run[e] = C._Prediction(proba, 0, None, dead)
            runs.append(run)
        groups[(size,)] = runs
    return groups, rng.integers(0, n_classes, n_rows)


def test_learning_curve_scoring_peak_below_the_probabilities():
    groups, y_index = _groups(n_rows=2000, n_classes=20, sizes=range(6), repeats=5)
    proba_bytes = sum(p.proba.nbytes for runs in groups.values() for run in runs for p in run.values())
    evidences = {k: [0.0] * 5 for k in groups}
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        records = C._score(
            groups, evidences, ESTIMATES, y_index, 15, 300, 0.95, "predictive", np.random.default_rng(0),
            ["train_size", "estimate"],
        )
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert len(records) == 6 * 4
    assert peak < 1.0 * proba_bytes, f"peak {peak / 2**20:.1f} MiB, probabilities {proba_bytes / 2**20:.1f} MiB"


def test_scoring_one_prediction_at_a_time_matches_metric_values():
    # The point values are the metrics of each prediction averaged over the repeats
    # (metric_values is an independent path: one _RowTerms per call, no bootstrap).
    groups, y_index = _groups(n_rows=300, n_classes=4, sizes=(1, 2), repeats=3, seed=1)
    classes = np.arange(4)
    records = C._score(
        groups, {k: [0.0] * 3 for k in groups}, ESTIMATES, y_index, 15, 50, 0.95, "predictive",
        np.random.default_rng(0), ["train_size", "estimate"],
    )
    for rec in records:
        runs = groups[(rec["train_size"],)]
        expect = [C.metric_values(y_index, run[rec["estimate"]].proba, classes) for run in runs]
        for m in C.METRICS:
            assert rec[m] == pytest.approx(np.mean([e[m] for e in expect]), rel=1e-12)
            assert rec[f"{m}_lo"] <= rec[f"{m}_hi"]
