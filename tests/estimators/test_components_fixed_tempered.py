"""SemiSupervisedNB(n_components > 1) with fixed class proportions and with a temperature (issue 37).

Oracles, all written here from the model's equations and independent of the library's
code: a NumPy MAP-EM and a NumPy mean-field VB for a multinomial mixture whose class
proportions are fixed and whose shares within a class are learned (same start, same
number of steps: same parameters to 1e-8 and the same changes of the objective per
iteration); the label part of the evidence by numerical integration over the shares;
a NumPy tempered predictive of the mixture (plug-in for EM, Dirichlet-multinomial for
VB) and of each posterior draw. Monotone traces; planted errors (shares conditioned on
nothing, the whole class's proportion learned, each component tempered instead of the
mixture, responsibilities not normalised) fail these checks.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import digamma, gammaln, logsumexp
from sklearn.exceptions import ConvergenceWarning
from test_mixture_components import _gaussian, _hide, _monotone, _multinomial

import bayesnb
from bayesnb import GaussianNB, MultinomialNB, SemiSupervisedNB
from bayesnb.estimators import _components
from bayesnb.estimators import semi_supervised as ss

FIXED = {"uniform": {"fit_prior": False}, "given": {"class_prior": [0.3, 0.7]}}
PI = {"uniform": np.array([0.5, 0.5]), "given": np.array([0.3, 0.7])}


def _fit(make, cls, method, seed, estimator_kwargs, *, lam=1.0, n_components=2, tol=0.0, max_iter=30, **kwargs):
    X, sub = make(seed)
    y = _hide(sub // 2, seed)
    clf = SemiSupervisedNB(cls(**estimator_kwargs), method=method, unlabelled_weight=lam, n_components=n_components,
                           max_iter=max_iter, tol=tol, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    return clf, X, y


def _trace(clf):
    return clf.log_posterior_ if clf.method == "em" else clf.elbo_


# ------------------------------------------------------------------ the NumPy oracles
def _within(beta, N, cc, log_pi_class, how):
    """log pi_k = log pi_c + log omega_k, omega_c the mean of Dir(beta_c + N_c) ("mean") or E[log] ("expected")."""
    out = np.empty(cc.size)
    for c in np.unique(cc):
        idx = cc == c
        a = beta[idx] + N[idx]
        out[idx] = log_pi_class[c] + (np.log(a / a.sum()) if how == "mean" else digamma(a) - digamma(a.sum()))
    return out


def _dir_logpdf(a, log_p):
    return gammaln(a.sum()) - gammaln(a).sum() + np.sum((a - 1) * log_p)


def _numpy_fixed(X, y_hidden, R0, cc, lam, pi, n_steps, method, alpha=1.0, beta=1.0):
    """MAP-EM (Laplace smoothing) or mean-field VB of a multinomial mixture, class proportions fixed at ``pi``.

    Returns the last step's log theta (EM: the M-step's; VB: E[log theta] is not
    returned, the Dirichlet concentrations are), log pi over the components, and the
    objective at every step up to a constant.
    """
    lab, unl = np.flatnonzero(y_hidden != -1), np.flatnonzero(y_hidden == -1)
    XL, XU = X[lab].astype(float), X[unl].astype(float)
    allowed = cc[None, :] == y_hidden[lab][:, None]
    M, d = cc.size, X.shape[1]
    bvec = np.full(M, beta)
    RL, RU = R0, None
    trace = []
    for step in range(n_steps + 1):
        T = RL.T @ XL + (0 if RU is None else lam * RU.T @ XU)
        N = RL.sum(0) + (0 if RU is None else lam * RU.sum(0))
        conc = alpha + T  # Dirichlet posterior of each component's word probabilities
        if method == "em":
            log_theta = np.log(conc / conc.sum(1, keepdims=True))
            log_pi = _within(bvec, N, cc, np.log(pi), "mean")
            objective = sum(_dir_logpdf(np.full(d, alpha + 1.0), lt) for lt in log_theta)
            for c in range(pi.size):
                idx = cc == c
                if idx.sum() > 1:
                    objective += _dir_logpdf(bvec[idx] + 1.0, log_pi[idx] - np.log(pi[c]))
            e_theta, e_pi = log_theta, log_pi
        else:
            e_theta = digamma(conc) - digamma(conc.sum(1, keepdims=True))
            e_pi = _within(bvec, N, cc, np.log(pi), "expected")
            log_pi = _within(bvec, N, cc, np.log(pi), "mean")
            log_theta = conc
            if step > 0:  # the ELBO after the update (up to the multinomial coefficients)
                objective = sum(gammaln(conc[k]).sum() - gammaln(conc[k].sum()) - d * gammaln(alpha) + gammaln(d * alpha)
                                for k in range(M))
                objective += float(np.sum(N * np.log(pi)[cc]))
                for c in range(pi.size):
                    idx = cc == c
                    if idx.sum() > 1:
                        a = bvec[idx]
                        objective += gammaln(a + N[idx]).sum() - gammaln((a + N[idx]).sum()) - gammaln(a).sum() + gammaln(a.sum())
                objective += -np.sum(RL * np.log(np.where(RL > 0, RL, 1))) - lam * np.sum(RU * np.log(np.where(RU > 0, RU, 1)))
                trace.append(objective)
            if step == n_steps:
                return log_theta, log_pi, np.array(trace)
        jl = np.where(allowed, XL @ e_theta.T + e_pi, -np.inf)
        ju = XU @ e_theta.T + e_pi
        if method == "em":
            trace.append(objective + np.sum(logsumexp(jl, 1)) + lam * np.sum(logsumexp(ju, 1)))
            if step == n_steps:
                return log_theta, log_pi, np.array(trace)
        RL = np.exp(jl - logsumexp(jl, 1, keepdims=True))
        RU = np.exp(ju - logsumexp(ju, 1, keepdims=True))


def _matches_oracle(clf, X, y_hidden, pi):
    """The fit's parameters and its trace's steps equal the NumPy oracle's (1e-8)."""
    # EM's last parameters are those of its last trace entry once converged, one M-step
    # further when it stopped at max_iter; VB's are those of its last ELBO.
    n = clf.n_iter_ - (clf.method == "em" and clf.converged_)
    a, log_pi, trace = _numpy_fixed(X, y_hidden, clf.initial_responsibilities_, clf.component_class_,
                                    clf.unlabelled_weight_, pi, n, clf.method)
    est = clf.estimator_
    mine = est.feature_log_prob_ if clf.method == "em" else np.asarray(est.posterior_.concentration)
    ours = _trace(clf)
    return (
        np.allclose(mine, a, rtol=1e-8, atol=1e-8)
        and np.allclose(est.class_log_prior_, log_pi, rtol=1e-8, atol=1e-8)
        and np.allclose(np.diff(ours), np.diff(trace[: ours.size]), rtol=1e-7, atol=1e-7)
    )


