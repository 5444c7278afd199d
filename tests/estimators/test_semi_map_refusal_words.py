"""SemiSupervisedNB's refusals of estimate='map' name the user's classes, and its components.

With several components per class the wrapped model's classes are the components
(``estimator_.classes_`` is ``0 .. M-1``): its refusal said "in class 3", which is
component 3 of class 'spam' here, and EM with ``smoothing="none"`` raised the raw
"at index (1, 3)" of its M-step. The component shares and the approximate leave-one-out
of ``calibrate="loo"`` raised "at index" too.
"""

import re

import numpy as np
import pandas as pd
import pytest

from bayesnb import CategoricalNB, MixedNB, MultinomialNB
from bayesnb.core import class_prior
from bayesnb.core.families._dirichlet import MapRefusal, UndefinedModeError
from bayesnb.estimators.semi_supervised import SemiSupervisedNB


def _mail(seed=0):
    # Feature 3 never occurs in class 'spam': with alpha 0.5 its concentration there is
    # 0.5 < 1 under estimate="map". Every third row is unlabelled.
    rng = np.random.default_rng(seed)
    X = rng.poisson(2, size=(40, 6))
    X[20:, 3] = 0
    y = np.array(["ham"] * 20 + ["spam"] * 20, dtype=object)
    y[::3] = -1
    return X, y


def _component(msg):
    match = re.search(r"component (\d+) of class '(\w+)'", msg)
    assert match is not None, msg
    return int(match.group(1)), match.group(2)


@pytest.mark.parametrize("n_components", [1, 2])
def test_em_without_smoothing_names_the_class_and_feature_of_its_m_step(n_components):
    # The M-step asked the family for its point and raised "at index (1, 3)".
    X, y = _mail()
    model = SemiSupervisedNB(
        MultinomialNB(alpha=0.5, estimate="map"), smoothing="none", n_components=n_components, unlabelled_weight=1.0
    )
    with pytest.raises(ValueError) as info:
        model.fit(X, y)
    msg = str(info.value)
    assert "at index" not in msg and "alpha >= 1" in msg
    assert "feature 3 (column 3 of X): alpha 0.5 plus 0 weighted counts" in msg, msg
    if n_components == 1:
        assert "in class 'spam', feature 3" in msg
    else:
        k, label = _component(msg)
        # Components are grouped by class: 0, 1 are 'ham''s, 2, 3 'spam''s.
        assert label == "spam" and model.component_class_[k] == 1


@pytest.mark.parametrize("smoothing", ["laplace", "none"])
def test_a_fitted_mixture_names_the_component_the_component_model_refuses(smoothing):
    # VB fits (q is a posterior, any concentration), and predict asks for the MAP: the
    # component model refuses its "class k", which this model names as component k of
    # its class. The oracle is the component model's own refusal, class k renamed.
    X, y = _mail()
    model = SemiSupervisedNB(
        MultinomialNB(alpha=0.5, estimate="map"), method="vb", smoothing=smoothing, n_components=2,
        unlabelled_weight=1.0,
    ).fit(X, y)
    with pytest.raises(ValueError) as by_components:
        model.estimator_.predict(X)
    with pytest.raises(ValueError) as info:
        model.predict(X)
    inner, msg = str(by_components.value), str(info.value)
    k = int(re.search(r"in class (\d+), ", inner).group(1))
    label = model.classes_[model.component_class_[k]]
    assert msg == inner.replace(f"in class {k}, ", f"in component {k} of class '{label}', ", 1)
    with pytest.raises(ValueError, match=re.escape(f"component {k} of class '{label}'")):
        model.predict_proba(X)


def test_a_mixed_block_refusal_names_the_component_and_the_column():
    X, y = _mail()
    frame = pd.DataFrame({"a": X[:, 3], "b": X[:, 0], "c": np.where(X[:, 1] > 1, "hi", "lo")})
    blocks = [("m", MultinomialNB(alpha=0.5), ["a", "b"]), ("k", CategoricalNB(alpha=0.5), ["c"])]
    model = SemiSupervisedNB(
        MixedNB(blocks, estimate="map"), smoothing="none", n_components=2, unlabelled_weight=1.0
    )
    with pytest.raises(ValueError) as info:
        model.fit(frame, y)
    msg = str(info.value)
    k, label = _component(msg)
    assert label == "spam" and model.component_class_[k] == 1
    assert f"in component {k} of class 'spam', feature 'a' (block 'm'): alpha 0.5 plus 0 weighted counts" in msg


