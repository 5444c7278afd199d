r"""Simulation-based calibration of the closed-form posteriors (Talts et al., 2018).

If data are simulated from the prior predictive, :math:`\tilde\theta \sim p(\theta)`,
:math:`\tilde D \sim p(D \mid \tilde\theta)`, and :math:`\theta_1, \dots, \theta_L` are
draws from the posterior :math:`p(\theta \mid \tilde D)`, then the rank of
:math:`\tilde\theta` among the draws, :math:`r = \#\{l : \theta_l < \tilde\theta\}`, is
uniform on :math:`\{0, \dots, L\}` for every scalar parameter, because
:math:`\tilde\theta` and the draws are exchangeable under the joint distribution. A
posterior that is off (a count too many, a prior pseudo-count missing, a wrong
variance) makes the ranks pile up at the ends (too narrow, or biased to one side) or in
the middle (too wide).

:func:`simulation_based_calibration` runs this for a fitted estimator with the
estimator's own machinery: parameters from its prior (``prior_``, the class Dirichlet),
rows from the family's ``simulate``, statistics, posterior and exact posterior draws from
the estimator's hooks (so a wrong ``posterior_`` is caught), and tests the ranks for
uniformity with :func:`rank_uniformity`.
"""

from __future__ import annotations


import jax
import numpy as np
from sklearn.utils.validation import check_is_fitted

from bayesnb.core import _fitted
from bayesnb.core import class_prior as _class_prior
from bayesnb.core._random import key_from_random_state
from bayesnb.core._validation import check_n_draws
from bayesnb.core.families.product import BlockRows

__all__ = ["simulation_based_calibration", "rank_uniformity", "SBCResult"]


def rank_uniformity(ranks, n_draws, n_bins=10):
    r"""Chi-square test that each column of ``ranks`` is uniform on ``{0, ..., n_draws}``.

    The :math:`L + 1` possible ranks (:math:`L` = ``n_draws``) are grouped into ``n_bins``
    bins of :math:`(L + 1)/\text{n\_bins}` consecutive values; with :math:`S` simulations
    each bin expects :math:`S / \text{n\_bins}` ranks, and

    .. math:: \chi^2 = \sum_b \frac{(O_b - S/B)^2}{S/B} \sim \chi^2_{B - 1}

    under uniformity (a good approximation once :math:`S/B \gtrsim 5`).

    Parameters
    ----------
    ranks : int array of shape (n_simulations, n_parameters)
    n_draws : int
        Posterior draws per simulation (:math:`L`).
    n_bins : int
        Must divide ``n_draws + 1``.

    Returns
    -------
    counts : int ndarray of shape (n_bins, n_parameters)
    chi2 : ndarray of shape (n_parameters,)
    p_values : ndarray of shape (n_parameters,)

    Examples
    --------
    >>> import numpy as np
    >>> ranks = np.arange(100)[:, None] % 10     # perfectly flat: 10 of each rank 0..9
    >>> counts, chi2, p = rank_uniformity(ranks, n_draws=9, n_bins=5)
    >>> counts[:, 0].tolist(), float(chi2[0]), float(p[0])
    ([20, 20, 20, 20, 20], 0.0, 1.0)
    """
    from scipy.stats import chi2 as chi2_dist

    ranks = np.asarray(ranks)
    if ranks.ndim == 1:
        ranks = ranks[:, None]
    n_draws = int(n_draws)
    n_bins = int(n_bins)
    if n_bins < 2 or (n_draws + 1) % n_bins:
        raise ValueError(f"n_bins={n_bins} must be >= 2 and divide n_draws + 1 = {n_draws + 1}")
    if ranks.size and (ranks.min() < 0 or ranks.max() > n_draws):
        raise ValueError(f"ranks must lie in 0 .. {n_draws}")
    n_sims = ranks.shape[0]
    bins = ranks * n_bins // (n_draws + 1)
    counts = np.stack([np.bincount(bins[:, j], minlength=n_bins) for j in range(bins.shape[1])], axis=1)
    expected = n_sims / n_bins
    chi2 = ((counts - expected) ** 2 / expected).sum(axis=0)
    return counts, chi2, chi2_dist.sf(chi2, n_bins - 1)