# ------------------------------------------------------------------ fixed class proportions
@pytest.mark.parametrize("fixed", list(FIXED))
@pytest.mark.parametrize("method", ["em", "vb"])
def test_fixed_proportions_equal_an_independent_numpy_fit(fixed, method):
    for seed, k, lam in ((0, 2, 1.0), (1, [3, 1], 0.6)):
        clf, X, y = _fit(_multinomial, MultinomialNB, method, seed, FIXED[fixed], lam=lam, n_components=k)
        assert clf.n_iter_ >= 4
        assert _matches_oracle(clf, X, y, PI[fixed])
        # The class term is fixed: each class's components add up to its proportion.
        totals = np.bincount(clf.component_class_, weights=clf.component_weights_)
        np.testing.assert_allclose(totals, PI[fixed], rtol=1e-12)
        np.testing.assert_allclose(np.exp(clf.class_log_prior_), PI[fixed], rtol=1e-12)


@pytest.mark.parametrize("fixed", list(FIXED))
@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("name", ["multinomial", "gaussian"])
def test_fixed_proportions_never_decrease_the_objective(fixed, method, name):
    make, cls = (_multinomial, MultinomialNB) if name == "multinomial" else (_gaussian, GaussianNB)
    extra = {"smoothing": "none"} if name == "gaussian" and method == "em" else {}
    for seed, k, lam in ((0, 2, 1.0), (1, 2, 1.0), (2, [1, 3], 0.5)):
        clf, X, _ = _fit(make, cls, method, seed, FIXED[fixed], lam=lam, n_components=k, tol=1e-10, **extra)
        trace = _trace(clf)
        assert trace.size >= 3 and np.all(np.isfinite(trace)), (seed, trace)
        assert _monotone(trace), (seed, np.diff(trace).min())
        np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)


