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
estimator's own machinery and checks three things per simulated data set :math:`\tilde D`:

* **the posterior**: parameters from its prior (``prior_``, the class Dirichlet), rows
  from the family's ``simulate``, then the estimator conditioned on the rows' statistics
  (``estimator.with_stats(estimator.validated_stats(X, y))``: its own statistics, its
  own feature *and* class posterior), and the rank of every true scalar parameter among
  exact draws from that posterior;
* **the posterior predictive**: held-out rows :math:`(\tilde x, \tilde y)` simulated from
  the same :math:`\tilde\theta`, their labels scored under the conditioned estimator's
  exact predictive :math:`p(y \mid \tilde x, \tilde D)`. The true label and labels drawn
  from that predictive are exchangeable, so the rank of the true label's probability
  among the drawn labels' (ties broken at random) is uniform, and so is the randomized
  PIT of the label in class order, :math:`F(\tilde y - 1) + V p(\tilde y)`,
  :math:`V \sim U(0, 1)`. An over-confident predictive piles the first at the low end
  and an under-confident one at the high end; a predictive shifted towards some
  classes tilts the second. Ranks see little of a predictive that is merely too wide
  or too sharp on rows that carry little information, so its *sharpness* is tested
  directly too: the probability :math:`q(\tilde y)` the predictive gives the true label
  has expectation :math:`\sum_c q_c^2` under the predictive itself, so their difference
  has mean zero when the predictive is right, is positive on average when it is too
  wide (a tempered classifier, :math:`T > 1`) and negative when it is too sharp; its
  sum over the simulations' first held-out rows is tested against its exact variance;
* **the evidence**, by the chain rule: the closed-form log evidence of
  :math:`\tilde D` equals :math:`\sum_i \log p(x_i, y_i \mid x_{<i}, y_{<i})`, the sum of
  one-row log predictives of the estimator conditioned on the rows before. This is an
  identity, checked to a relative ``1e-8``.

