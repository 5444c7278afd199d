"""Simulation-based calibration (bayesnb.ppl.sbc) of every family's closed-form posterior.

The oracle is the joint distribution itself (Talts et al. 2018): under the prior
predictive, the rank of the true parameter among exact posterior draws is uniform. Every
family passes at a CI budget (parameters, held-out labels, the evidence's chain rule); a
deliberately wrong posterior fails. Verdicts on planted errors of every kind, and the rule
for too few simulations: test_sbc_verdicts.py.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from _ppl_cases import NAMES, fitted
from test_mcmc import MissingPseudoCount, OffByOneCount

from bayesnb import GaussianNB
from bayesnb.core.priors import NormalInverseGamma
from bayesnb.ppl.sbc import SBCResult, rank_uniformity, simulation_based_calibration

BUDGET = {"n_simulations": 200, "n_draws": 49, "n_bins": 10, "random_state": 0}


@functools.cache
def right_result(name):
    """SBC of the case's correctly fitted estimator at BUDGET (the same run for both tests below)."""
    return simulation_based_calibration(fitted(name).estimator, 8, **BUDGET)


@pytest.mark.parametrize("name", NAMES)
def test_every_family_is_calibrated(name):
    result = right_result(name)
    assert isinstance(result, SBCResult)
    assert result.passed, repr(result)
    assert result.ranks.shape == (200, len(result.names))
    assert result.ranks.min() >= 0 and result.ranks.max() <= 49
    # The held-out labels' ranks and the chain rule of the evidence, every family.
    assert result.predictive_ranks.shape == (200, 4) and result.predictive_p_value >= 0.01
    assert result.evidence_holds is True and result.max_evidence_deviation < 1e-10, repr(result)
    # Every free scalar parameter is ranked (covariances: upper triangle; no padding).
    if name == "gaussian_full":
        assert len(result.names) == 3 + 3 * 2 + 3 * 3


class WrongVariance(GaussianNB):
    """Counts every row as a whole unit of the inverse-gamma shape: a_n = a_0 + N (not N/2).

    The variance posterior is then about twice as confident as the data allow. (Subtler
    slips, e.g. a_n = a_0 + N/2 - 1/2, move the ranks too little for 200 simulations to
    tell them from chance reliably: they need the larger run of benchmarks/sbc_large.py.)
    """

    def _feature_posterior(self):
        post = super()._feature_posterior()
        n = np.asarray(self.stats_.class_count, dtype=float)[:, None]
        return post._replace(concentration=np.asarray(post.concentration) + 0.5 * n)


@pytest.mark.parametrize(
    "buggy, name",
    [(OffByOneCount, "multinomial"), (MissingPseudoCount, "bernoulli"), (WrongVariance, "gaussian")],
)
def test_a_wrong_posterior_fails(buggy, name):
    case = fitted(name)
    right = right_result(name)
    wrong = buggy(**case.estimator.get_params()).fit(case.X, case.y)
    # The ranks alone must reject (p < 1e-4 below): the evidence's chain rule (two thirds
    # of the run's time) is left out, so the verdict cannot come from it. The ranks do not
    # depend on it (each simulation has its own keys).
    result = simulation_based_calibration(wrong, 8, **BUDGET, check_evidence=False)
    assert right.passed and not result.passed, (repr(right), repr(result))
    assert result.p_value < 1e-4
    assert "NOT calibrated" in repr(result)


def test_rank_uniformity():
    flat = np.tile(np.arange(10), 30)[:, None]
    counts, chi2, p = rank_uniformity(flat, n_draws=9, n_bins=5)
    assert counts[:, 0].tolist() == [60] * 5 and chi2[0] == 0 and p[0] == 1
    piled = np.r_[np.zeros(100, int), np.full(100, 9)][:, None]  # U-shaped: posterior too narrow
    _, chi2, p = rank_uniformity(piled, n_draws=9, n_bins=5)
    assert chi2[0] == pytest.approx(2 * (100 - 40) ** 2 / 40 + 3 * 40**2 / 40) and p[0] < 1e-30
    with pytest.raises(ValueError, match="divide"):
        rank_uniformity(flat, n_draws=9, n_bins=3)
    with pytest.raises(ValueError, match="ranks must lie"):
        rank_uniformity(flat + 1, n_draws=9, n_bins=5)


def test_sbc_arguments_and_reproducibility():
    case = fitted("poisson")
    a = simulation_based_calibration(case.estimator, 5, n_simulations=20, n_draws=9, n_bins=5, random_state=3)
    b = simulation_based_calibration(case.estimator, 5, n_simulations=20, n_draws=9, n_bins=5, random_state=3)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    assert a.names[0] == "class_probs[ham]" and "rate[spam, x1]" in a.names
    with pytest.raises(ValueError, match="multiple of n_bins"):
        simulation_based_calibration(case.estimator, 5, n_draws=10, n_bins=5)
    with pytest.raises(ValueError, match="level"):
        simulation_based_calibration(case.estimator, 5, level=1.5)
    with pytest.raises(ValueError, match="n_samples"):
        simulation_based_calibration(case.estimator, 0)


def test_sbc_keeps_a_fixed_prior_and_the_estimator_unchanged():
    est = GaussianNB(prior=NormalInverseGamma(0.0, 1.0, 3.0, 2.0)).fit([[0.0], [1.0], [5.0], [6.0]], [0, 0, 1, 1])
    before = {k: v for k, v in vars(est).items()}
    simulation_based_calibration(est, 4, n_simulations=5, n_draws=9, n_bins=5, random_state=0)
    assert vars(est).keys() == before.keys()
    assert all(vars(est)[k] is v for k, v in before.items())


def test_plot(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    case = fitted("bernoulli")
    result = simulation_based_calibration(case.estimator, 5, n_simulations=30, n_draws=9, n_bins=5, random_state=0)
    axes = result.plot()
    assert len(axes) == 4
    plt.savefig(tmp_path / "ranks.png")
    plt.close("all")