def test_the_label_evidence_of_the_shares_equals_numerical_integration():
    cc = np.array([0, 0, 1, 1, 1])
    pi = np.array([0.3, 0.7])
    shares = _components.WithinClassShares(np.log(pi), np.array([1.0, 2.5, 0.7, 1.0, 3.0]), cc)
    N = np.array([3.0, 1.5, 2.0, 0.0, 4.25])
    # Class 0: one free share, a 1-d integral; class 1: a 2-d integral over the simplex.
    a0 = shares.alpha[:2]
    f0 = quad(lambda w: w ** (a0[0] + N[0] - 1) * (1 - w) ** (a0[1] + N[1] - 1), 0, 1)[0] / np.exp(
        gammaln(a0).sum() - gammaln(a0.sum()))
    a1, n1 = shares.alpha[2:], N[2:]

    def inner(u):
        return quad(lambda v: u ** (a1[0] + n1[0] - 1) * v ** (a1[1] + n1[1] - 1) * (1 - u - v) ** (a1[2] + n1[2] - 1),
                    0, 1 - u)[0]

    f1 = quad(inner, 0, 1)[0] / np.exp(gammaln(a1).sum() - gammaln(a1.sum()))
    expected = N[:2].sum() * np.log(pi[0]) + N[2:].sum() * np.log(pi[1]) + np.log(f0) + np.log(f1)
    np.testing.assert_allclose(shares.log_evidence(N), expected, rtol=1e-9)


def test_one_component_through_the_mixture_path_is_the_plain_fixed_estimator(monkeypatch):
    X, sub = _multinomial(3)  # four classes, labelled only
    monkeypatch.setattr(SemiSupervisedNB, "_uses_components", lambda self, counts: True)
    prior = [0.1, 0.2, 0.3, 0.4]
    for method, estimate in (("em", "mean"), ("vb", "predictive")):
        clf = SemiSupervisedNB(MultinomialNB(class_prior=prior), method=method).fit(X, sub)
        ref = MultinomialNB(class_prior=prior, estimate=estimate).fit(X, sub)
        assert clf._has_components() and clf.n_iter_ == 1
        np.testing.assert_allclose(clf.predict_joint_log_proba(X), ref.predict_joint_log_proba(X), rtol=1e-10)
        if method == "vb":
            np.testing.assert_allclose(clf.elbo_[-1], ref.log_evidence(), rtol=1e-10)


def test_class_alpha_is_each_class_shares_concentration():
    clf, X, y = _fit(_multinomial, MultinomialNB, "em", 0, {"fit_prior": False, "class_alpha": [1.0, 4.0]})
    counts = clf.estimator_.class_count_
    beta = np.array([1.0, 1.0, 4.0, 4.0])
    np.testing.assert_allclose(clf.component_weights_,
                               np.exp(_within(beta, counts, clf.component_class_, np.log(PI["uniform"]), "mean")),
                               rtol=1e-12)


# ------------------------------------------------------------------ temperature
def _numpy_tempered(clf, X, T):
    """The tempered predictive of the fitted mixture, from its fitted arrays: log pi_c + log p(x | y = c) / T."""
    est = clf.estimator_
    X = X.astype(float)
    if clf.method == "em":  # plug-in of the M-step's estimate
        ll = X @ est.feature_log_prob_.T
    else:  # the Dirichlet-multinomial predictive under q(theta) (the multinomial coefficient cancels)
        a = np.asarray(est.posterior_.concentration)
        ll = np.stack([gammaln(a[k].sum()) - gammaln(a[k].sum() + X.sum(1))
                       + (gammaln(a[k] + X) - gammaln(a[k])).sum(1) for k in range(a.shape[0])], axis=1)
    return _tempered_classes(ll, np.asarray(est.class_log_prior_, float), clf.component_class_, T)