The ranks are tested for uniformity with :func:`rank_uniformity`; the smallest p-value
over all ranked quantities and the sharpness test is Bonferroni-adjusted, which bounds the probability of a
false alarm anywhere among them by ``level`` whatever their dependence. A verdict is
given only when the test can mean something (see :data:`MIN_EXPECTED_PER_BIN`).
"""

from __future__ import annotations


import jax
import numpy as np
from scipy.special import erfc, logsumexp

from bayesnb.core import _fitted
from bayesnb.core import class_prior as _class_prior
from bayesnb.core._random import key_from_random_state
from bayesnb.core._validation import check_n_draws
from bayesnb.core.families._rows import generator
from bayesnb.core.families.product import BlockRows

__all__ = ["simulation_based_calibration", "rank_uniformity", "SBCResult", "MIN_EXPECTED_PER_BIN", "min_simulations"]

#: A verdict needs at least this many expected ranks in every bin: ``n_simulations >=
#: MIN_EXPECTED_PER_BIN * n_bins`` (100 simulations for the default 10 bins). Below it
#: the chi-square p-values are not trustworthy in the far tail that the Bonferroni
#: adjustment over tens of quantities reads: with 5 expected per bin (50 simulations,
#: 10 bins) the true tail probability at a nominal 1e-4 is about 1.7 times that (2e6
#: multinomial replicates), while with 10 per bin it is within 10%. Nor does a pass of
#: so few simulations say much: at 50 simulations a posterior with one token counted
#: too many (``OffByOneCount`` of the tests) passes in three seeds of four, though a
#: gross error (an inverse-gamma shape twice too large) is caught. So 50 simulations
#: at the default 10 bins give no verdict, by construction; above the rule a correct
#: model is called NOT calibrated with probability at most ``level`` (Bonferroni).
MIN_EXPECTED_PER_BIN = 10

#: Relative tolerance of the chain-rule identity of the evidence.
EVIDENCE_RTOL = 1e-8


def min_simulations(n_bins):
    """The fewest simulations for which :func:`simulation_based_calibration` gives a verdict.

    Parameters
    ----------
    n_bins : int

    Returns
    -------
    int
        ``MIN_EXPECTED_PER_BIN * n_bins``.
    """
    return MIN_EXPECTED_PER_BIN * int(n_bins)


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
    counts = np.zeros((n_bins, bins.shape[1]), dtype=np.int64)
    for j in range(bins.shape[1]):
        counts[:, j] = np.bincount(bins[:, j], minlength=n_bins)
    expected = n_sims / n_bins
    chi2 = ((counts - expected) ** 2 / expected).sum(axis=0)
    return counts, chi2, chi2_dist.sf(chi2, n_bins - 1)


class SBCResult:
    r"""Ranks, uniformity tests and the evidence check of :func:`simulation_based_calibration`.

    Attributes
    ----------
    names : list of str
        One per scalar parameter, e.g. ``"feature_probs[spam, free]"``.
    ranks : int ndarray of shape (n_simulations, n_parameters)
        Rank of each true parameter among its ``n_draws`` posterior draws.
    predictive_names : list of str
        One per ranked predictive quantity, e.g. ``"p(y | x, D)[row 0]: label probability rank"``.
    predictive_ranks : int ndarray of shape (n_simulations, n_predictive_quantities)
        Ranks in ``0 .. n_draws`` of the held-out labels (two per held-out row: the rank of
        the true label's probability among ``n_draws`` labels drawn from the predictive,
        and the randomized PIT of the label scaled to ``0 .. n_draws``).
    n_draws, n_bins : int
    counts : int ndarray of shape (n_bins, n_parameters)
        Binned rank histogram of the parameters.
    chi2, p_values : ndarrays of shape (n_parameters,)
        Chi-square statistic and p-value of each parameter (:func:`rank_uniformity`).
    predictive_counts : int ndarray of shape (n_bins, n_predictive_quantities)
    predictive_chi2, predictive_p_values : ndarrays of shape (n_predictive_quantities,)
    sharpness : ndarray of shape (n_simulations,) or None
        Per simulation, :math:`q(\tilde y) - \sum_c q_c^2` for its first held-out row
        (:math:`q` that row's predictive): mean zero when the predictive is right,
        positive on average when it is too wide, negative when too sharp.
    sharpness_variance : ndarray of shape (n_simulations,) or None
        Its variance under :math:`q`, :math:`\sum_c q_c^3 - (\sum_c q_c^2)^2`.
    sharpness_z, sharpness_p_value : float
        :math:`\sum_s` ``sharpness`` over the square root of :math:`\sum_s`
        ``sharpness_variance``, and its two-sided normal p-value (NaN and 1.0 where
        there is nothing to test).
    n_tests : int
        ``n_parameters + n_predictive_quantities`` (+ 1 for the sharpness test): the
        number of tests.
    p_value : float
        Bonferroni-adjusted smallest p-value over all tests, :math:`\min(1, m \min_j p_j)`
        with :math:`m` = ``n_tests``: it bounds the probability of a rank histogram this
        uneven anywhere among them if the posterior and predictive are right.
    parameter_p_value, predictive_p_value : float
        The same adjustment (by ``n_tests``) of the smallest p-value among the parameters,
        and among the predictive quantities and the sharpness test (1.0 where there are
        none).
    evidence_deviation : ndarray of shape (n_simulations,)
        :math:`|\log p(\tilde D) - \sum_i \log p(x_i, y_i \mid \tilde D_{<i})|` per
        simulation (NaN where not checked).
    evidence_scale : ndarray of shape (n_simulations,)
        :math:`1 + |\log p(\tilde D)|`, the scale of the relative tolerance.
    evidence_rtol : float
    evidence_holds : bool or None
        Whether every checked deviation is within ``evidence_rtol * evidence_scale``
        (None when none was checked).
    level : float
    min_simulations : int
        The fewest simulations for a verdict (:func:`bayesnb.ppl.sbc.min_simulations`).
    calibrated : bool or None
        False when the evidence identity fails (an exact identity: no number of
        simulations is too few to see it broken); else None with fewer than
        ``min_simulations`` simulations (too few for a verdict); else ``p_value >= level``.
    passed : bool or None
        ``calibrated`` (the older name).
    """

    def __init__(
        self,
        names,
        ranks,
        n_draws,
        n_bins,
        level,
        predictive_names=(),
        predictive_ranks=None,
        evidence_deviation=None,
        evidence_scale=None,
        evidence_rtol=EVIDENCE_RTOL,
        sharpness=None,
        sharpness_variance=None,
    ):
        self.names = list(names)
        self.ranks = np.asarray(ranks)
        self.n_draws = int(n_draws)
        self.n_bins = int(n_bins)
        self.level = float(level)
        n_sims = self.ranks.shape[0]
        self.counts, self.chi2, self.p_values = rank_uniformity(self.ranks, self.n_draws, self.n_bins)
        self.predictive_names = list(predictive_names)
        if predictive_ranks is None:
            predictive_ranks = np.zeros((n_sims, 0), dtype=np.int64)
        self.predictive_ranks = np.asarray(predictive_ranks).reshape(n_sims, len(self.predictive_names))
        self.predictive_counts, self.predictive_chi2, self.predictive_p_values = rank_uniformity(
            self.predictive_ranks, self.n_draws, self.n_bins
        )
        self.sharpness = None if sharpness is None else np.asarray(sharpness, dtype=np.float64).reshape(n_sims)
        self.sharpness_variance = (
            None if sharpness is None else np.asarray(sharpness_variance, dtype=np.float64).reshape(n_sims)
        )
        self.sharpness_z, self.sharpness_p_value = _sharpness_test(self.sharpness, self.sharpness_variance)
        self.n_tests = len(self.names) + len(self.predictive_names) + (self.sharpness is not None)
        m = self.n_tests

        def adjusted(p):
            return float(min(1.0, m * np.min(p))) if np.size(p) else 1.0

        self.parameter_p_value = adjusted(self.p_values)
        predictive_p = self.predictive_p_values
        if self.sharpness is not None:
            predictive_p = np.append(predictive_p, self.sharpness_p_value)
        self.predictive_p_value = adjusted(predictive_p)
        self.p_value = min(self.parameter_p_value, self.predictive_p_value)
        nan = np.full(n_sims, np.nan)
        self.evidence_deviation = nan if evidence_deviation is None else np.asarray(evidence_deviation, np.float64)
        self.evidence_scale = nan if evidence_scale is None else np.asarray(evidence_scale, np.float64)
        self.evidence_rtol = float(evidence_rtol)
        checked = ~np.isnan(self.evidence_deviation)
        self.evidence_holds = (
            bool(np.all(self.evidence_deviation[checked] <= self.evidence_rtol * self.evidence_scale[checked]))
            if checked.any()
            else None
        )
        self.min_simulations = min_simulations(self.n_bins)
        if self.evidence_holds is False:
            self.calibrated = False
        elif n_sims < self.min_simulations:
            self.calibrated = None
        else:
            self.calibrated = bool(self.p_value >= self.level)
        self.passed = self.calibrated

    @property
    def n_simulations(self):
        """int: the number of simulated data sets."""
        return self.ranks.shape[0]

    @property
    def max_evidence_deviation(self):
        """float: the largest chain-rule deviation of the log evidence (NaN if none was checked)."""
        d = self.evidence_deviation[~np.isnan(self.evidence_deviation)]
        return float(d.max()) if d.size else float("nan")

    def _all(self):
        names = self.names + self.predictive_names
        chi2 = np.concatenate([self.chi2, self.predictive_chi2])
        p = np.concatenate([self.p_values, self.predictive_p_values])
        counts = np.concatenate([self.counts, self.predictive_counts], axis=1)
        return names, chi2, p, counts

    def worst(self, k=5):
        """The ``k`` ranked quantities (parameters or predictive) with the smallest p-values.

        Returns
        -------
        list of (name, chi2, p) tuples
        """
        names, chi2, p, _ = self._all()
        order = np.argsort(p, kind="stable")[:k]
        return [(names[j], float(chi2[j]), float(p[j])) for j in order]

    def verdict(self):
        """str: the one-line verdict (``calibrated``, ``NOT calibrated`` or why there is none)."""
        if self.calibrated is None:
            return (
                f"too few simulations for a verdict (n={self.n_simulations}, need >= {self.min_simulations}: "
                f"{MIN_EXPECTED_PER_BIN} expected ranks in each of {self.n_bins} bins)"
            )
        return "calibrated" if self.calibrated else "NOT calibrated"

    def __bool__(self):
        return self.calibrated is True

    def __repr__(self):
        lines = [
            f"SBC: {self.n_simulations} simulations x {self.n_draws} draws, {len(self.names)} parameters and "
            f"{len(self.predictive_names)} predictive ranks, {self.n_bins} rank bins: {self.verdict()}",
            f"  ranks: Bonferroni p = {self.p_value:.3g} over {self.n_tests} tests (level {self.level:g}); "
            f"posterior p = {self.parameter_p_value:.3g}, predictive p = {self.predictive_p_value:.3g}",
        ]
        if self.sharpness is not None:
            lines.append(
                f"  label sharpness: mean of q(y) - sum_c q_c^2 = {np.mean(self.sharpness):.3g} over first rows "
                f"(z = {self.sharpness_z:.2f}, p = {self.sharpness_p_value:.3g}; > 0: too wide, < 0: too sharp)"
            )
        if self.evidence_holds is None:
            lines.append("  evidence chain rule: not checked")
        else:
            n_checked = int(np.sum(~np.isnan(self.evidence_deviation)))
            lines.append(
                f"  evidence chain rule: max |log p(D) - sum_i log p(x_i, y_i | D_<i)| = "
                f"{self.max_evidence_deviation:.2g} over {n_checked} simulations "
                f"(tolerance {self.evidence_rtol:g} x (1 + |log p(D)|)): {'holds' if self.evidence_holds else 'FAILS'}"
            )
        for name, chi2, p in self.worst(3):
            lines.append(f"  {name}: chi2 = {chi2:.1f}, p = {p:.3g}")
        return "\n".join(lines)

    def plot(self, parameters=None, ax=None):
        """Rank histograms with the 99% band of a uniform histogram.

        Parameters
        ----------
        parameters : list of str, optional
            Names from ``names`` or ``predictive_names``. Default: the four with the
            smallest p-values.
        ax : array of matplotlib Axes, optional

        Returns
        -------
        array of matplotlib Axes
        """
        import matplotlib.pyplot as plt
        from scipy.stats import binom

        names, _, p_values, counts = self._all()
        if parameters is None:
            parameters = [name for name, _, _ in self.worst(4)]
        index = [names.index(p) for p in parameters]
        if ax is None:
            _, ax = plt.subplots(1, len(index), figsize=(3.2 * len(index), 2.6), squeeze=False)
            ax = ax[0]
        ax = np.atleast_1d(ax)
        lo, hi = binom.ppf([0.005, 0.995], self.n_simulations, 1.0 / self.n_bins)
        for a, j in zip(ax, index):
            a.axhspan(lo, hi, color="0.85")
            a.bar(np.arange(self.n_bins), counts[:, j], width=1.0, edgecolor="k")
            a.set_title(f"{names[j]}\np = {p_values[j]:.2g}", fontsize=8)
            a.set_xlabel("rank bin")
        return ax


def _ranks(draws, truth, masks):
    """Rank of the true value among the draws, for every free scalar of every parameter."""
    out = []
    for name, mask in masks.items():
        out.append(np.sum(draws[name][:, mask] < truth[name][0][mask], axis=0))
    return np.concatenate(out)


def _class_log_predictive(fitted):
    r"""Log predictive class proportions :math:`\log p(y = c \mid D)` of a conditioned model (FittedModel), (n_classes,).

    :math:`E[\pi \mid D]` under its class posterior (the mean of the Dirichlet), or
    the fixed class proportions.
    """
    if fitted.class_posterior is None:
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(fitted.class_prior, dtype=np.float64))
    conc = np.asarray(fitted.class_posterior.concentration, dtype=np.float64)
    return np.log(conc) - np.log(conc.sum())


def _feature_log_predictive(fitted, X):
    r""":math:`\log p(x \mid y = c, D)` of validated rows under a conditioned model (FittedModel), (n_rows, n_classes).

    The family's exact posterior predictive of the posterior (what ``predict*`` use with
    ``estimate="predictive"``; for the plug-in families it equals the plug-in of the mean).
    """
    return np.asarray(fitted.family.log_predictive(fitted.posterior, X), dtype=np.float64)


def _stats(fitted, parts, y_index):
    """Statistics of validated simulated rows through the estimator's own ``validated_stats`` (a mixed model's: its blocks')."""
    return fitted.validated_stats(_rows(fitted, parts, 0, len(y_index)), y_index)


