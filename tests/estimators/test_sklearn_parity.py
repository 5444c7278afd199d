r"""Parity with scikit-learn's naive Bayes on real corpora, to 1e-10.

What is pinned
--------------
For the discrete families the posterior-mean plug-in of bayesnb is, in exact arithmetic,
the model that scikit-learn fits. With ``estimate="mean"``, the same ``alpha`` and
``class_prior`` fixed to the empirical class frequencies,

* ``bayesnb.MultinomialNB`` equals ``sklearn.naive_bayes.MultinomialNB(alpha=alpha)``:
  :math:`\theta_{cj} = (T_{cj} + \alpha_j) / (\sum_k T_{ck} + \sum_k \alpha_k)`;
* ``bayesnb.BernoulliNB`` equals ``sklearn.naive_bayes.BernoulliNB(alpha=alpha)``:
  :math:`\theta_{cj} = (T_{cj} + \alpha) / (N_c + 2\alpha)`, the mean of
  :math:`\mathrm{Beta}(\alpha + T_{cj}, \alpha + N_c - T_{cj})`;
* ``bayesnb.CategoricalNB`` equals ``sklearn.naive_bayes.CategoricalNB(alpha=alpha)``
  (also with ``min_categories``): :math:`\theta_{cjk} = (n_{cjk} + \alpha) / (N_{c} + K_j\alpha)`.

Both libraries score a row with the same joint log-probability
:math:`\log\pi_c + \log p(x \mid \theta_c)` (the multinomial one without the multinomial
coefficient), so ``predict_joint_log_proba`` is compared directly, as are
``predict_log_proba``, ``predict_proba`` and ``predict``, and the fitted attributes that
mean the same thing on both sides (``classes_``, ``class_count_``, ``feature_count_`` /
``category_count_``, ``feature_log_prob_``, ``class_log_prior_``, ``n_categories_``).
Every comparison is absolute: ``assert_allclose(..., rtol=0, atol=1e-10)``.

Why ``class_prior`` must be set
-------------------------------
scikit-learn's ``alpha`` smoothing of the features *is* the posterior mean under a
:math:`\mathrm{Dir}(\alpha)` (or :math:`\mathrm{Beta}(\alpha, \alpha)`) prior, but its
class prior is the maximum-likelihood estimate :math:`N_c / N` with no smoothing at all.
bayesnb's ``estimate="mean"`` would otherwise use the posterior mean of the class
proportions too, :math:`(N_c + \beta_c) / (N + \sum\beta)`, a different model. Fixing
``class_prior`` to the (weighted, when ``sample_weight`` is given) empirical class
frequencies is exactly the combination scikit-learn fits.

The corpora are the shared ones in ``../shared/data``, read in place (see
``conftest.py``): SMS Spam Collection (first 1,672 messages train, the rest test),
20 Newsgroups bydate (train/test by date; all 20 groups sparse, four groups dense with a
5,000-word vocabulary), UCI mushroom and car evaluation (``OrdinalEncoder`` codes,
``train_test_split(random_state=0)``).

One test is not a comparison with scikit-learn: on the 130,107-word 20 Newsgroups
vocabulary the Bernoulli joint log-probability carries a sum of
:math:`\log(1 - \theta_{cj})` over every word, where float64 rounding of each term adds
up; the value of that sum in 40-digit arithmetic (mpmath) tells which side is off when
the two libraries disagree.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.naive_bayes as sknb
from numpy.testing import assert_allclose, assert_array_equal

import bayesnb

ATOL = 1e-10
ALPHAS = (1.0, 0.1, 2.5)
COUNT_FAMILIES = ("MultinomialNB", "BernoulliNB")
PREDICT_METHODS = ("predict_joint_log_proba", "predict_log_proba", "predict_proba")


# --------------------------------------------------------------------------- helpers
def _weights(n, seed=0):
    """Deterministic, non-integer, strictly positive sample weights."""
    return np.random.default_rng(seed).uniform(0.25, 4.0, n)


def _empirical_prior(y, sample_weight=None):
    """Class frequencies :math:`N_c / N` (weighted), in the sorted order of ``classes_``."""
    _, y_index = np.unique(y, return_inverse=True)
    counts = np.bincount(y_index, weights=sample_weight)
    return counts / counts.sum()


def _fit_both(name, X, y, alpha, sample_weight=None, **kwargs):
    """Fit bayesnb's and scikit-learn's ``name`` on the same data with the matching settings."""
    ours = getattr(bayesnb, name)(
        alpha=alpha, estimate="mean", class_prior=_empirical_prior(y, sample_weight), **kwargs
    )
    theirs = getattr(sknb, name)(alpha=alpha, **kwargs)
    ours.fit(X, y, sample_weight=sample_weight)
    theirs.fit(X, y, sample_weight=sample_weight)
    return ours, theirs


def assert_same_predictions(ours, theirs, X):
    """Every prediction method agrees to ``ATOL`` (absolute) and ``predict`` exactly."""
    assert_array_equal(ours.classes_, theirs.classes_)
    for method in PREDICT_METHODS:
        got, want = getattr(ours, method)(X), getattr(theirs, method)(X)
        assert got.shape == want.shape == (X.shape[0], theirs.classes_.size)
        assert np.all(np.isfinite(want)), f"scikit-learn's {method} is not finite: a broken comparison"
        assert_allclose(got, want, rtol=0, atol=ATOL, err_msg=f"{type(ours).__name__}.{method}")
    predicted = theirs.predict(X)
    assert_array_equal(ours.predict(X), predicted)
    # The comparison must not be trivial: a real classifier, not a constant one.
    assert np.unique(predicted).size > 1


def assert_same_fitted_counts(ours, theirs):
    """Fitted attributes of the multinomial / Bernoulli estimators that coincide."""
    assert_array_equal(ours.classes_, theirs.classes_)
    assert ours.n_features_in_ == theirs.n_features_in_
    assert_allclose(ours.class_count_, theirs.class_count_, rtol=0, atol=ATOL)
    assert_allclose(ours.feature_count_, theirs.feature_count_, rtol=0, atol=ATOL)
    assert_allclose(ours.feature_log_prob_, theirs.feature_log_prob_, rtol=0, atol=ATOL)
    assert_allclose(ours.class_log_prior_, theirs.class_log_prior_, rtol=0, atol=ATOL)


def assert_same_fitted_categorical(ours, theirs):
    """Fitted attributes of CategoricalNB that coincide (ragged per-feature lists)."""
    assert_array_equal(ours.classes_, theirs.classes_)
    assert_array_equal(ours.n_categories_, theirs.n_categories_)
    assert_allclose(ours.class_count_, theirs.class_count_, rtol=0, atol=ATOL)
    assert_allclose(ours.class_log_prior_, theirs.class_log_prior_, rtol=0, atol=ATOL)
    assert len(ours.category_count_) == len(theirs.category_count_) == theirs.n_features_in_
    for j, (got, want) in enumerate(zip(ours.category_count_, theirs.category_count_)):
        assert_allclose(got, want, rtol=0, atol=ATOL, err_msg=f"category_count_[{j}]")
    for j, (got, want) in enumerate(zip(ours.feature_log_prob_, theirs.feature_log_prob_)):
        assert_allclose(got, want, rtol=0, atol=ATOL, err_msg=f"feature_log_prob_[{j}]")


# ------------------------------------------------------------- SMS Spam Collection
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("layout", ["csr", "dense"])
@pytest.mark.parametrize("name", COUNT_FAMILIES)
def test_sms_spam_parity(name, layout, alpha, weighted, request):
    data = request.getfixturevalue("sms_counts" if layout == "csr" else "sms_counts_dense")
    assert sp.issparse(data.X_train) == (layout == "csr")
    w = _weights(data.X_train.shape[0]) if weighted else None
    ours, theirs = _fit_both(name, data.X_train, data.y_train, alpha, sample_weight=w)
    assert_same_fitted_counts(ours, theirs)
    assert_same_predictions(ours, theirs, data.X_test)


def test_sms_spam_multinomial_parity_per_feature_alpha(sms_counts):
    # scikit-learn takes alpha of shape (n_features,); bayesnb broadcasts it over classes.
    # (Only the multinomial: scikit-learn's BernoulliNB documents an array alpha but
    # fails to broadcast it, ``class_count_ + alpha * 2``, in scikit-learn 1.9.)
    alpha = np.linspace(0.05, 3.0, sms_counts.X_train.shape[1])
    ours, theirs = _fit_both("MultinomialNB", sms_counts.X_train, sms_counts.y_train, alpha)
    assert_same_fitted_counts(ours, theirs)
    assert_same_predictions(ours, theirs, sms_counts.X_test)


@pytest.mark.parametrize("name", COUNT_FAMILIES)
def test_sms_spam_partial_fit_parity(name, sms_counts):
    X, y = sms_counts.X_train, sms_counts.y_train
    classes = np.unique(y)
    ours = getattr(bayesnb, name)(alpha=0.5, estimate="mean", class_prior=_empirical_prior(y))
    theirs = getattr(sknb, name)(alpha=0.5)
    for rows in np.array_split(np.arange(X.shape[0]), 4):
        ours.partial_fit(X[rows], y[rows], classes=classes)
        theirs.partial_fit(X[rows], y[rows], classes=classes)
    assert_same_fitted_counts(ours, theirs)
    assert_same_predictions(ours, theirs, sms_counts.X_test)


# ---------------------------------------------------------------- 20 Newsgroups
@pytest.mark.parametrize("alpha", [1.0, 0.01])
@pytest.mark.parametrize("name", COUNT_FAMILIES)
def test_20newsgroups_sparse_parity(name, alpha, news20_counts):
    data = news20_counts
    assert sp.issparse(data.X_train) and np.unique(data.y_train).size == 20
    ours, theirs = _fit_both(name, data.X_train, data.y_train, alpha)
    assert_same_fitted_counts(ours, theirs)
    assert_same_predictions(ours, theirs, data.X_test)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("alpha", [1.0, 0.1])
@pytest.mark.parametrize("name", COUNT_FAMILIES)
def test_20newsgroups_dense_parity(name, alpha, weighted, news4_counts_dense):
    data = news4_counts_dense
    assert isinstance(data.X_train, np.ndarray) and data.X_train.shape[1] == 5000
    w = _weights(data.X_train.shape[0], seed=1) if weighted else None
    ours, theirs = _fit_both(name, data.X_train, data.y_train, alpha, sample_weight=w)
    assert_same_fitted_counts(ours, theirs)
    assert_same_predictions(ours, theirs, data.X_test)


def _exact_empty_document_joint(X_train, y_train, alpha):
    r"""Exact joint log-probability of an all-zero row under the fitted posterior-mean model.

    Computed with mpmath (40 digits) from integer counts taken directly from the data:
    :math:`\log p(x = 0, c) = \log(N_c / N) + \sum_j \log\big((\alpha + N_c - T_{cj}) /
    (2\alpha + N_c)\big)`, the sum over the whole vocabulary grouped by the distinct
    values of :math:`T_{cj}`.
    """
    classes, y_index = np.unique(y_train, return_inverse=True)
    on = sp.csr_matrix(X_train).astype(bool).astype(np.int64)
    onehot = sp.csr_matrix((np.ones(y_index.size, np.int64), y_index, np.arange(y_index.size + 1)))
    T = (on.T @ onehot).T.toarray()  # exact integers
    N = np.bincount(y_index)
    a = mpmath.mpf(alpha)  # the binary value of the float alpha, exactly
    out = []
    with mpmath.workdps(40):
        for c in range(classes.size):
            den = int(N[c]) + 2 * a
            values, counts = np.unique(T[c], return_counts=True)
            vocabulary = mpmath.fsum(
                int(k) * mpmath.log((a + int(N[c]) - int(t)) / den) for t, k in zip(values, counts)
            )
            out.append(mpmath.log(mpmath.mpf(int(N[c])) / int(N.sum())) + vocabulary)
    return out


@pytest.mark.parametrize("alpha", [1.0, 0.1, 0.01])
def test_20newsgroups_bernoulli_vocabulary_term_against_exact_arithmetic(alpha, news20_counts):
    r"""Which side is off where the Bernoulli comparison is tight: both against exact values.

    Not a comparison with scikit-learn. An empty document scores
    :math:`\log\pi_c + \sum_j \log(1 - \theta_{cj})`, a sum over the whole
    130,107-word vocabulary that every row of every class carries; each of its terms is
    small (:math:`\approx -1/N_c` for the many words a class never uses), so it must be
    evaluated with *relative* accuracy per term for the sum to be right to 1e-10. The
    oracle is that value in 40-digit arithmetic, from counts taken directly from the data.
    """
    data = news20_counts
    ours, theirs = _fit_both("BernoulliNB", data.X_train, data.y_train, alpha)
    empty = sp.csr_matrix((1, data.X_train.shape[1]))
    exact = _exact_empty_document_joint(data.X_train, data.y_train, alpha)

    def error(values):
        return np.array([float(mpmath.mpf(float(v)) - e) for v, e in zip(values, exact)])

    err_ours = error(ours.predict_joint_log_proba(empty)[0])
    err_sk = error(theirs.predict_joint_log_proba(empty)[0])
    assert np.abs(err_ours).max() <= ATOL, (
        f"alpha={alpha}: bayesnb's log pi_c + sum_j log(1 - theta_cj) is off the exact value by up to "
        f"{np.abs(err_ours).max():.3g} (class {int(np.abs(err_ours).argmax())}); "
        f"scikit-learn's is off by up to {np.abs(err_sk).max():.3g}"
    )


# ------------------------------------------------------------------ CategoricalNB
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("alpha", [1.0, 0.5, 3.0])
@pytest.mark.parametrize("corpus", ["mushroom_codes", "car_codes"])
def test_categorical_parity(corpus, alpha, weighted, request):
    data = request.getfixturevalue(corpus)
    w = _weights(data.X_train.shape[0], seed=2) if weighted else None
    ours, theirs = _fit_both("CategoricalNB", data.X_train, data.y_train, alpha, sample_weight=w)
    assert_same_fitted_categorical(ours, theirs)
    assert_same_predictions(ours, theirs, data.X_test)


@pytest.mark.parametrize("kind", ["int", "array"])
@pytest.mark.parametrize("corpus", ["mushroom_codes", "car_codes"])
def test_categorical_min_categories_parity(corpus, kind, request):
    data = request.getfixturevalue(corpus)
    if kind == "int":
        min_categories = int(data.n_categories.max()) + 2
    else:
        min_categories = data.n_categories + np.arange(data.n_categories.size) % 3
    ours, theirs = _fit_both(
        "CategoricalNB", data.X_train, data.y_train, 0.7, min_categories=min_categories
    )
    assert np.all(theirs.n_categories_ >= data.n_categories)
    assert np.any(theirs.n_categories_ > data.X_train.max(axis=0) + 1)  # padding is exercised
    assert_same_fitted_categorical(ours, theirs)
    assert_same_predictions(ours, theirs, data.X_test)


@pytest.mark.parametrize("corpus", ["mushroom_codes", "car_codes"])
def test_categorical_min_categories_codes_unseen_in_training(corpus, request):
    # Drop from training every row holding the top code of the two features with the
    # most categories: the test set then carries codes beyond the training range, which
    # min_categories declares (zero counts: probability alpha / (N_c + K_j alpha)).
    data = request.getfixturevalue(corpus)
    features = np.argsort(data.n_categories, kind="stable")[-2:]
    keep = np.all(data.X_train[:, features] < data.n_categories[features] - 1, axis=1)
    X_train, y_train = data.X_train[keep], data.y_train[keep]
    assert np.any(data.X_test[:, features] >= X_train[:, features].max(axis=0) + 1)
    ours, theirs = _fit_both("CategoricalNB", X_train, y_train, 1.0, min_categories=data.n_categories)
    assert_array_equal(theirs.n_categories_, data.n_categories)
    assert_same_fitted_categorical(ours, theirs)
    assert_same_predictions(ours, theirs, data.X_test)