class SBCResult:
    """Ranks and uniformity tests of :func:`simulation_based_calibration`.

    Attributes
    ----------
    names : list of str
        One per scalar parameter, e.g. ``"feature_probs[spam, free]"``.
    ranks : int ndarray of shape (n_simulations, n_parameters)
    n_draws, n_bins : int
    counts : int ndarray of shape (n_bins, n_parameters)
        Binned rank histogram.
    chi2, p_values : ndarrays of shape (n_parameters,)
        Chi-square statistic and p-value of each parameter (:func:`rank_uniformity`).
    p_value : float
        Bonferroni-adjusted smallest p-value, :math:`\\min(1, m \\min_j p_j)`: the
        probability of a rank histogram this uneven somewhere among the :math:`m`
        parameters if the posterior is right.
    level : float
    passed : bool
        ``p_value >= level``.
    """

    def __init__(self, names, ranks, n_draws, n_bins, level):
        self.names = list(names)
        self.ranks = np.asarray(ranks)
        self.n_draws = int(n_draws)
        self.n_bins = int(n_bins)
        self.level = float(level)
        self.counts, self.chi2, self.p_values = rank_uniformity(self.ranks, self.n_draws, self.n_bins)
        m = len(self.names)
        self.p_value = float(min(1.0, m * np.min(self.p_values))) if m else 1.0
        self.passed = self.p_value >= self.level

    @property
    def n_simulations(self):
        return self.ranks.shape[0]

    def worst(self, k=5):
        """The ``k`` parameters with the smallest p-values, as (name, chi2, p) tuples."""
        order = np.argsort(self.p_values)[:k]
        return [(self.names[j], float(self.chi2[j]), float(self.p_values[j])) for j in order]

    def __bool__(self):
        return self.passed

    def __repr__(self):
        verdict = "calibrated" if self.passed else "NOT calibrated"
        lines = [
            f"SBC: {self.n_simulations} simulations x {self.n_draws} posterior draws, {len(self.names)} parameters, "
            f"{self.n_bins} rank bins: {verdict} (Bonferroni p = {self.p_value:.3g}, level {self.level:g})"
        ]
        for name, chi2, p in self.worst(3):
            lines.append(f"  {name}: chi2 = {chi2:.1f}, p = {p:.3g}")
        return "\n".join(lines)

    def plot(self, parameters=None, ax=None):
        """Rank histograms with the 99% band of a uniform histogram.

        Parameters
        ----------
        parameters : list of str, optional
            Default: the four with the smallest p-values.
        ax : array of matplotlib Axes, optional

        Returns
        -------
        array of matplotlib Axes
        """
        import matplotlib.pyplot as plt
        from scipy.stats import binom

        if parameters is None:
            parameters = [name for name, _, _ in self.worst(4)]
        index = [self.names.index(p) for p in parameters]
        if ax is None:
            _, ax = plt.subplots(1, len(index), figsize=(3.2 * len(index), 2.6), squeeze=False)
            ax = ax[0]
        ax = np.atleast_1d(ax)
        lo, hi = binom.ppf([0.005, 0.995], self.n_simulations, 1.0 / self.n_bins)
        for a, j in zip(ax, index):
            a.axhspan(lo, hi, color="0.85")
            a.bar(np.arange(self.n_bins), self.counts[:, j], width=1.0, edgecolor="k")
            a.set_title(f"{self.names[j]}\np = {self.p_values[j]:.2g}", fontsize=8)
            a.set_xlabel("rank bin")
        return ax


def _ranks(draws, truth, masks):
    """Rank of the true value among the draws, for every free scalar of every parameter."""
    out = []
    for name, mask in masks.items():
        out.append(np.sum(draws[name][:, mask] < truth[name][0][mask], axis=0))
    return np.concatenate(out)