def _rows(fitted, parts, start, stop):
    """Rows ``start:stop`` of the simulated block pieces, in the form the model's family scores."""
    pieces = [X[start:stop] for X in parts]
    if not _fitted.is_mixed(fitted):
        return pieces[0]
    return BlockRows(pieces, (stop - start, int(fitted.n_features_in)))


def _predictive_ranks(rng, log_p, y_true, n_draws):
    r"""Two ranks in ``0 .. n_draws`` per held-out row: label-probability rank and randomized PIT.

    Parameters
    ----------
    rng : numpy Generator
    log_p : ndarray of shape (n_rows, n_classes)
        Normalised :math:`\log p(y = c \mid x, D)`.
    y_true : int ndarray of shape (n_rows,)
    n_draws : int

    Returns
    -------
    int ndarray of shape (n_rows, 2)
    """
    p = np.exp(log_p)
    n_rows, n_classes = p.shape
    cdf = np.cumsum(p, axis=1)
    u = rng.random((n_draws, n_rows)) * cdf[:, -1]
    drawn = (cdf[None, :, :] <= u[:, :, None]).sum(axis=-1).clip(max=n_classes - 1)  # (L, n_rows)
    rows = np.arange(n_rows)
    p_true = p[rows, y_true]
    p_drawn = p[rows[None, :], drawn]
    below = np.sum(p_drawn < p_true, axis=0)
    ties = np.sum(p_drawn == p_true, axis=0)
    # A tie with the true label's probability is below it with probability 1/2 each:
    # a uniform position among the tied draws keeps the rank exactly uniform.
    prob_rank = below + np.floor(rng.random(n_rows) * (ties + 1)).astype(np.int64)
    lower = np.where(y_true > 0, cdf[rows, np.maximum(y_true - 1, 0)], 0.0) / cdf[:, -1]
    pit = lower + rng.random(n_rows) * p_true / cdf[:, -1]
    pit_rank = np.minimum(np.floor(pit * (n_draws + 1)).astype(np.int64), n_draws)
    return np.stack([prob_rank, pit_rank], axis=1)


