"""SemiSupervisedNB(n_components > 1): duplicating labelled rows fits as weighting them (issue 37).

Oracle: the same fit with every copied row once and ``sample_weight`` its number of
copies. EM and VB sum every row's terms by weight after the start, so the two agree
exactly in exact arithmetic once the start puts copies of a row in one component, as a
row of weight ``m`` starts in one. What differs is the order of the floating-point sums
(``m`` copies added one by one against one product ``m * term``), hence the tolerance
``RTOL = 1e-9`` relative: a few dozen sums of ~1e2 terms, each rounding at ~1e-16
relative, compounded over ``MAX_ITER`` iterations of a contraction, stay far below it
(measured: at most 4e-14 relative on the traces, the probabilities and the
statistics above 1e-6), while the old start (rows shuffled one by one) moved them by
4e-3 relative or more. Statistics near zero (responsibilities that underflow) get
``atol=1e-10`` besides.

The runs use ``tol=0`` and a few iterations, so both fits run exactly ``MAX_ITER``
iterations (a stopping rule met one iteration apart would compare different iterates).

The start itself (:func:`bayesnb.estimators._components.initial_components`): copies of
a row start in one component, the parts' total weights differ by at most the heaviest
group's, the start does not depend on the rows' order, nor on other classes' numbers of
components, and sparse rows are compared in canonical form.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from bayesnb import CategoricalNB, GaussianNB, MixedNB, MultinomialNB, SemiSupervisedNB
from bayesnb.core.priors import NormalInverseGamma
from bayesnb.estimators import _components

RTOL = 1e-9
MAX_ITER = 6
N = 36


def _counts(rng):
    """Two classes, each two sub-topics over 5 words (documents of 12 words)."""
    sub = np.arange(N) % 4
    centres = rng.dirichlet(np.full(5, 0.5), 4)
    return np.vstack([rng.multinomial(12, centres[s]) for s in sub]), sub // 2


def _gaussian(rng):
    sub = np.arange(N) % 4
    centres = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 5.0], [5.0, 0.0]])
    return rng.normal(centres[sub], 1.0), sub // 2


def _categorical(rng):
    """4 features of 3 categories: enough distinct rows per class for 2 components."""
    sub = np.arange(N) % 4
    probs = rng.dirichlet(np.full(3, 0.6), (4, 4))
    X = np.array([[rng.choice(3, p=probs[s, j]) for j in range(4)] for s in sub])
    return X, sub // 2


def _frame(rng):
    X, y = _gaussian(rng)
    codes, _ = _categorical(rng)
    return pd.DataFrame({"g": X[:, 0], "colour": np.array(["a", "b", "c"])[codes[:, 0]], "k": codes[:, 1]}), y


def _mixed():
    # A fixed Gaussian prior (a data-scaled one is pooled over the rows as given) and alpha=2.
    gauss = GaussianNB(prior=NormalInverseGamma(loc=2.5, kappa=0.1, concentration=2.0, rate=1.0))
    return MixedNB([("gaussian", gauss, ["g"]), ("categorical", CategoricalNB(alpha=2.0), ["colour", "k"])])


CASES = {
    "multinomial-dense": (_counts, MultinomialNB, {}),
    "multinomial-sparse": (lambda rng: (lambda X, y: (sp.csr_matrix(X), y))(*_counts(rng)), MultinomialNB, {}),
    "gaussian": (_gaussian, GaussianNB, {"em": {"smoothing": "none"}}),
    "categorical": (_categorical, lambda: CategoricalNB(alpha=2.0), {}),
    "mixed-frame": (_frame, _mixed, {"em": {"smoothing": "none"}}),
}


def _rows(X, idx):
    if hasattr(X, "iloc"):
        return X.iloc[idx].reset_index(drop=True)
    return X[idx]


def _stack(X, extra):
    if hasattr(X, "iloc"):
        return pd.concat([X, extra], ignore_index=True)
    if sp.issparse(X):
        return sp.vstack([X, extra], format="csr")
    return np.vstack([X, extra])


def _problem(name, supervised, seed=0):
    """Rows, labels (``-1``: unlabelled), the duplicated problem and the weighted one.

    Three labelled rows get 2 extra copies (weight 3), three others 1 (weight 2); the
    copies are appended at the end, after every original row.
    """
    make, _, _ = CASES[name]
    rng = np.random.default_rng(seed)
    X, y = make(rng)
    y = y.copy()
    if not supervised:
        y[rng.permutation(N)[:12]] = -1
    lab = np.flatnonzero(y != -1)
    pick = rng.permutation(lab)[:6]
    copies = np.concatenate([pick[:3], pick[:3], pick[3:]])
    w = np.ones(N)
    np.add.at(w, copies, 1.0)
    Xd = _stack(X, _rows(X, copies))
    yd = np.concatenate([y, y[copies]])
    return X, y, w, Xd, yd, copies


def _fit(name, method, X, y, sample_weight=None, **kw):
    _, cls, options = CASES[name]
    clf = SemiSupervisedNB(cls(), method=method, n_components=2, unlabelled_weight=1.0, tol=0.0,
                           max_iter=MAX_ITER, random_state=3, **options.get(method, {}), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clf.fit(X, y, sample_weight=sample_weight)


def _leaves(tree):
    return [np.asarray(a, dtype=np.float64) for a in jax.tree.leaves(tree)]


def _trace(clf):
    return clf.log_posterior_ if clf.method == "em" else clf.elbo_


def _assert_same_fit(dup, weighted, X, n, copies):
    """``dup`` (rows duplicated) and ``weighted`` (rows weighted) are one fit, to RTOL."""
    assert dup.n_iter_ == weighted.n_iter_ == MAX_ITER
    np.testing.assert_allclose(_trace(dup), _trace(weighted), rtol=RTOL)
    np.testing.assert_allclose(dup.predict_proba(X), weighted.predict_proba(X), rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(dup.component_weights_, weighted.component_weights_, rtol=RTOL)
    stats_d, stats_w = _leaves(dup.estimator_.stats_), _leaves(weighted.estimator_.stats_)
    assert len(stats_d) == len(stats_w) > 0
    for a, b in zip(stats_d, stats_w):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-10)
    resp_d = dup.component_responsibilities_
    np.testing.assert_allclose(resp_d[:n], weighted.component_responsibilities_, rtol=RTOL, atol=1e-12)
    # Each copy's responsibilities are its original's (the same row, the same model).
    np.testing.assert_allclose(resp_d[n:], resp_d[copies], rtol=RTOL, atol=1e-12)


@pytest.mark.parametrize("supervised", [True, False], ids=["supervised", "semi"])
@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("name", list(CASES))
def test_duplicated_labelled_rows_fit_as_weighted_rows(name, method, supervised):
    X, y, w, Xd, yd, copies = _problem(name, supervised)
    dup = _fit(name, method, Xd, yd)
    weighted = _fit(name, method, X, y, sample_weight=w)
    # The start: the originals' components are the weighted fit's, every copy its original's.
    lab = np.flatnonzero(y != -1)
    start_d = np.argmax(dup.initial_responsibilities_, axis=1)
    start_w = np.argmax(weighted.initial_responsibilities_, axis=1)
    np.testing.assert_array_equal(start_d[: lab.size], start_w)
    position = np.searchsorted(lab, copies)
    np.testing.assert_array_equal(start_d[lab.size :], start_d[position])
    _assert_same_fit(dup, weighted, X, N, copies)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_shuffling_the_duplicated_rows_changes_nothing_but_the_summation_order(method):
    """Copies placed anywhere (before their originals too) and rows in any order: the same fit."""
    X, y, w, Xd, yd, copies = _problem("multinomial-dense", False, seed=1)
    order = np.random.default_rng(7).permutation(yd.size)
    shuffled = _fit("multinomial-dense", method, Xd[order], yd[order])
    weighted = _fit("multinomial-dense", method, X, y, sample_weight=w)
    np.testing.assert_allclose(_trace(shuffled), _trace(weighted), rtol=RTOL)
    np.testing.assert_allclose(shuffled.predict_proba(X), weighted.predict_proba(X), rtol=RTOL, atol=1e-12)
    for a, b in zip(_leaves(shuffled.estimator_.stats_), _leaves(weighted.estimator_.stats_)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-10)


# ----------------------------------------------------------------------------- the start itself
def _groups_of(X):
    """Row groups by an independent rule: a dict of each row's tuple of values."""
    seen = {}
    return np.array([seen.setdefault(tuple(np.asarray(row).ravel().tolist()), len(seen)) for row in X])