def simulation_based_calibration(
    estimator, n_samples, *, n_simulations=200, n_draws=99, n_bins=10, level=0.01, random_state=None
):
    r"""Simulation-based calibration of a fitted estimator's closed-form posterior.

    The fitted estimator defines the model: its prior (``prior_``, which stays fixed,
    also for data-scaled default priors), its class proportions (``class_dirichlet_`` or
    the fixed ``class_prior_``), its classes, features and categories. For each of
    ``n_simulations`` simulations:

    1. :math:`(\tilde\pi, \tilde\theta)` from the prior;
    2. ``n_samples`` labels :math:`y \sim \mathrm{Cat}(\tilde\pi)` and rows
       :math:`x \sim p(x \mid \tilde\theta_y)` (the family's ``simulate``; documents of a
       multinomial model take lengths as :func:`bayesnb.core.families.multinomial.default_lengths`);
    3. the posterior given these rows through the estimator's own statistics and
       posterior hooks, and ``n_draws`` exact posterior draws (the family's ``sample``);
    4. the rank of every true scalar parameter among its draws.

    Then each parameter's ranks are tested for uniformity (:func:`rank_uniformity`) and
    the smallest p-value is Bonferroni-adjusted for the number of parameters.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    n_samples : int
        Rows per simulated data set (small data are the demanding case: the prior and
        every pseudo-count matter).
    n_simulations : int
    n_draws : int
        Posterior draws per simulation; ``n_draws + 1`` must be a multiple of ``n_bins``.
    n_bins : int
    level : float
        The check passes when the adjusted p-value is at least ``level``.
    random_state : int, RandomState, Generator, jax key or None

    Returns
    -------
    SBCResult

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB
    >>> from bayesnb.ppl.sbc import simulation_based_calibration
    >>> clf = BernoulliNB(alpha=(2.0, 3.0)).fit([[1, 0], [1, 1], [0, 1], [0, 0]], [0, 0, 1, 1])
    >>> result = simulation_based_calibration(clf, 10, n_simulations=100, n_draws=19, n_bins=5, random_state=0)
    >>> result.passed, result.ranks.shape
    (True, (100, 6))
    """
    from bayesnb.ppl import export, models

    check_is_fitted(estimator, "stats_")
    n_samples = check_n_draws(n_samples, "n_samples")
    n_simulations = check_n_draws(n_simulations, "n_simulations")
    n_draws = check_n_draws(n_draws, "n_draws")
    if not 0 < float(level) < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if int(n_bins) < 2 or (n_draws + 1) % int(n_bins):
        raise ValueError(f"n_draws + 1 = {n_draws + 1} must be a multiple of n_bins = {n_bins} (>= 2)")
    blocks = models.block_specs(estimator)
    mixed = len(blocks) > 1 or blocks[0][0] != ""
    dims = models.variable_dims(estimator)
    coords = export.coords_of(estimator)
    key = key_from_random_state(random_state)
    names, masks, ranks = None, None, []
    for s in range(n_simulations):
        key_prior, key_labels, key_rows, key_post = jax.random.split(jax.random.fold_in(key, s), 4)
        log_pi, params = _fitted.draws(estimator, 1, key_prior, prior=True)
        truth = export.parameter_draws(estimator, log_pi, params)
        y_index = _class_prior.sample_labels(key_labels, log_pi[0], n_samples)
        key_class, *key_blocks = jax.random.split(key_post, 1 + len(blocks))
        row_keys = jax.random.split(key_rows, len(blocks))
        simulated = []
        for (name, block, _, _), key_x in zip(blocks, row_keys):
            true_params = jax.tree.map(lambda a: np.asarray(a)[0], params[name] if mixed else params)
            simulated.append(np.asarray(block.family.simulate(key_x, true_params, y_index, block.stats)))
        # What SBC calibrates is the estimator's own computation of its posterior from
        # data: its statistics of the simulated rows (its own tables, e.g. category
        # counts; a mixed model's are its blocks'), then its conjugate update of the prior
        # they were drawn from.
        X_sim = BlockRows(simulated, (n_samples, estimator.n_features_in_)) if mixed else simulated[0]
        posterior = estimator.posterior_from_stats(estimator.validated_stats(X_sim, y_index))
        posterior_params = {
            name: jax.tree.map(np.asarray, block.family.sample(key_draw, posterior[name] if mixed else posterior, n_draws))
            for (name, block, _, _), key_draw in zip(blocks, key_blocks)
        }
        if estimator.class_dirichlet_ is not None:
            counts = np.bincount(y_index, minlength=estimator.classes_.size).astype(np.float64)
            post = _class_prior.posterior(estimator.class_dirichlet_, counts)
            log_class = np.asarray(_class_prior.sample_log(key_class, post, n_draws))
        else:
            log_class = np.broadcast_to(np.log(estimator.class_prior_), (n_draws, estimator.classes_.size))
        draws = export.parameter_draws(estimator, log_class, posterior_params if mixed else posterior_params[""])
        if masks is None:
            masks = {name: export.scalar_mask(dims[name], truth[name][0]) for name in truth}
            names = [
                label
                for name, mask in masks.items()
                for label, keep in zip(export.scalar_labels(name, dims[name], coords, mask.shape), mask.ravel())
                if keep
            ]
        ranks.append(_ranks(draws, truth, masks))
    return SBCResult(names, np.stack(ranks), n_draws, n_bins, level)