def _label_sharpness(log_p, y_true):
    r"""(:math:`q(y) - \sum_c q_c^2`, its variance under ``q``) for the first held-out row.

    Under the predictive :math:`q` itself the first has mean zero and the second is
    :math:`\sum_c q_c^3 - (\sum_c q_c^2)^2`. Only one row per simulation is used: the
    held-out rows of one simulation share :math:`\tilde D`, so their labels are not
    independent given their predictives, while the first rows of different simulations
    are.
    """
    q = np.exp(log_p[0])
    second = float(np.sum(q * q))
    return float(q[int(y_true[0])]) - second, max(float(np.sum(q**3)) - second**2, 0.0)


def _sharpness_test(values, variances):
    r"""(z, two-sided p) of :math:`\sum_s v_s` against its exact null variance :math:`\sum_s \sigma^2_s`.

    The terms are independent, bounded and of known variance, so the sum is close to
    normal (its false-alarm rate is checked against exact predictives in the tests).
    """
    if values is None or values.size == 0:
        return float("nan"), 1.0
    scale = float(np.sqrt(np.sum(variances)))
    if not scale > 0:
        return float("nan"), 1.0
    z = float(np.sum(values)) / scale
    return z, float(erfc(abs(z) / np.sqrt(2.0)))


def _chain_rule(fitted, conditioned, parts, y_index):
    r"""(:math:`\log p(D)` in closed form, :math:`\sum_i \log p(x_i, y_i \mid D_{<i})`) of simulated rows.

    Both through the model conditioned on statistics by the estimator's own update
    (``fitted.condition``): the log evidence of ``conditioned`` (the model
    conditioned on all ``len(y_index)`` rows), and each row's untempered exact predictive
    given the rows before it (the class part :math:`\log p(y_i \mid y_{<i})`, the feature
    part :math:`\log p(x_i \mid y_i, D_{<i})`).
    """
    n = int(np.shape(y_index)[0])
    closed = _fitted.log_evidence(conditioned)
    total = 0.0
    for i in range(n):
        before = fitted.condition(_stats(fitted, [X[:i] for X in parts], y_index[:i]))
        c = int(y_index[i])
        row = _rows(fitted, parts, i, i + 1)
        total += _class_log_predictive(before)[c] + _feature_log_predictive(before, row)[0, c]
    return closed, float(total)