def test_the_share_of_a_component_within_its_class_is_named():
    # Fixed class proportions: each class's shares of its components have their own
    # Dirichlet (class_alpha 0.5), whose MAP the EM without smoothing asks for.
    X, y = _mail()
    model = SemiSupervisedNB(
        MultinomialNB(alpha=1.0, class_prior=[0.5, 0.5], class_alpha=0.5), smoothing="none", n_components=3,
        unlabelled_weight=1.0,
    )
    with pytest.raises(ValueError) as info:
        model.fit(X, y)
    msg = str(info.value)
    assert "at index" not in msg and "class_alpha >= 1" in msg
    k, label = _component(msg)
    assert f"the share of component {k} of class '{label}' within its class: class_alpha 0.5 plus " in msg
    assert model.component_class_[k] == ["ham", "spam"].index(label)
    assert "weighted rows of that component" in msg


def _lonely_component(X=None):
    # Class 'spam' has three labelled rows, one far from the other two: of its two
    # components one holds that row alone. Left out, that component has no rows, and
    # class_alpha 0.5 alone is below 1. Row 0 is unlabelled, so that the row is training
    # row 5 and labelled row 4.
    if X is None:
        X = np.array([[5, 0, 0], [5, 0, 0], [6, 0, 1], [5, 1, 0], [4, 0, 0], [0, 0, 9], [0, 9, 0], [0, 8, 1]])
    y = np.array([-1] + ["ham"] * 4 + ["spam"] * 3, dtype=object)
    return X, y


def _lonely_fit(X, y, **kwargs):
    return SemiSupervisedNB(
        MultinomialNB(**kwargs), smoothing="none", n_components={"ham": 1, "spam": 2}, unlabelled_weight=1.0
    ).fit(X, y)


@pytest.mark.parametrize("class_prior_", [None, [0.5, 0.5]], ids=["learned", "fixed"])
def test_calibrate_loo_names_the_component_and_the_row_left_out(class_prior_):
    X, y = _lonely_component()
    # The fit itself has a mode; the component holds training row 5 alone.
    fitted = _lonely_fit(X, y, alpha=1.0, class_alpha=0.5, class_prior=class_prior_)
    k = int(np.flatnonzero(fitted.component_responsibilities_[5] > 0.5)[0])
    assert fitted.component_class_[k] == 1
    assert np.allclose(np.delete(fitted.component_responsibilities_[:, k], 5), 0.0, atol=1e-6)
    with pytest.raises(ValueError) as info:
        _lonely_fit(X, y, alpha=1.0, class_alpha=0.5, class_prior=class_prior_, calibrate="loo")
    msg = str(info.value)
    assert "at index" not in msg
    what = "the proportion" if class_prior_ is None else "the share"
    assert f"{what} of component {k} of class 'spam'" in msg, msg
    assert re.search(
        r"with training row 5 left out: class_alpha 0\.5 plus [0-9.e-]+ weighted rows of that component", msg
    ), msg


def test_calibrate_loo_names_the_feature_of_a_component_with_the_row_left_out():
    # Every cell has counts on all the rows (alpha 0.5 has a mode); the lonely
    # component's feature 0 has one count, from training row 5 only.
    X, y = _lonely_component(
        np.array([[5, 1, 1], [5, 1, 1], [6, 1, 2], [5, 2, 1], [4, 1, 1], [1, 1, 9], [1, 9, 1], [1, 8, 2]])
    )
    fitted = _lonely_fit(X, y, alpha=0.5, class_alpha=1.0)
    k = int(np.flatnonzero(fitted.component_responsibilities_[5] > 0.5)[0])
    with pytest.raises(ValueError) as info:
        _lonely_fit(X, y, alpha=0.5, class_alpha=1.0, calibrate="loo")
    msg = str(info.value)
    assert "at index" not in msg
    assert f"in component {k} of class 'spam', feature 0 (column 0 of X) with training row 5 left out: alpha 0.5 plus " in msg, msg


