"""``bayesnb.sklearn`` as a full drop-in (issue 38 item 8; issue 41 item 6).

* ``ComplementNB`` is scikit-learn's own class, re-exported (not Bayesian, not a family,
  not saved), and the namespace exports every class ``sklearn.naive_bayes`` exports.
* ``save`` / ``load`` of every Bayesian estimator of the namespace: the loaded model is of
  the namespace class again, predicts bit for bit as the saved one (the same arithmetic
  on the same statistics), and as scikit-learn (the independent oracle, to 1e-10);
  ``partial_fit`` continues from the file; a crafted floor state is refused.
* ``compare`` on a namespace estimator: its own estimate is scikit-learn's numbers, the
  other estimates those of ``to_bayesnb()``, and the calibrated row works.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
import sklearn.naive_bayes as sknb
from numpy.testing import assert_allclose, assert_array_equal

import bayesnb
import bayesnb.sklearn as bsk
from bayesnb.analysis.comparison import metric_values
from bayesnb.core import families
from bayesnb.io import persistence

ATOL = 1e-10


def _data(name, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(["a", "b", "c"], 20)
    shift = np.repeat([0.0, 1.0, 2.0], 20)[:, None]
    if name == "GaussianNB":
        X = rng.normal(size=(60, 4)) + shift
    elif name == "BernoulliNB":
        X = (rng.random((60, 5)) < 0.2 + 0.25 * shift).astype(np.int64)
    elif name == "CategoricalNB":
        X = np.minimum(rng.poisson(1.0 + shift, size=(60, 4)), 4)
    else:
        X = rng.poisson(1.0 + shift * np.arange(1, 6) / 3.0, size=(60, 5))
    order = rng.permutation(60)
    return X[order], y[order]


def _fitted_pair(name, **params):
    """The namespace's estimator and scikit-learn's, fitted by two partial_fit calls with weights."""
    X, y = _data(name)
    w = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    ours, theirs = getattr(bsk, name)(**params), getattr(sknb, name)(**params)
    for est in (ours, theirs):
        est.partial_fit(X[:35], y[:35], classes=["a", "b", "c"], sample_weight=w[:35])
        est.partial_fit(X[35:], y[35:], sample_weight=w[35:])
    return ours, theirs, X, y


def _roundtrip(est):
    buffer = io.BytesIO()
    est.save(buffer)
    buffer.seek(0)
    return bayesnb.load(buffer), buffer.getvalue()


# ----------------------------------------------------------------------------- ComplementNB


def test_complement_nb_is_scikit_learns_own_class_and_every_sklearn_class_is_exported():
    import sklearn.naive_bayes

    assert bsk.ComplementNB is sklearn.naive_bayes.ComplementNB
    assert set(sklearn.naive_bayes.__all__) <= set(bsk.__all__)
    for name in bsk.__all__:
        assert getattr(bsk, name).__name__ == name
    X, y = _data("MultinomialNB")
    ours = bsk.ComplementNB(alpha=0.7).fit(X[:40], y[:40])
    theirs = sknb.ComplementNB(alpha=0.7).fit(X[:40], y[:40])
    assert_allclose(ours.predict_proba(X[40:]), theirs.predict_proba(X[40:]), rtol=0, atol=ATOL)
    # Not Bayesian: the docs say so; not a family, not a model file's class.
    assert "not Bayesian" in " ".join(bsk.__doc__.split())
    assert "complement" not in " ".join(families.names()).lower()
    with pytest.raises(KeyError):
        persistence.estimator_class("ComplementNB")
    with pytest.raises(TypeError, match="not one of bayesnb's estimators"):
        persistence.save(ours, io.BytesIO())
    with pytest.raises(TypeError, match="baselines="):
        bayesnb.compare(bsk.ComplementNB(), X[:40], y[:40], X[40:], y[40:], n_bootstrap=0)


# ----------------------------------------------------------------------------- save / load


@pytest.mark.parametrize("name", ["MultinomialNB", "BernoulliNB", "CategoricalNB", "GaussianNB"])
def test_save_load_gives_the_namespace_class_and_the_same_model(name):
    ours, theirs, X, y = _fitted_pair(name)
    loaded, data = _roundtrip(ours)
    assert type(loaded) is type(ours) and type(loaded).__module__.startswith("bayesnb.sklearn")
    assert loaded.get_params() == ours.get_params()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert json.loads(zf.read("metadata.json"))["estimator"]["class"] == f"sklearn.{name}"
    # Same statistics, same arithmetic: bit for bit.
    assert_array_equal(loaded.predict_proba(X), ours.predict_proba(X))
    # And scikit-learn's numbers (the oracle), fitted attributes included.
    assert_allclose(loaded.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=ATOL)
    for attr in ("class_prior_", "class_count_", "var_", "epsilon_", "feature_log_prob_"):
        if hasattr(theirs, attr):
            want = getattr(theirs, attr)
            if isinstance(want, list):
                for got_j, want_j in zip(getattr(loaded, attr), want):
                    assert_allclose(got_j, want_j, rtol=0, atol=ATOL)
            else:
                assert np.asarray(getattr(loaded, attr)).dtype == np.asarray(want).dtype, attr
                assert_allclose(getattr(loaded, attr), want, rtol=0, atol=ATOL, err_msg=attr)
    # partial_fit continues from the file as from the saved object.
    more_X, more_y = X[:7], y[:7]
    after = loaded.partial_fit(more_X, more_y).predict_proba(X)
    assert_allclose(after, theirs.partial_fit(more_X, more_y).predict_proba(X), rtol=0, atol=ATOL)


def test_a_float32_gaussian_model_keeps_its_dtype_and_floor_through_a_file():
    X, y = _data("GaussianNB")
    X = X.astype(np.float32)  # scikit-learn's fitted arrays keep the dtype of X
    ours = bsk.GaussianNB().partial_fit(X[:30], y[:30], classes=["a", "b", "c"]).partial_fit(X[30:], y[30:])
    theirs = sknb.GaussianNB().partial_fit(X[:30], y[:30], classes=["a", "b", "c"]).partial_fit(X[30:], y[30:])
    loaded, _ = _roundtrip(ours)
    for attr in ("var_", "theta_", "class_prior_", "epsilon_"):
        assert np.asarray(getattr(loaded, attr)).dtype == np.float32, attr
        assert_array_equal(getattr(loaded, attr), getattr(ours, attr))
    # The carried floors of partial_fit (not in the statistics) came through the file.
    assert_allclose(loaded.var_, theirs.var_, rtol=1e-6)
    assert_array_equal(loaded.predict_proba(X), ours.predict_proba(X))


def test_the_main_namespace_classes_keep_their_names_in_model_files():
    clf = bayesnb.MultinomialNB().fit(*_data("MultinomialNB"))
    loaded, data = _roundtrip(clf)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert json.loads(zf.read("metadata.json"))["estimator"]["class"] == "MultinomialNB"
    assert type(loaded) is bayesnb.MultinomialNB


def test_a_file_of_the_namespace_names_the_import_when_the_namespace_is_not_loaded(monkeypatch):
    ours, _, _, _ = _fitted_pair("MultinomialNB")
    _, data = _roundtrip(ours)
    monkeypatch.delitem(persistence._ESTIMATORS, "sklearn.MultinomialNB")
    with pytest.raises(bayesnb.ModelFileError, match=r"import bayesnb\.sklearn"):
        bayesnb.load(io.BytesIO(data))


@pytest.mark.parametrize(
    "key, value, match",
    [("_epsilon_", -1.0, "epsilon_"), ("_dtype_", "object", "dtype"), ("_epsilon_", {"float": "nan"}, "epsilon_")],
)
def test_a_crafted_variance_floor_is_refused(key, value, match):
    ours, _, _, _ = _fitted_pair("GaussianNB")
    _, data = _roundtrip(ours)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        meta = json.loads(zf.read("metadata.json"))
        arrays = {n[:-4]: np.lib.format.read_array(io.BytesIO(zf.read(n))) for n in zf.namelist() if n.endswith(".npy")}
    meta["estimator"]["attributes"][key] = value
    meta["checksum"] = persistence._checksum(meta, arrays)  # as an attacker would
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("metadata.json", json.dumps(meta))
        for name, arr in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, arr)
            zf.writestr(f"{name}.npy", buffer.getvalue())
    out.seek(0)
    with pytest.raises(bayesnb.ModelFileError, match=match):
        bayesnb.load(out)


def test_extra_state_is_only_for_private_fitted_names():
    with pytest.raises(ValueError, match="private fitted attributes"):
        persistence.register_estimator(type("Probe", (), {}), name="probe.Probe", state=("alpha",))


# ----------------------------------------------------------------------------- compare


@pytest.mark.parametrize("name, own", [("MultinomialNB", "mean"), ("GaussianNB", "mle")])
def test_compare_scores_the_namespace_estimator_own_estimate_as_scikit_learn(name, own):
    X, y = _data(name)
    X = X.astype(np.float64)
    train, test = slice(0, 40), slice(40, None)
    table = bayesnb.compare(getattr(bsk, name)(), X[train], y[train], X[test], y[test], n_bootstrap=0, as_frame=False)
    assert table["estimate"] == ["mle", "map", "mean", "predictive"]
    theirs = getattr(sknb, name)().fit(X[train], y[train])
    want = metric_values(y[test], theirs.predict_proba(X[test]), theirs.classes_)
    for metric, value in want.items():
        assert table.row(own)[metric] == pytest.approx(value, abs=ATOL), metric
    # The other estimates: the same statistics and class proportions, estimate switched.
    fitted = getattr(bsk, name)().fit(X[train], y[train])
    for estimate in ("mle", "map", "mean", "predictive"):
        if estimate == own or not table.row(estimate)["available"]:
            continue
        proba = fitted.to_bayesnb(estimate=estimate).predict_proba(X[test])
        got = table.row(estimate)["log_loss"]
        assert got == pytest.approx(metric_values(y[test], proba, fitted.classes_)["log_loss"], abs=ATOL)
    assert table.row("mean")["log_evidence"] == pytest.approx(float(fitted.log_evidence()), abs=1e-9)
    # And the estimator given is left with scikit-learn's parameters only.
    assert "estimate" not in getattr(bsk, name)().get_params()


def test_compare_calibrates_a_namespace_estimator_through_its_bayesnb_equivalent():
    from bayesnb.analysis.comparison import _calibrated_template

    X, y = _data("MultinomialNB")
    X, y = X[::3], y[::3]  # small: one leave-one-out calibration is the cost of this test
    fitted = bsk.MultinomialNB(alpha=0.7).fit(X[:14], y[:14])
    # What compare refits for the calibrated row: the bayesnb equivalent of the same model.
    template = _calibrated_template(bsk.MultinomialNB(alpha=0.7), fitted)
    assert type(template) is bayesnb.MultinomialNB and not hasattr(template, "stats_")
    params = template.get_params()
    assert params["calibrate"] == "loo" and params["estimate"] == "mean" and params["alpha"] == 0.7
    assert_allclose(params["class_prior"], fitted.class_prior_, rtol=0, atol=ATOL)
    table = bayesnb.compare(bsk.MultinomialNB(alpha=0.7), X[:14], y[:14], X[14:], y[14:], n_bootstrap=0,
                            as_frame=False, calibrated=True)
    row = table.row("calibrated (loo)")
    assert row["available"] and np.isfinite(row["log_loss"])