def _random_start_problem(seed, n=200, n_classes=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (n, 3)).astype(float)  # 27 possible rows: many copies
    y = rng.integers(0, n_classes, n)
    w = rng.choice([0.0, 0.5, 1.0, 2.0, 7.0], n)
    return X, y, w


@pytest.mark.parametrize("seed", range(5))
def test_copies_of_a_row_start_in_one_component_and_the_parts_balance_by_weight(seed):
    X, y, w = _random_start_problem(seed)
    counts = np.array([2, 3, 4])
    comp = _components.initial_components(y, counts, seed, X, w)
    groups = _groups_of(X)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for c, k in enumerate(counts):
        rows = np.flatnonzero(y == c)
        assert np.all((comp[rows] >= offsets[c]) & (comp[rows] < offsets[c] + k))
        for g in np.unique(groups[rows]):
            assert np.unique(comp[rows[groups[rows] == g]]).size == 1
        group_weight = {g: w[rows[groups[rows] == g]].sum() for g in np.unique(groups[rows])}
        loads = np.array([w[rows[comp[rows] == offsets[c] + j]].sum() for j in range(k)])
        assert np.all(np.bincount(comp[rows] - offsets[c], minlength=k) > 0)  # every part starts with a row
        # Heaviest groups first, each to the lightest part: the heaviest part exceeds the
        # lightest by at most the last (lightest) group it received.
        for j in np.flatnonzero(loads >= loads.max() - 1e-9):
            lightest = min(group_weight[g] for g in np.unique(groups[rows[comp[rows] == offsets[c] + j]]))
            assert loads.max() - loads.min() <= lightest + 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_weights_not_counts_balance_the_parts(seed):
    # Distinct rows weighing 4, 3, 3, 2: two groups a part, by weight only 4 + 2 | 3 + 3.
    X = np.arange(4.0)[:, None]
    comp = _components.initial_components(np.zeros(4, dtype=np.int64), np.array([2]), seed, X, [4.0, 3.0, 3.0, 2.0])
    assert comp[0] == comp[3] != comp[1] == comp[2]
    # The same by copies: rows 0 .. 3 repeated 4, 3, 3, 2 times.
    rep = np.repeat(np.arange(4), [4, 3, 3, 2])
    np.testing.assert_array_equal(
        _components.initial_components(np.zeros(12, dtype=np.int64), np.array([2]), seed, X[rep]), comp[rep]
    )


