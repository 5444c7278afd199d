"""Category labels reach the arviz export (issue 15, "Names").

A categorical block's ``feature_probs`` has a padded ``category`` dim of codes shared by
its features; the labels (a MixedNB's fitted category values, e.g. a DataFrame's
strings) are the 2-d coordinate ``category_label`` on (feature, category). The test
checks each label against the cell it names: the posterior mean of that cell is the
closed-form Dirichlet mean computed here by counting the label's occurrences in the
DataFrame, so a label attached to the wrong code fails.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from bayesnb import CategoricalNB, GaussianNB, MixedNB

pytest.importorskip("arviz")


def _frame(seed=0, n=80):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], n),
            "size": rng.choice(["S", "M", "L", "XL"], n),
            "weight": rng.normal(size=n),
        }
    )
    y = np.where((df.colour == "red") | (df.weight > 0.8), "yes", "no")
    return df, y


def test_mixed_category_labels_name_the_cells_they_label():
    df, y = _frame()
    model = MixedNB().fit(df, y)
    n_draws = 4000
    idata = model.to_inference_data(n_draws, random_state=0, X=df, y=y)
    probs = idata.posterior["categorical__feature_probs"]
    labels = probs.coords["categorical__category_label"]
    assert labels.dims == ("categorical__feature", "categorical__category")
    assert labels.values.tolist() == [["blue", "green", "red", ""], ["L", "M", "S", "XL"]]
    mean = probs.mean(("chain", "draw"))
    for f, feature in enumerate(["colour", "size"]):
        values = sorted(set(df[feature]))
        for cls in ("no", "yes"):
            in_class = df[feature][y == cls]
            for c, label in enumerate(labels.values[f]):
                cell = float(mean.sel({"class": cls, "categorical__feature": feature}).values[c])
                if label == "":
                    assert np.isnan(cell)
                    continue
                # Oracle: Dirichlet(1, ..., 1) posterior mean of the label, by counting.
                want = ((in_class == label).sum() + 1.0) / (in_class.size + len(values))
                # iid draws: Monte Carlo error of a mean of 4000 probabilities < 0.01.
                assert abs(cell - want) < 0.012, (feature, cls, label, cell, want)
    # The label coordinate is on every group holding both dims (posterior and prior).
    assert "categorical__category_label" in idata.prior.coords
    assert "categorical__category_label" not in idata.log_likelihood.coords


def test_categorical_codes_are_their_own_labels_and_padding_is_empty():
    X = np.array([[0, 1], [1, 0], [2, 1], [1, 1], [0, 0], [2, 0]])
    y = [0, 0, 0, 1, 1, 1]
    est = CategoricalNB().fit(X, y)
    assert est.n_categories_.tolist() == [3, 2]
    idata = est.to_inference_data(50, random_state=0)
    labels = idata.posterior["feature_probs"].coords["category_label"]
    assert labels.values.tolist() == [["0", "1", "2"], ["0", "1", ""]]
    # Padding is exactly where the probabilities are NaN.
    probs = idata.posterior["feature_probs"].values
    assert np.array_equal(np.isnan(probs[0, 0, 0]), labels.values == "")


def test_no_label_coordinate_without_a_categorical_block():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 2))
    y = np.repeat([0, 1], 10)
    idata = GaussianNB().fit(X, y).to_inference_data(20, random_state=0)
    assert not any(str(c).endswith("category_label") for c in idata.posterior.coords)
    mixed = MixedNB([("g", GaussianNB(), [0, 1])]).fit(X, y).to_inference_data(20, random_state=0)
    assert not any(str(c).endswith("category_label") for c in mixed.posterior.coords)