def test_a_left_out_batch_names_the_training_row_given():
    # Row i of a batch is training row rows[i] (a wrapper leaves out its labelled rows).
    err = UndefinedModeError("raw", (1, 0), 0.5)
    refusal = class_prior.map_refusal(err, np.array([[3.0, 1.0], [0.0, 2.0]]), np.array(["a", "b"]), rows=[7, 9])
    assert isinstance(refusal, MapRefusal) and refusal.class_index == 0
    assert "the proportion of class 'a' with training row 9 left out: class_alpha 0.5 plus 0 weighted rows" in str(refusal)


def test_naming_a_class_changes_the_class_only():
    refusal = class_prior.map_refusal(UndefinedModeError("raw", (2,), 0.75), np.array([1.0, 1.0, 0.25]), [7, 8, 9])
    assert refusal.class_words == "class 9"
    renamed = refusal.naming_class("component 2 of class 'x'", "component")
    assert str(renamed) == str(refusal).replace("class 9", "component 2 of class 'x'", 1).replace(
        "rows of that class", "rows of that component"
    )
    assert renamed.class_index == 2
    unnamed = MapRefusal("somewhere", 0.5, "why", "alpha")
    assert unnamed.naming_class("anything") is unnamed


def test_a_share_is_refused_by_its_component_not_its_place_in_the_class():
    # Class 1 has components 2, 3, 4; component 3 (the second of its class) has 0.2
    # weighted rows: 0.5 + 0.2 < 1. Its place within the class is 1, a component of class 0.
    from bayesnb.estimators._components import WithinClassShares

    shares = WithinClassShares(np.log([0.5, 0.5]), np.full(5, 0.5), np.array([0, 0, 1, 1, 1]))
    with pytest.raises(MapRefusal) as info:
        shares.log_weights(np.array([5.0, 5.0, 3.0, 0.2, 4.0]), "map")
    assert info.value.class_index == 3
    assert "0.7 < 1 (the share of component 3 within its class: class_alpha 0.5 plus 0.2 weighted rows" in str(info.value)


def test_the_refusals_survive_pickling():
    # joblib sends a worker's exception back pickled (error_score="raise").
    import pickle

    refusal = class_prior.map_refusal(UndefinedModeError("raw", (1, 0), 0.5), np.array([[3.0, 1.0], [0.0, 2.0]]), ["a", "b"])
    back = pickle.loads(pickle.dumps(refusal))
    assert type(back) is MapRefusal and str(back) == str(refusal)
    assert (back.class_index, back.class_words, back.row) == (0, "class 'a'", 1)
    raw = pickle.loads(pickle.dumps(UndefinedModeError("at index (0, 1)", (0, 1), 0.5, row=4, block="b")))
    assert (str(raw), raw.index, raw.value, raw.row, raw.block) == ("at index (0, 1)", (0, 1), 0.5, 4, "b")


def test_single_component_calibrate_loo_names_the_training_row():
    # One component per class: estimator_'s own leave-one-out counts the labelled rows
    # only. Class 'spam' has one labelled row, training row 5 (labelled row 4), of
    # weight 0.5: class_alpha 0.5 + 0.5 = 1 on all the rows (a mode), 0.5 with it left out.
    X, _ = _lonely_component()
    y = np.array([-1, "ham", "ham", "ham", "ham", "spam", -1, -1], dtype=object)
    w = np.ones(len(y))
    w[5] = 0.5
    model = SemiSupervisedNB(
        MultinomialNB(alpha=1.0, class_alpha=0.5, calibrate="loo"), smoothing="none", unlabelled_weight=0.0
    )
    with pytest.raises(ValueError) as info:
        model.fit(X, y, sample_weight=w)
    msg = str(info.value)
    assert "the proportion of class 'spam' with training row 5 left out: class_alpha 0.5 plus 0 weighted rows" in msg, msg
    model.set_params(estimator=MultinomialNB(alpha=1.0, class_alpha=0.5)).fit(X, y, sample_weight=w)  # no refusal