def test_distinct_rows_of_equal_weight_split_evenly_and_the_split_is_seeded():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(23, 2))
    y = np.zeros(23, dtype=np.int64)
    a = _components.initial_components(y, np.array([4]), 5, X)
    assert np.ptp(np.bincount(a, minlength=4)) <= 1
    np.testing.assert_array_equal(a, _components.initial_components(y, np.array([4]), 5, X, np.ones(23)))
    assert not np.array_equal(a, _components.initial_components(y, np.array([4]), 6, X))


def test_the_start_depends_on_content_and_weight_not_on_order_or_multiplicity():
    X, y, w = _random_start_problem(11)
    w = np.where(w == 0.0, 1.0, np.round(w + 0.5))  # integer weights: copies can express them
    counts = np.array([2, 3, 2])
    comp = _components.initial_components(y, counts, 4, X, w)
    # Every row repeated w times, in a shuffled order.
    rep = np.repeat(np.arange(y.size), w.astype(int))
    order = np.random.default_rng(1).permutation(rep.size)
    comp_rep = _components.initial_components(y[rep[order]], counts, 4, X[rep[order]])
    np.testing.assert_array_equal(comp_rep, comp[rep[order]])
    # A class's start does not depend on another class's number of components.
    other = _components.initial_components(y, np.array([2, 1, 2]), 4, X, w)
    for c in (0, 2):
        np.testing.assert_array_equal(other[y == c] - [0, 2, 3][c], comp[y == c] - [0, 2, 5][c])


