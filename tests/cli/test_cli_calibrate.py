"""``bayesnb fit --calibrate loo`` and ``bayesnb compare --calibrated`` (issue 36: the CLI
lacked the calibration the library has). Oracle: the library's ``calibrate="loo"`` on the
same design, and ``compare(calibrated=True)``."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from numpy.testing import assert_allclose

import bayesnb
from _cli import run


@pytest.fixture
def counts_csv(tmp_path):
    # Overlapping classes, counts far from the model's independence: the map has work.
    rng = np.random.default_rng(0)
    n = 160
    y = np.where(np.arange(n) % 3 == 0, "spam", "ham")
    shared = rng.poisson(2.0, size=n)
    X = np.column_stack([shared + rng.poisson(1.0 + (y == "spam"), size=n) for _ in range(6)])
    path = tmp_path / "counts.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"w{j}" for j in range(6)] + ["label"])
        for row, label in zip(X, y):
            w.writerow(list(row) + [label])
    return path, X, y


def test_fit_calibrate_loo_saves_the_libraries_map(counts_csv, tmp_path):
    path, X, y = counts_csv
    model = tmp_path / "m.npz"
    code, out, err = run(["fit", path, "--model", model, "--family", "poisson", "--calibrate", "loo"])
    assert code == 0, err
    assert "calibration (chosen by leave-one-out)" in out
    loaded = bayesnb.load(model)
    ref = bayesnb.PoissonNB(calibrate="loo").fit(X, y)
    assert loaded.calibration_.family == ref.calibration_.family
    code, out, err = run(["predict", path, "--model", model])
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    got = np.array([[float(v) for v in r[-2:]] for r in rows[1:]])
    assert_allclose(got, ref.predict_proba(X), rtol=1e-5, atol=1e-12)
    # Without --calibrate the model is as written.
    plain = tmp_path / "p.npz"
    assert run(["fit", path, "--model", plain, "--family", "poisson"])[0] == 0
    assert bayesnb.load(plain).calibration_ is None


def test_compare_calibrated_adds_the_row(counts_csv):
    path, X, y = counts_csv
    code, out, err = run(["compare", path, "--family", "poisson", "--cv", "3", "--bootstrap", "0", "--calibrated"])
    assert code == 0, err
    assert "calibrated (loo)" in out