def _tempered_classes(ll, log_pi, cc, T):
    """Class probabilities from log pi_c + log p(x | y = c) / T, p(x | y = c) = sum_{k in c} (pi_k / pi_c) p_k(x).

    ``ll``: (..., n_rows, M) component log-likelihoods; ``log_pi`` broadcastable to it.
    """
    joint = ll + log_pi
    lp = np.broadcast_to(log_pi, joint.shape)
    scores = []
    for c in range(cc.max() + 1):
        lpc = logsumexp(lp[..., cc == c], axis=-1)
        scores.append(lpc + (logsumexp(joint[..., cc == c], axis=-1) - lpc) / T)
    s = np.stack(scores, axis=-1)
    return np.exp(s - logsumexp(s, axis=-1, keepdims=True))


TEMPERED = {
    "em": {"temperature": 3.0},
    "vb": {"temperature": 2.5},
    "em-fixed": {"temperature": 2.0, "class_prior": [0.3, 0.7]},
    "vb-fixed": {"temperature": 4.0, "fit_prior": False},
}


@pytest.mark.parametrize("case", list(TEMPERED))
def test_the_tempered_mixture_predictive_equals_numpy(case):
    method = case[:2]
    kwargs = dict(TEMPERED[case])
    T = kwargs["temperature"]
    clf, X, _ = _fit(_multinomial, MultinomialNB, method, 0, kwargs, tol=1e-8)
    expected = _numpy_tempered(clf, X, T)
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(expected, axis=1)])
    # Tempering the mixture is not tempering each component, nor the untempered model.
    assert not np.allclose(expected, _numpy_tempered(clf, X, 1.0), rtol=1e-3)
    # The fit itself is the untempered one (temperature acts on predictions only).
    plain, _, _ = _fit(_multinomial, MultinomialNB, method, 0,
                       {k: v for k, v in kwargs.items() if k != "temperature"}, tol=1e-8)
    np.testing.assert_array_equal(_trace(plain), _trace(clf))
    np.testing.assert_allclose(clf.predict_proba(X), _numpy_tempered(plain, X, T), rtol=1e-10, atol=1e-12)
    assert clf.estimator_.temperature == 1.0