def test_sparse_rows_are_compared_in_canonical_form():
    # Row 1 is row 0 stored with unsorted indices, a duplicate entry and an explicit zero
    # (and -0.0); row 2 differs from row 0 in one value, row 3 in one index.
    indptr = np.array([0, 2, 6, 8, 10])
    indices = np.array([1, 3, 3, 1, 3, 0, 1, 3, 1, 2])
    data = np.array([2.0, 5.0, 4.0, 2.0, 1.0, -0.0, 2.0, 4.0, 2.0, 5.0])
    X = sp.csr_matrix((data, indices, indptr), shape=(4, 4))
    ids = _components.row_groups(X)
    assert ids[0] == ids[1] and len({ids[0], ids[2], ids[3]}) == 3
    # The dense form groups the same rows (a different input type, the same equality).
    dense = _components.row_groups(X.toarray())
    assert dense[0] == dense[1] and len({dense[0], dense[2], dense[3]}) == 3
    # The CSR start and the dense start agree on which rows share a component.
    y = np.zeros(4, dtype=np.int64)
    comp = _components.initial_components(y, np.array([3]), 0, X)
    assert comp[0] == comp[1] and len({comp[0], comp[2], comp[3]}) == 3


def test_a_class_needs_as_many_distinct_rows_as_components():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.zeros(4, dtype=np.int64)
    with pytest.raises(ValueError, match=r"class index 0 has 2 distinct labelled row\(s\) \(4 in all\), fewer than its 3"):
        _components.initial_components(y, np.array([3]), 0, X)
    X2 = np.vstack([X, [[1.0, 1.0], [2.0, 0.0], [0.0, 2.0]]])
    y2 = np.array([0, 0, 0, 0, 1, 1, 1])
    with pytest.raises(ValueError, match=r"class index 0 has 2 distinct labelled row\(s\) \(4 in all\)"):
        SemiSupervisedNB(MultinomialNB(), n_components=3).fit(X2, y2)


def test_auto_takes_as_candidates_only_numbers_a_fold_has_distinct_rows_for():
    """``n_components="auto"`` on rows with many copies: a K above a class's distinct rows is no candidate.

    Two binary features: at most 4 distinct rows per class among 15. Counting rows, K = 4
    or 5 would be tried in every fold and the start would refuse it (fewer distinct rows
    than components); counting distinct rows, such a K is left out for that class.
    """
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (30, 2))
    y = np.arange(30) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = SemiSupervisedNB(CategoricalNB(alpha=2.0), n_components="auto", unlabelled_weight=0.0,
                               component_grid=(1, 2, 3, 4, 5)).fit(X, y)
    grid, mean = clf.components_curve_["grid"], clf.components_curve_["mean"]
    for c in range(2):
        distinct = np.unique(X[y == c], axis=0).shape[0]
        assert distinct < 5
        assert np.all(np.isneginf(mean[c, grid > distinct]))
        assert np.isfinite(mean[c, 0])
        assert clf.n_components_[c] <= distinct
