"""PolyaNB as a MixedNB block and PolyaNB's arviz export.

Oracles: PolyaNB fitted alone on the block's columns and SciPy's Dirichlet-multinomial
(the block's feature part), SciPy's Normal for the Gaussian block beside it, and
``scipy.stats.dirichlet``'s moments and ``scipy.stats.multinomial`` for the exported
draws and their log-likelihood.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats as st
from scipy.special import gammaln
from test_polya_nb import _dcm_data

from bayesnb import GaussianNB, MixedNB, PolyaNB


def _coefficient(X):
    return gammaln(X.sum(1) + 1) - gammaln(X + 1).sum(1)


@pytest.fixture(scope="module")
def data():
    X, y, _ = _dcm_data(5, n=40, n_features=5, length=12)
    real = np.random.default_rng(5).normal(size=len(y)) + y
    X_new, _, _ = _dcm_data(6, n=6, n_features=5, length=12)
    real_new = np.linspace(-1.0, 2.0, 6)
    return np.column_stack([X, real]), y, np.column_stack([X_new, real_new])


def test_polya_block_is_polyanb_alone(data):
    Z, y, Z_new = data
    mixed = MixedNB([("words", PolyaNB(), [0, 1, 2, 3, 4]), ("g", GaussianNB(), [5])], remainder="drop").fit(Z, y)
    alone = PolyaNB().fit(Z[:, :5], y)
    block = dict((name, est) for name, est, _ in mixed.estimators_)["words"]
    assert_allclose(block.precision_, alone.precision_, rtol=1e-12)
    assert_allclose(mixed.posterior_["words"].concentration, alone.posterior_.concentration, rtol=1e-12)
    gauss = GaussianNB().fit(Z[:, 5:], y)
    words = alone.predict_joint_log_proba(Z_new[:, :5]) - alone.class_log_prior_
    assert_allclose(
        mixed.predict_joint_log_proba(Z_new),
        mixed.class_log_prior_ + words + gauss.predict_joint_log_proba(Z_new[:, 5:]) - gauss.class_log_prior_,
        rtol=1e-10, atol=1e-10,
    )
    # The block's feature part is the Dirichlet-multinomial with PolyaNB's concentration.
    a = np.asarray(alone.posterior_.concentration)
    X_new = Z_new[:, :5].astype(int)
    scipy_dm = np.array([[st.dirichlet_multinomial.logpmf(x, a[c], x.sum()) for c in (0, 1)] for x in X_new])
    assert_allclose(words, scipy_dm - _coefficient(X_new)[:, None], rtol=1e-10, atol=1e-10)


def test_polya_export_coords_shapes_and_values():
    X, y, _ = _dcm_data(8, n=30, n_features=4, length=10, shape=3.0)
    clf = PolyaNB().fit(X, y)
    n_chains, n_draws = 2, 2000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = clf.to_inference_data(n_draws, random_state=0, X=X, y=y, X_new=X[:3], n_chains=n_chains)
    post = idata.posterior
    assert post["document_probs"].dims == ("chain", "draw", "class", "feature")
    assert dict(post.sizes) == {"chain": n_chains, "draw": n_draws, "class": 2, "feature": 4}
    assert list(post.coords["class"].values) == list(clf.classes_)
    assert list(post.coords["feature"].values) == ["x0", "x1", "x2", "x3"]
    assert idata.log_likelihood["xy"].dims == ("chain", "draw", "data")
    assert idata.predictions["class_proba"].shape == (n_chains, n_draws, 3, 2)
    # Draws of a new document's theta ~ Dir(alpha_c), alpha_c = posterior_.concentration:
    # scipy.stats.dirichlet's mean within 5 Monte Carlo standard errors, its sd to 10%.
    a = np.asarray(clf.posterior_.concentration)
    draws = post["document_probs"].values.reshape(n_chains * n_draws, 2, 4)
    n = draws.shape[0]
    for c in (0, 1):
        mean, var = st.dirichlet.mean(a[c]), st.dirichlet.var(a[c])
        assert np.all(np.abs(draws[:, c].mean(0) - mean) < 5 * np.sqrt(var / n)), c
        assert_allclose(draws[:, c].std(0), np.sqrt(var), rtol=0.1)
    # xy under draw d: log pi_d[y_i] + the multinomial log-likelihood of row i under
    # theta_d[y_i] (sequence form), by scipy.stats.multinomial.
    pi = post["class_probs"].values
    for d in (0, 11, 1999):
        theta = post["document_probs"].values[1, d]
        want = np.log(pi[1, d][y]) + np.array(
            [st.multinomial.logpmf(X[i], X[i].sum(), theta[y[i]]) for i in range(len(y))]
        ) - _coefficient(X)
        assert_allclose(idata.log_likelihood["xy"].values[1, d], want, rtol=1e-9, atol=1e-9)