@pytest.mark.parametrize("method", ["em", "vb"])
def test_tempered_draws_temper_each_draw_of_the_mixture(method):
    clf, X, _ = _fit(_multinomial, MultinomialNB, method, 0, {"temperature": 3.0}, tol=1e-8)
    draws = clf.predict_proba_draws(X[:7], n_draws=30, random_state=5)
    # The same random_state draws the same (pi, theta) as estimator_.sample_posterior.
    post = clf.estimator_.sample_posterior(30, random_state=5)
    ll = np.einsum("rf,dkf->drk", X[:7].astype(float), np.log(post["feature_probs"]))
    expected = _tempered_classes(ll, np.log(post["class_probs"])[:, None, :], clf.component_class_, 3.0)
    assert draws.shape == (30, 7, 2)
    np.testing.assert_allclose(draws, expected, rtol=1e-9, atol=1e-12)
    lower, upper = clf.predict_proba_interval(X[:7], 0.8, n_draws=30, random_state=5)
    np.testing.assert_allclose(lower, np.quantile(draws, 0.1, axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="posterior='updated' needs temperature 1"):
        clf.predict_proba_draws(X[:2], 3, random_state=0, posterior="updated")


@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("T", [1.0, 2.0])
def test_fixed_proportions_draws_draw_each_class_shares_from_their_posterior(method, T):
    from bayesnb.core import _sampling
    from bayesnb.core._random import key_from_random_state

    clf, X, _ = _fit(_multinomial, MultinomialNB, method, 0, {"class_prior": [0.3, 0.7], "temperature": T}, tol=1e-8)
    cc = clf.component_class_
    draws = clf.predict_proba_draws(X[:7], n_draws=40, random_state=5)
    # The components' parameters: estimator_'s draws with the same random_state; the
    # shares: each class's Dirichlet posterior, drawn with the key of the class proportions.
    post = clf.estimator_.sample_posterior(40, random_state=5)
    ll = np.einsum("rf,dkf->drk", X[:7].astype(float), np.log(post["feature_probs"]))
    shares = _components.within_class_shares(clf.estimator, cc)
    key_class, _ = _sampling.split(key_from_random_state(5))
    counts = clf.estimator_.class_count_
    log_w = shares.sample_log_weights(key_class, counts, 40)
    np.testing.assert_allclose(draws, _tempered_classes(ll, log_w[:, None, :], cc, T), rtol=1e-9, atol=1e-12)
    # The shares' draws: the class totals are fixed in every draw, the shares vary, and
    # their mean is the posterior mean (beta + N) / (B_c + N_c) (Monte Carlo, 5 standard errors).
    many = np.exp(shares.sample_log_weights(key_class, counts, 4000))
    np.testing.assert_allclose(np.stack([many[:, cc == c].sum(1) for c in range(2)], 1),
                               np.broadcast_to(PI["given"] * 0 + [0.3, 0.7], (4000, 2)), rtol=1e-12)
    omega = many / np.array([0.3, 0.7])[cc]
    mean = np.concatenate([(1 + counts[cc == c]) / (1 + counts[cc == c]).sum() for c in range(2)])
    assert np.all(omega.std(0) > 1e-3)
    assert np.all(np.abs(omega.mean(0) - mean) < 5 * omega.std(0) / np.sqrt(4000))


# ------------------------------------------------------------------ what stays refused
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"temperature": "loo"}, "temperature='loo' is chosen by the training rows' exact leave-one-out"),
        ({"fit_prior": False, "class_alpha": "evidence"}, "class_alpha='evidence' with fixed class proportions"),
    ],
)
def test_what_has_no_closed_form_is_refused_with_the_reason_before_any_fit(kwargs, match, monkeypatch):
    X, sub = _multinomial(0)
    y = _hide(sub // 2, 0)

    def no_fit(*args, **kw):  # the refusal comes before the cross-validations and the labelled fit
        raise AssertionError("fitted before refusing")

    monkeypatch.setattr(SemiSupervisedNB, "_choose_components", no_fit)
    monkeypatch.setattr(SemiSupervisedNB, "_choose_weight", no_fit)
    for n_components in (2, "auto", {1: 2}):
        with pytest.raises(ValueError, match=match):
            SemiSupervisedNB(MultinomialNB(**kwargs), n_components=n_components).fit(X, y)
    # One component per class: the one-component fit takes them (its own rules).
    if "temperature" in kwargs:
        SemiSupervisedNB(MultinomialNB(**kwargs), unlabelled_weight=1.0).fit(X, y)


# ------------------------------------------------------------------ save / load
SAVED = {
    "em-fixed": ("em", {"class_prior": [0.3, 0.7]}),
    "vb-fixed": ("vb", {"fit_prior": False}),
    "em-tempered": ("em", {"temperature": 2.0}),
    "vb-tempered-fixed": ("vb", {"temperature": 3.0, "class_prior": [0.6, 0.4]}),
}


@pytest.mark.parametrize("case", list(SAVED))
def test_save_load_round_trip(case):
    method, kwargs = SAVED[case]
    clf, X, _ = _fit(_multinomial, MultinomialNB, method, 1, kwargs, tol=1e-8)
    buf = io.BytesIO()
    clf.save(buf)
    buf.seek(0)
    back = bayesnb.load(buf)
    for name in ("predict_proba", "predict_joint_log_proba", "predict"):
        np.testing.assert_array_equal(getattr(back, name)(X), getattr(clf, name)(X))
    np.testing.assert_array_equal(back.predict_proba_draws(X[:5], 20, random_state=3),
                                  clf.predict_proba_draws(X[:5], 20, random_state=3))
    np.testing.assert_array_equal(back.component_weights_, clf.component_weights_)
    np.testing.assert_array_equal(_trace(back), _trace(clf))


def test_a_restored_estimator_that_breaks_the_fixed_proportions_or_the_temperature_is_refused():
    clf, X, _ = _fit(_multinomial, MultinomialNB, "em", 1, {"class_prior": [0.3, 0.7]}, tol=1e-8)
    state = clf._saved_state()
    wrong = dict(state)
    est = wrong["estimator_"] = ss._portable(clf.estimator_)
    est.set_params(class_prior=[0.25, 0.25, 0.25, 0.25])
    est.class_prior_ = np.full(4, 0.25)
    with pytest.raises(ValueError, match="not the fixed class proportions"):
        SemiSupervisedNB(MultinomialNB(class_prior=[0.3, 0.7]), method="em", unlabelled_weight=1.0, n_components=2,
                         max_iter=30, tol=1e-8)._restore_state(wrong)
    hot = dict(state)
    hot["estimator_"] = ss._portable(clf.estimator_).set_params(temperature=2.0)
    with pytest.raises(ValueError, match="temperature=1"):
        SemiSupervisedNB(MultinomialNB(class_prior=[0.3, 0.7]), method="em", unlabelled_weight=1.0, n_components=2,
                         max_iter=30, tol=1e-8)._restore_state(hot)
    free = dict(state)
    free["estimator_"] = ss._portable(_fit(_multinomial, MultinomialNB, "em", 1, {}, tol=1e-8)[0].estimator_)
    with pytest.raises(ValueError, match="learns its component weights freely"):
        SemiSupervisedNB(MultinomialNB(class_prior=[0.3, 0.7]), method="em", unlabelled_weight=1.0, n_components=2,
                         max_iter=30, tol=1e-8)._restore_state(free)


# ------------------------------------------------------------------ planted errors
def _plant(monkeypatch, which):
    if which == "shares ignore the counts":
        original = _components.WithinClassShares.log_weights
        monkeypatch.setattr(_components.WithinClassShares, "log_weights",
                            lambda self, counts, kind: original(self, np.zeros_like(np.asarray(counts, float)), kind))
        monkeypatch.setattr(_components.WithinClassShares, "expected_log_weights",
                            lambda self, counts: _components.WithinClassShares.log_weights(self, counts, "mean"))
    elif which == "class proportion learned":
        # The free Dirichlet over all components: the class totals move with the data.
        monkeypatch.setattr(_components, "within_class_shares", lambda base, cc: None)
        original = _components.component_estimator

        def free(base, fitted, *args, **kwargs):
            base.set_params(class_prior=None, fit_prior=True)
            return original(base, fitted, *args, **kwargs)

        monkeypatch.setattr(_components, "component_estimator", free)
    elif which == "responsibilities not normalised":
        original = ss.SemiSupervisedNB._soft_stats

        def soft_stats(self, est, XU, R, wU):
            return original(self, est, XU, R * (1.0 + np.arange(R.shape[1])), wU)

        monkeypatch.setattr(ss.SemiSupervisedNB, "_soft_stats", soft_stats)
    elif which == "no shares in the ELBO":
        monkeypatch.setattr(_components.WithinClassShares, "log_evidence", lambda self, counts: 0.0)


@pytest.mark.parametrize("which", ["shares ignore the counts", "class proportion learned",
                                   "responsibilities not normalised", "no shares in the ELBO"])
def test_planted_errors_in_the_fixed_proportions_fail_the_checks(which, monkeypatch):
    good = {m: _fit(_multinomial, MultinomialNB, m, 0, FIXED["given"]) for m in ("em", "vb")}
    for clf, X, y in good.values():
        assert _matches_oracle(clf, X, y, PI["given"]) and _monotone(_trace(clf))
    _plant(monkeypatch, which)
    # The ELBO's label part is VB's alone; every other error reaches both methods.
    for method, (_, X, y) in good.items():
        if which == "no shares in the ELBO" and method == "em":
            continue
        bad, _, _ = _fit(_multinomial, MultinomialNB, method, 0, FIXED["given"])
        assert not (_matches_oracle(bad, X, y, PI["given"]) and _monotone(_trace(bad))), method


def test_planted_tempering_of_each_component_fails_the_oracle(monkeypatch):
    clf, X, _ = _fit(_multinomial, MultinomialNB, "em", 0, {"temperature": 3.0}, tol=1e-8)
    expected = _numpy_tempered(clf, X, 3.0)
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-10, atol=1e-12)

    def per_component(self, joint, class_log_pi):  # each component's likelihood divided by T, then summed
        est = self.estimator_
        comp = est.predict_joint_log_proba(self._last_X) - est.class_log_prior_
        return _components.sum_components(comp / 3.0 + est.class_log_prior_, self.component_class_, self.classes_.size)

    monkeypatch.setattr(SemiSupervisedNB, "_temper", per_component)
    clf._last_X = X
    assert not np.allclose(clf.predict_proba(X), expected, rtol=1e-6, atol=1e-9)