def simulation_based_calibration(
    estimator,
    n_samples,
    *,
    n_simulations=200,
    n_draws=99,
    n_bins=10,
    level=0.01,
    n_predictive=2,
    check_evidence=True,
    random_state=None,
):
    r"""Simulation-based calibration of a fitted estimator's posterior, predictive and evidence.

    The fitted estimator defines the model: its prior (``prior_``, which stays fixed,
    also for data-scaled default priors), its class proportions (``class_dirichlet_`` or
    the fixed ``class_prior_``), its classes, features and categories. For each of
    ``n_simulations`` simulations:

    1. :math:`(\tilde\pi, \tilde\theta)` from the prior;
    2. ``n_samples + n_predictive`` labels :math:`y \sim \mathrm{Cat}(\tilde\pi)` and rows
       :math:`x \sim p(x \mid \tilde\theta_y)` (the family's ``simulate``; documents of a
       multinomial model take lengths as :func:`bayesnb.core.families.multinomial.default_lengths`);
    3. the estimator conditioned on the first ``n_samples`` rows through its own public
       path, ``estimator.with_stats(estimator.validated_stats(X, y))`` (a MixedNB: each
       block's ``validated_stats``): its feature posterior ``posterior_`` and its class
       posterior ``class_posterior_``, with ``n_draws`` exact draws of each;
    4. the rank of every true scalar parameter among its draws;
    5. for each of the ``n_predictive`` held-out rows, the conditioned estimator's exact
       predictive :math:`p(y \mid x, \tilde D) \propto p(y \mid \tilde D)\,
       p(x \mid y, \tilde D)^{1/T}` (``T`` its ``temperature_``: a tempered estimator is
       calibrated only at ``T = 1``), and two ranks of the held-out label in
       ``0 .. n_draws``: that of its probability among the probabilities of ``n_draws``
       labels drawn from the predictive (ties broken at random), and its randomized PIT
       in class order; and, for the first of them, the label's probability less its
       expectation under the predictive, :math:`q(\tilde y) - \sum_c q_c^2` (the
       sharpness test: zero mean, known variance);
    6. with ``check_evidence``, the chain rule: the log evidence of the conditioned
       model (:func:`bayesnb.core._fitted.log_evidence`, the estimator's
       ``log_evidence()``) against the sum of the ``n_samples`` one-row log predictives, each given
       the rows before it.

    Each ranked quantity is tested for uniformity (:func:`rank_uniformity`), the
    sharpness terms for a zero sum, and the smallest p-value is Bonferroni-adjusted for
    the number of tests; a verdict needs
    ``n_simulations >= MIN_EXPECTED_PER_BIN * n_bins`` (:func:`min_simulations`), except
    that a broken evidence identity is a failure at any number of simulations.

    Parameters
    ----------
    estimator : fitted bayesnb estimator or its FittedModel
        The pytree (``estimator.fitted_model()``) carries the estimator's own
        statistics and conjugate update (``validated_stats``, ``condition``), and its
        evidence is :func:`bayesnb.core._fitted.log_evidence`, which the estimator's
        ``log_evidence()`` returns, so the result is the same from either.
    n_samples : int
        Rows per simulated data set (small data are the demanding case: the prior and
        every pseudo-count matter).
    n_simulations : int
    n_draws : int
        Posterior (and predictive label) draws per simulation; ``n_draws + 1`` must be a
        multiple of ``n_bins``.
    n_bins : int
    level : float
        The family-wise false alarm rate: the check passes when the Bonferroni-adjusted
        p-value is at least ``level``.
    n_predictive : int
        Held-out rows per simulation whose labels are ranked (0: the predictive is not
        checked). Each row is its own pair of tests: rows of one simulation share
        :math:`\tilde D`, so their ranks are not independent of each other.
    check_evidence : bool
        Check the chain rule of the evidence in every simulation (``n_samples``
        conditioned estimators per simulation).
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
    >>> result.calibrated, result.ranks.shape, result.predictive_ranks.shape, result.evidence_holds
    (True, (100, 6), (100, 4), True)
    >>> simulation_based_calibration(clf, 10, n_simulations=40, n_draws=19, n_bins=5, random_state=0).calibrated is None
    True
    """
    from bayesnb.ppl import export, models

    n_samples = check_n_draws(n_samples, "n_samples")
    n_simulations = check_n_draws(n_simulations, "n_simulations")
    n_draws = check_n_draws(n_draws, "n_draws")
    if isinstance(n_predictive, bool) or not isinstance(n_predictive, (int, np.integer)) or n_predictive < 0:
        raise ValueError(f"n_predictive must be a non-negative integer, got {n_predictive!r}")
    n_predictive = int(n_predictive)
    if not 0 < float(level) < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if int(n_bins) < 2 or (n_draws + 1) % int(n_bins):
        raise ValueError(f"n_draws + 1 = {n_draws + 1} must be a multiple of n_bins = {n_bins} (>= 2)")
    # The estimator is read once here (its FittedModel); below, its own conjugate update
    # is asked through the pytree (fitted.condition), the evidence computed from it
    # (_fitted.log_evidence, the estimator's log_evidence()).
    fitted = _fitted.as_fitted(estimator)
    blocks = _fitted.blocks(fitted)
    mixed = _fitted.is_mixed(fitted)
    dims = models.variable_dims(fitted)
    coords = export.coords_of(fitted)
    temperature = _fitted.temperature(fitted)
    key = key_from_random_state(random_state)
    n_total = n_samples + n_predictive
    names, masks, ranks, predictive, sharpness, deviation, scale = None, None, [], [], [], [], []
    for s in range(n_simulations):
        key_prior, key_labels, key_rows, key_post, key_pred = jax.random.split(jax.random.fold_in(key, s), 5)
        log_pi, params = _fitted.draws(fitted, 1, key_prior, prior=True)
        truth = export.parameter_draws(fitted, log_pi, params)
        y_all = _class_prior.sample_labels(key_labels, log_pi[0], n_total)
        y_index = y_all[:n_samples]
        parts = []
        for block, key_x in zip(blocks, jax.random.split(key_rows, len(blocks))):
            true_params = jax.tree.map(lambda a: np.asarray(a)[0], params[block.name] if mixed else params)
            parts.append(np.asarray(block.family.simulate(key_x, true_params, y_all, block.stats)))
        # What SBC calibrates is the estimator's own computation from data: its statistics
        # of the simulated rows (its own tables, e.g. category counts), then its conjugate
        # update of the prior they were drawn from, features and class proportions alike.
        conditioned = fitted.condition(_stats(fitted, [X[:n_samples] for X in parts], y_index))
        key_class, key_feat = jax.random.split(key_post)
        log_class = _fitted.class_log_draws(key_class, conditioned, n_draws)
        posterior_params = jax.tree.map(
            np.asarray, conditioned.family.sample(key_feat, conditioned.posterior, n_draws)
        )
        draws = export.parameter_draws(fitted, log_class, posterior_params)
        if masks is None:
            masks = {name: export.scalar_mask(dims[name], truth[name][0]) for name in truth}
            names = [
                label
                for name, mask in masks.items()
                for label, keep in zip(export.scalar_labels(name, dims[name], coords, mask.shape), mask.ravel())
                if keep
            ]
        ranks.append(_ranks(draws, truth, masks))
        if n_predictive:
            X_new = _rows(fitted, parts, n_samples, n_total)
            joint = _feature_log_predictive(conditioned, X_new) / temperature + _class_log_predictive(conditioned)
            log_p = joint - logsumexp(joint, axis=1, keepdims=True)
            predictive.append(_predictive_ranks(generator(key_pred), log_p, y_all[n_samples:], n_draws).ravel())
            sharpness.append(_label_sharpness(log_p, y_all[n_samples:]))
        if check_evidence:
            closed, chained = _chain_rule(fitted, conditioned, parts, y_index)
            deviation.append(abs(closed - chained))
            scale.append(1.0 + abs(closed))
    predictive_names = [
        f"p(y | x, D)[row {k}]: {what}" for k in range(n_predictive) for what in ("label probability rank", "label PIT")
    ]
    return SBCResult(
        names,
        np.stack(ranks),
        n_draws,
        n_bins,
        level,
        predictive_names=predictive_names,
        predictive_ranks=np.stack(predictive) if n_predictive else None,
        evidence_deviation=deviation if check_evidence else None,
        evidence_scale=scale if check_evidence else None,
        sharpness=[v for v, _ in sharpness] if n_predictive else None,
        sharpness_variance=[v for _, v in sharpness] if n_predictive else None,
    )
