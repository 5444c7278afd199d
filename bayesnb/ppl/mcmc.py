r"""Cross-check of the closed-form posterior against NUTS on the numpyro model.

:func:`crosscheck` runs numpyro's NUTS on the generative model of a fitted estimator
(:func:`bayesnb.ppl.models.model_from_estimator`: the estimator's own prior hyperparameters
and class-proportion settings, conditioned on the data ``X, y``) and compares:

* every scalar parameter: the closed-form posterior mean and standard deviation
  (:func:`bayesnb.ppl.models.posterior_moments`, from the estimator's ``posterior_`` and
  class posterior as they are when :func:`crosscheck` is called) next to the MCMC mean
  and standard deviation, their Monte Carlo standard errors (MCSE, arviz's), the
  z-scores :math:`z = (\bar\theta_{\rm MCMC} - E[\theta \mid D]) / \mathrm{MCSE}` and
  :math:`z_{sd} = (s_{\rm MCMC} - \mathrm{sd}[\theta \mid D]) / \mathrm{MCSE}_{sd}`;
  the quantiles 0.05, 0.5 and 0.95 through the probability integral transform: the
  MCMC mass below the closed form's :math:`q`-quantile (of ``N_EXACT`` exact iid
  draws of the same ``posterior_``) is :math:`q` up to its MCSE and the error of that
  quantile, :math:`z_q = (\hat F_{\rm MCMC}(\hat\theta_q) - q) /
  \sqrt{\mathrm{MCSE}^2 + q(1-q)/N}`. Means alone are blind to an error of spread (a
  posterior of the right centre and twice the width); the sd and the tail quantiles
  see it. Then the bulk effective sample size and the rank-normalised split
  :math:`\hat R`, bulk and tail;
* for an estimator with integrated hyperparameters (``hyper_posterior_``: hyperpriors
  given as numpyro distributions, integrated by NUTS on the collapsed model), the closed
  side is the mixture the estimator integrates, not the posterior at the
  hyperparameters' mode (``posterior_``): :func:`closed_form` averages the conjugate
  posteriors given each hyperparameter draw (mixture mean and variance, quantiles from
  exact draws stratified over the hyperparameter draws) and gives the Monte Carlo error
  of that finite average, which the z-scores add to the MCMC's
  (:math:`z = (\bar\theta_{\rm MCMC} - \bar m) / \sqrt{\mathrm{MCSE}^2 +
  \mathrm{MCSE}_{\rm closed}^2}`); the MCMC side is NUTS on the *un-collapsed* model
  (:func:`bayesnb.ppl.models.hyper_model`: the hyperparameters sampled from their
  hyperpriors with :math:`\theta` and :math:`\pi`), and the hyperparameters' draws are
  compared too (collapsed against un-collapsed NUTS);
* the posterior predictive class probabilities :math:`p(y = c \mid x, D)` of a few rows:
  the estimator's exact closed form (``estimate="predictive"``) next to the MCMC
  estimate :math:`\sum_d p(x, y{=}c \mid \theta_d, \pi_d) / \sum_{d,c'} p(x, y{=}c' \mid
  \theta_d, \pi_d)`, computed from numpyro's own log densities of the model, with a
  delta-method MCSE (and, with integrated hyperparameters, the integrated predictive
  with the delta-method MCSE of its average over ``hyper_predict_draws`` draws).

The rule for the report's ``agrees`` (:class:`CrossCheck`), all of them:

1. every |z| < ``z_max``, parameters (mean, sd, quantiles) and predictive probabilities
   alike. By default ``z_max`` is :math:`\Phi^{-1}(1 - \alpha / 2m)` for the ``m``
   z-scores compared and :math:`\alpha` = ``false_alarm`` (0.01): a correct model is
   reported as disagreeing with probability at most :math:`\alpha` however many
   parameters it has (a fixed 4 is exceeded by chance once in 16,000 z-scores);
2. every bulk and tail split :math:`\hat R` below its critical value
   (:func:`rhat_critical`): the value that well-mixed chains exceed with probability
   :math:`\alpha / (2 \cdot \text{parameters})`, from the number of chains and the
   parameter's within-chain ESS (a fixed 1.01 is exceeded by chance by well-mixed
   chains when there are many parameters or few chains: a ``MultinomialNB`` of 100
   parameters with two chains). ``rhat_max`` sets a fixed threshold instead;
3. every bulk ESS ≥ ``min_ess`` (default 100; below it the MCSE itself is unreliable);
4. no divergent NUTS transition.

A parameter whose closed-form mean or standard deviation does not exist (a posterior
too heavy-tailed, e.g. an inverse-gamma shape :math:`\le 2`) gets no z-score; it is
listed and counted in the report's ``n_skipped``, not silently dropped (its quantiles are
still compared); an sd whose MCSE needs a fourth moment the posterior lacks (the Pareto
shape of the squared deviations of the exact draws :math:`\ge 1/2`) is not compared and
counted in ``n_sd_skipped``. Likewise a
predictive probability whose MCMC estimate is unreliable: the estimate is a ratio of
means over the draws of :math:`p(x, y{=}c \mid \theta_d, \pi_d)`, and where these are
heavy-tailed across draws (a class very improbable for the row, say
:math:`p < 10^{-50}`, is carried by a handful of draws) neither the mean nor its MCSE
can be trusted. The Pareto shape :math:`\hat k` of their upper tail (as in PSIS,
Vehtari et al. 2024) decides: the probability is compared only when
:math:`\hat k < 1/2` (finite variance, so the CLT-based MCSE holds) for every class of
the row and for the row's total (the probabilities of a row sum to one, so the error of
an unreliable class is carried by the others: a row is compared whole or not at all);
otherwise it is listed with its :math:`\hat k` and counted in the report's
``n_unreliable``.

NUTS runs in float64 (scoped with :func:`bayesnb.core._x64.enable_x64`; the user's global
flag is untouched): the check resolves differences of the size of the MCSE, and in
float32 the rounding of log densities summed over many rows, and of Cholesky factors
of the inverse-Wishart, can reach that size and bias the chain; in float64 it is far
below it, so a failed check points at the math, not the arithmetic. On a CPU float64
costs about the same as float32 here.

Every NUTS run here (and the collapsed hyperparameter runs of
:func:`bayesnb.ppl.collapsed.run_nuts`) goes through ``bayesnb.ppl._nuts.sample_nuts``, which compiles
the whole run once per model and data shapes and keeps the program in a small cache, the
data being its arguments: another seed or other data of the same shapes compile nothing.

numpyro's inference and arviz are imported inside the functions: ``import bayesnb``
does not load them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from bayesnb.core import _fitted
from bayesnb.core._random import key_from_random_state
from bayesnb.core._x64 import enable_x64
from bayesnb.ppl._nuts import (  # noqa: F401 - the sampler's names, as this module has always offered them
    NUM_CHAINS,
    NUTS_CACHE_SIZE,
    _fingerprint,
    _interactive,
    _program_key,
    clear_nuts_cache,
    sample_nuts,
)

__all__ = [
    "crosscheck", "closed_form", "ClosedForm", "run_nuts", "NUTSRun", "CrossCheck", "mixing", "rhat_critical",
    "within_chain_ess",
]


class NUTSRun(NamedTuple):
    """The result of :func:`run_nuts`.

    Attributes
    ----------
    samples : dict of name -> ndarray of shape (chain, draw, ...)
        The canonical parameters (names of :func:`bayesnb.ppl.models.variable_dims`).
    diverging : bool ndarray of shape (chain, draw)
    model, model_kwargs
        The numpyro model and its arguments.
    latent : dict of name -> ndarray of shape (chain * draw, ...)
        Every latent site, as numpyro returned them (to evaluate the model again).
    inference_data : arviz.InferenceData or xarray.DataTree
        The installed arviz's (converted by :func:`bayesnb.ppl.export.from_canonical`,
        the export's conversion): ``posterior`` (the parameters in the layout of
        :func:`bayesnb.ppl.export.to_inference_data`: a categorical one over the cells
        that exist) and ``sample_stats`` (``diverging``).
    fingerprint : tuple
        Identifies the model and data (see :func:`crosscheck`'s ``nuts``).
    form : {"rows", "stats"}
    log_joint : callable or None
        For a run of another model of the same posterior (a compiled user's model,
        :func:`bayesnb.ppl.compile.run_nuts_model`): ``log_joint(X_rep, y_rep)`` gives
        ``log p(x_r, y_r | draw)`` of shape (draws, rows) from that
        model's densities, and the run's fingerprint is of the data only. None: a run
        of :func:`bayesnb.ppl.models.model_from_estimator`.
    """

    samples: dict
    diverging: np.ndarray
    model: object
    model_kwargs: dict
    latent: dict
    inference_data: object
    fingerprint: tuple
    form: str
    log_joint: object = None


def _model_fingerprint(model, kwargs):
    return (model.__name__,) + _fingerprint({k: v for k, v in sorted(kwargs.items())})


def data_fingerprint(X, y, sample_weight=None):
    """The fingerprint of a run of a user's model (:attr:`NUTSRun.log_joint` set): of the data only."""
    return ("data",) + _fingerprint([np.asarray(X), np.asarray(y), sample_weight])


def nuts_run(estimator, samples, diverging, model, kwargs, latent, fingerprint, form, log_joint=None):
    """A :class:`NUTSRun` of canonical ``samples`` (chain, draw, ...), with its arviz posterior.

    The arviz posterior has the layout of :func:`bayesnb.ppl.export.to_inference_data`
    (a categorical parameter over the cells that exist, no padding), so that it sits
    beside the closed form's in ``az.plot_forest``; ``samples`` stay canonical.
    """
    from bayesnb.ppl import export, models

    fitted = _fitted.as_fitted(estimator)
    all_dims = {**models.variable_dims(fitted), **models.hyper_dims(fitted)}
    dims = {k: v for k, v in all_dims.items() if k in samples}
    idata = export.from_canonical(
        fitted,
        {"posterior": samples, "sample_stats": {"diverging": diverging}},
        dims=dims,
        coords=export.coords_of(fitted),
        attrs={"inference_library": "numpyro", "sampler": "NUTS", "form": form},
    )
    return NUTSRun(samples, diverging, model, kwargs, latent, idata, fingerprint, form, log_joint)


#: The arguments of :func:`bayesnb.ppl.models.model_from_estimator`'s models that hold the
#: data (rows, labels, weights, masks of observed entries, sufficient statistics): passed
#: to the compiled NUTS program as arguments, so that a run on other data of the same
#: shapes reuses it (``bayesnb.ppl._nuts.sample_nuts``); the priors are tried as arguments
#: too (``MODEL_PARAMETERS``).
MODEL_DATA = ("X", "y", "sample_weight", "observed", "stats")
#: The arguments of those models that hold the prior's values (a MixedNB's ``blocks`` hold
#: each block's prior), tried as arguments of the compiled NUTS program too: a data-scaled
#: default prior (GaussianNB's) differs with every data set, and compiled in it would
#: cost every cross-check on new data a compile of its own.
MODEL_PARAMETERS = ("prior", "blocks", "class_prior")


def run_nuts(
    estimator,
    X,
    y,
    *,
    sample_weight=None,
    num_warmup=1000,
    num_samples=1000,
    num_chains=None,
    random_state=None,
    form="rows",
    chain_method="vectorized",
    progress_bar=None,
    target_accept_prob=0.8,
):
    """Run numpyro's NUTS on the generative model of a fitted estimator, conditioned on ``(X, y)``.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel (``estimator.fitted_model()``)
        Supplies the prior hyperparameters and class-proportion settings (not the data).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    sample_weight : array-like of shape (n_samples,), optional
    num_warmup, num_samples, num_chains : int
        NUTS warm-up iterations, draws kept per chain, chains (at least 2; None:
        ``NUM_CHAINS``).
    random_state : int, RandomState, Generator, jax key or None
    form : {"rows", "stats"}
        Observe every row (the default; independent of bayesnb's statistics code), or
        condition on the sufficient statistics (cost independent of the number of rows).
    chain_method : {"vectorized", "sequential", "parallel"}
        numpyro's. "vectorized" (the default) runs the chains in one compiled program:
        on a CPU that compiles the sampler once and finds the initial points without
        op-by-op compilation, which dominates the cost of small models. "parallel"
        needs one device per chain.
    progress_bar : bool or None
        None: shown when stderr is a terminal, never under pytest or with ``CI`` set.
    target_accept_prob : float

    Returns
    -------
    NUTSRun
    """
    from bayesnb.ppl import models

    fitted = _fitted.as_fitted(estimator)  # the estimator is read once, here
    model, kwargs = models.model_from_estimator(fitted, X, y, form=form, sample_weight=sample_weight)
    grouped, latent, diverging = sample_nuts(
        model, (), kwargs, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
        random_state=random_state, chain_method=chain_method, progress_bar=progress_bar,
        target_accept_prob=target_accept_prob, data=MODEL_DATA, parameters=MODEL_PARAMETERS,
    )
    samples = {}
    if "class_probs" in grouped:
        samples["class_probs"] = grouped["class_probs"]
    for name, _, _, spec in models.block_specs(fitted):
        block = {var: grouped[models._prefixed(name, var)] for var in spec.variables}
        for var, value in spec.canonical(block).items():
            samples[models._prefixed(name, var)] = value
    for name in models.hyper_dims(fitted):  # the un-collapsed model's hyperparameters
        samples[name] = grouped[name]
    return nuts_run(fitted, samples, diverging, model, kwargs, latent, _model_fingerprint(model, kwargs), form)


def _diagnostics(draws):
    """Bulk ESS, rank-normalised split R-hat and MCSE of the mean of each column of (chain, draw, k)."""
    import warnings

    import arviz as az

    data = az.convert_to_dataset({"x": np.asarray(draws, dtype=np.float64)})
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        # A constant column (a probability of exactly 1 in every draw) has no variance:
        # arviz divides 0 by 0 for its ESS and R-hat and says so; its MCSE is 0 all the same.
        warnings.simplefilter("ignore", RuntimeWarning)
        ess = np.asarray(az.ess(data, method="bulk")["x"])
        rhat = np.asarray(az.rhat(data)["x"])
        mcse = np.asarray(az.mcse(data, method="mean")["x"])
    return ess, rhat, np.where(np.ptp(draws, axis=(0, 1)) == 0, 0.0, mcse)


def _mcse_sd(draws):
    """arviz's MCSE of the standard deviation of each column of (chain, draw, k)."""
    import warnings

    import arviz as az

    data = az.convert_to_dataset({"x": np.asarray(draws, dtype=np.float64)})
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(az.mcse(data, method="sd")["x"])


def _split_z_scale(draws):
    """Split chains, then rank-normalise (bulk) and fold-then-rank-normalise (tail), as arviz.

    Parameters
    ----------
    draws : ndarray of shape (chain, draw, k)

    Returns
    -------
    bulk, tail : ndarray of shape (2 * chain, draw // 2, k)
        Vehtari et al. (2021): ranks over all split chains mapped through the normal
        quantile function (Blom's offset 3/8), of the draws and of their distance to the
        median.
    """
    from scipy import stats

    draws = np.asarray(draws, dtype=np.float64)
    half = draws.shape[1] // 2
    split = np.concatenate([draws[:, :half], draws[:, draws.shape[1] - half:]], axis=0)

    def z_scale(a):
        flat = a.reshape(-1, a.shape[-1])
        rank = stats.rankdata(flat, method="average", axis=0)
        return stats.norm.ppf((rank - 3 / 8) / (flat.shape[0] + 1 / 4)).reshape(a.shape)

    folded = np.abs(split - np.median(split.reshape(-1, split.shape[-1]), axis=0))
    return z_scale(split), z_scale(folded)


def _rhat_of(chains):
    """Split-R-hat of each column of already split chains (M, n, k): sqrt((n-1)/n + var(chain means)/W)."""
    n = chains.shape[1]
    within = chains.var(axis=1, ddof=1).mean(axis=0)
    between = chains.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((n - 1) / n + between / within)


def within_chain_ess(chains):
    r"""Effective sample size of each column of (M, n, k) chains from their within-chain autocorrelation.

    Geyer's initial monotone sequence estimator, as arviz's, but chain by chain, with
    each chain's autocorrelation normalised by its own variance, and the median of the
    chains' integrated autocorrelation times (arviz's ESS
    normalises by the pooled variance, which grows with the disagreement between chains:
    on chains that have not mixed it collapses, so it cannot set the yardstick by which
    their disagreement is judged).

    Parameters
    ----------
    chains : ndarray of shape (M, n, k)

    Returns
    -------
    ndarray of shape (k,)
        :math:`M n / \tau`, :math:`\tau` the median over chains of
        :math:`-1 + 2 \sum_t P_t` over the pairs :math:`P_t = \rho_{2t} + \rho_{2t+1}`
        while positive, made non-increasing.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> iid = rng.normal(size=(4, 500, 3))  # independent draws: an ESS near 4 x 500
    >>> bool(np.all(np.abs(within_chain_ess(iid) / 2000 - 1) < 0.15))
    True
    """
    from bayesnb.analysis import _arviz

    M, n, k = chains.shape
    acov = _arviz.autocov(np.moveaxis(np.asarray(chains, dtype=np.float64), 2, 0), axis=-1)  # (k, M, n)
    # Autocovariances about each chain's own mean are biased down by about the variance
    # of that mean, sigma^2 tau / n (arviz's pooled variance adds B/n for this, which is
    # why it collapses when chains disagree): add it back, with tau from the previous pass.
    tau = np.zeros((k, M))
    for _ in range(4):
        bias = acov[..., :1] * tau[..., None] / n
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = (acov + bias) / (acov[..., :1] + bias)
        pairs = rho[..., : 2 * (n // 2)].reshape(k, M, -1, 2).sum(axis=-1)
        positive = np.cumprod(pairs > 0, axis=-1).astype(bool)
        monotone = np.minimum.accumulate(np.where(positive, pairs, np.inf), axis=-1)
        tau = -1.0 + 2.0 * np.where(positive, monotone, 0.0).sum(axis=-1)
        # As arviz: tau is at least 1 / log10(M n) (an antithetic chain cannot claim more).
        tau = np.maximum(tau, 1.0 / np.log10(M * n))
    # The median over chains: a chain that drifts (autocorrelated within itself, the very
    # thing R-hat must catch) cannot inflate the yardstick of the others.
    tau = np.median(tau, axis=1)
    return np.where(np.isfinite(rho[:, :, 0]).all(axis=1), M * n / tau, np.nan)


def rhat_critical(ess_within, n_chains, n_draws, n_tests, false_alarm):
    r"""The largest split-:math:`\hat R` that well-mixed chains exceed with probability ``false_alarm / n_tests``.

    For ``M = 2 n_chains`` stationary split chains of ``n = n_draws // 2`` draws each
    (Vehtari et al. 2021), :math:`\hat R^2 = (n-1)/n + \mathrm{var}(\bar x_m)/W`, and
    the chain means are independent with variance :math:`W M / \mathrm{ESS}_W`
    (:func:`within_chain_ess`), so :math:`(M-1)\,\mathrm{var}(\bar x_m)\,\mathrm{ESS}_W
    / (M W) \sim \chi^2_{M-1}`. The critical value is therefore

    .. math:: \hat R_{\rm crit} = \sqrt{\frac{n-1}{n} + \frac{M}{(M-1)\,(\mathrm{ESS}_W - M)}
              \chi^2_{M-1}\big(1 - \alpha / m\big)}

    (:math:`\mathrm{ESS}_W - M`: the within-chain variance :math:`W` about each chain's
    own mean falls short of the variance by the factor :math:`1 - M/\mathrm{ESS}_W`)

    for ``m = n_tests`` comparisons (Bonferroni: the chance that any of them is exceeded
    by well-mixed chains is at most :math:`\alpha`). A fixed threshold such as 1.01
    ignores both: with two chains and a hundred parameters, well-mixed chains exceed it
    by chance.

    Parameters
    ----------
    ess_within : ndarray of shape (k,)
    n_chains, n_draws : int
        Chains and draws per chain before splitting.
    n_tests : int
    false_alarm : float

    Returns
    -------
    ndarray of shape (k,)

    Examples
    --------
    >>> import numpy as np
    >>> crit = rhat_critical(np.array([400.0, 4000.0]), n_chains=4, n_draws=1000, n_tests=200, false_alarm=0.01)
    >>> [round(float(c), 4) for c in crit]  # more effective draws: a tighter critical value
    [1.044, 1.0035]
    """
    from scipy import stats

    M, n = 2 * int(n_chains), int(n_draws) // 2
    quantile = stats.chi2.isf(false_alarm / max(int(n_tests), 1), M - 1)
    ess = np.asarray(ess_within, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        # W, the variance within chains about their own means, is itself short of the
        # variance by the factor 1 - M / ESS: hence ESS - M.
        return np.sqrt((n - 1) / n + M * quantile / ((M - 1) * np.maximum(ess - M, 1.0)))


def mixing(draws, n_tests, false_alarm):
    """Rank-normalised split R-hat (bulk and tail) of each column of (chain, draw, k) and their critical values.

    Bulk and tail (folded) R-hat are tested separately, each against
    :func:`rhat_critical` with its own within-chain ESS; ``n_tests`` counts every such
    test of the cross-check (two per parameter).

    Returns
    -------
    dict of name -> ndarray of shape (k,)
        ``r_hat`` (max of bulk and tail: arviz's rank-normalised split R-hat),
        ``r_hat_bulk``, ``r_hat_tail``, ``r_hat_bulk_crit``, ``r_hat_tail_crit``,
        ``ess_within_bulk``, ``ess_within_tail``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> draws = rng.normal(size=(4, 1000, 2))
    >>> draws[1, :, 1] += 1.0  # the second parameter: one chain elsewhere
    >>> m = mixing(draws, n_tests=4, false_alarm=0.01)
    >>> (m["r_hat_bulk"] >= m["r_hat_bulk_crit"]).tolist()
    [False, True]
    """
    n_chains, n_draws = np.shape(draws)[:2]
    out = {}
    for part, chains in zip(("bulk", "tail"), _split_z_scale(draws)):
        ess = within_chain_ess(chains)
        out[f"r_hat_{part}"] = _rhat_of(chains)
        out[f"r_hat_{part}_crit"] = rhat_critical(ess, n_chains, n_draws, n_tests, false_alarm)
        out[f"ess_within_{part}"] = ess
    out["r_hat"] = np.fmax(out["r_hat_bulk"], out["r_hat_tail"])
    return out


#: Quantiles of every parameter's marginal posterior compared by :func:`crosscheck`.
QUANTILES = (0.05, 0.5, 0.95)
_Q_COLUMNS = tuple(f"z_q{round(100 * q):02d}" for q in QUANTILES)
_Z_COLUMNS = ("z", "z_sd") + _Q_COLUMNS


class CrossCheck:
    """Closed form versus NUTS: the report returned by :func:`crosscheck`.

    Attributes
    ----------
    agrees : bool
        The documented rule (see :mod:`bayesnb.ppl.mcmc`).
    failures : list of str
        Why it does not agree (empty when it does).
    parameters : pandas.DataFrame
        One row per scalar parameter: ``parameter``, ``closed_mean``, ``closed_sd``
        (the closed form's), ``mcmc_mean``, ``mcmc_sd``, ``mcse`` and ``mcse_sd`` (their
        Monte Carlo standard errors), ``closed_mcse`` and ``closed_mcse_sd`` (those of
        the closed form's mean and sd: 0 for a conjugate posterior, the error of the
        finite mixture over the hyperparameters' draws otherwise, see
        :func:`closed_form`), the z-scores ``z`` (mean), ``z_sd`` (standard
        deviation) and ``z_q05``, ``z_q50``, ``z_q95`` (quantiles), ``ess_bulk``,
        ``r_hat`` (arviz's rank-normalised split R-hat: the larger of
        ``r_hat_bulk`` and ``r_hat_tail``) and the critical values ``r_hat_bulk_crit``,
        ``r_hat_tail_crit``.
    predictive : pandas.DataFrame
        One row per (row, class): ``row``, ``class``, ``closed``, ``mcmc``, ``mcse``,
        ``closed_mcse`` (the closed predictive's own MCSE: 0, or that of the average over
        the hyperparameter draws), ``z``, ``pareto_k`` (``z`` is NaN where ``pareto_k``
        >= 1/2: not compared).
    n_skipped : int
        Parameters without a finite closed-form mean/sd (no mean and sd z-scores; their
        quantiles are compared).
    n_sd_skipped : int
        Parameters whose sd is not compared (a fourth moment too heavy-tailed for its MCSE).
    n_unreliable : int
        Predictive probabilities whose MCMC estimate is unreliable (no z-score).
    n_tests : int
        z-scores compared (the multiplicity behind the default ``z_max``).
    n_divergent : int
    max_abs_z, max_rhat, min_ess : float
    nuts : NUTSRun
    mcmc_inference_data, closed_form_inference_data : arviz.InferenceData or xarray.DataTree
        The MCMC draws, and as many exact iid closed-form draws, with the same
        variables, dims and coords, as the installed arviz's objects (e.g. for
        ``az.plot_forest({"closed form": closed, "NUTS": mcmc})`` on arviz 1.x,
        ``az.plot_forest([closed, mcmc], model_names=[...])`` on 0.x).
    z_max : float
        The critical |z| of the rule (given, or from ``false_alarm`` and ``n_tests``).
    rhat_max : float or None
        A fixed R-hat threshold when given; None: the per-parameter critical values.
    min_ess_required, false_alarm : float
        The thresholds of the rule.
    """

    def __init__(self, parameters, predictive, nuts, closed_idata, *, z_max, rhat_max, min_ess, n_skipped,
                 n_sd_skipped=0, false_alarm=0.01):
        from scipy import stats

        self.parameters = parameters
        self.predictive = predictive
        self.nuts = nuts
        self.mcmc_inference_data = nuts.inference_data
        self._closed_idata = closed_idata
        self.false_alarm = float(false_alarm)
        self.rhat_max = None if rhat_max is None else float(rhat_max)
        self.min_ess_required = float(min_ess)
        self.n_skipped = int(n_skipped)
        self.n_sd_skipped = int(n_sd_skipped)
        self.n_unreliable = int(np.sum(~np.isfinite(predictive["z"].to_numpy())))
        self.n_divergent = int(np.sum(nuts.diverging))
        z_params = parameters[list(_Z_COLUMNS)].to_numpy(dtype=np.float64)
        z_pred = predictive["z"].to_numpy(dtype=np.float64)
        z = np.concatenate([z_params.ravel(), z_pred])
        z = z[~np.isnan(z)]
        self.n_tests = int(z.size)
        # Bonferroni: with m z-scores of a correct model (each about N(0, 1)), the chance
        # that any reaches z_max is at most false_alarm.
        self.z_max = float(z_max) if z_max is not None else float(stats.norm.isf(self.false_alarm / (2 * max(self.n_tests, 1))))
        self.max_abs_z = float(np.max(np.abs(z), initial=0.0))
        self.max_rhat = float(np.nanmax(parameters["r_hat"].to_numpy(), initial=1.0))
        self.min_ess = float(np.nanmin(parameters["ess_bulk"].to_numpy(), initial=np.inf))
        failures = []
        for column, what in zip(_Z_COLUMNS, ("mean", "sd") + tuple(f"{q:g} quantile" for q in QUANTILES)):
            bad = parameters[np.abs(parameters[column]) >= self.z_max]
            if len(bad):
                failures.append(f"{len(bad)} parameter {what}(s) with |z| >= {self.z_max:.3g}, worst {_worst(bad, column)}")
        bad_pred = np.flatnonzero(np.abs(z_pred) >= self.z_max)
        if bad_pred.size:
            worst = predictive.iloc[bad_pred[np.argmax(np.abs(z_pred[bad_pred]))]]
            failures.append(
                f"{bad_pred.size} predictive probabilit(ies) with |z| >= {self.z_max:.3g}, worst row {int(worst['row'])} "
                f"class {worst['class']}: closed {worst['closed']:.4g} vs MCMC {worst['mcmc']:.4g} (z={worst['z']:.2f})"
            )
        ratio = np.fmax(
            parameters["r_hat_bulk"].to_numpy(dtype=np.float64) / parameters["r_hat_bulk_crit"].to_numpy(dtype=np.float64),
            parameters["r_hat_tail"].to_numpy(dtype=np.float64) / parameters["r_hat_tail_crit"].to_numpy(dtype=np.float64),
        )
        not_mixed = np.flatnonzero(ratio >= 1)
        if not_mixed.size:
            row = parameters.iloc[not_mixed[np.argmax(ratio[not_mixed])]]
            failures.append(
                f"{not_mixed.size} parameter(s) with r_hat above its critical value, worst {row['parameter']}: "
                f"bulk {row['r_hat_bulk']:.4f} (critical {row['r_hat_bulk_crit']:.4f}), tail {row['r_hat_tail']:.4f} "
                f"(critical {row['r_hat_tail_crit']:.4f}): the chains have not mixed"
            )
        if self.min_ess < min_ess:
            failures.append(f"bulk ESS down to {self.min_ess:.0f} (< {min_ess:g}): run longer")
        if self.n_divergent:
            failures.append(f"{self.n_divergent} divergent transition(s)")
        self.failures = failures
        self.agrees = not failures

    @property
    def closed_form_inference_data(self):
        """Exact iid closed-form draws, as many as the MCMC kept (made on first access)."""
        if callable(self._closed_idata):
            self._closed_idata = self._closed_idata()
        return self._closed_idata

    def __bool__(self):
        return self.agrees

    def _header(self):
        verdict = "AGREES" if self.agrees else "DISAGREES"
        n_chain, n_draw = self.nuts.diverging.shape
        if self.rhat_max is None:
            crit = self.parameters[["r_hat_bulk_crit", "r_hat_tail_crit"]].to_numpy(dtype=np.float64)
            crit = crit[np.isfinite(crit)]
            rhat_rule = (
                f"critical {crit.min():.4f} to {crit.max():.4f} by within-chain ESS, false alarm {self.false_alarm:g}"
                if crit.size
                else "no critical value"
            )
        else:
            rhat_rule = f"< {self.rhat_max:g}"
        lines = [
            f"bayesnb cross-check, closed form vs NUTS ({n_chain} chain(s) x {n_draw} draws): {verdict}",
            f"  parameters: {len(self.parameters)} compared (mean, sd, quantiles "
            + ", ".join(f"{q:g}" for q in QUANTILES)
            + ")"
            + (f", {self.n_skipped} without a finite closed-form mean/sd" if self.n_skipped else "")
            + (f", {self.n_sd_skipped} sd(s) too heavy-tailed to compare" if self.n_sd_skipped else "")
            + f"; predictive probabilities: {len(self.predictive) - self.n_unreliable} compared"
            + (
                f", {self.n_unreliable} not (Pareto k >= {PARETO_K_MAX:g}: carried by too few draws)"
                if self.n_unreliable
                else ""
            ),
            f"  max |z| {self.max_abs_z:.2f} (rule < {self.z_max:.3g} over {self.n_tests} z-scores), "
            f"max r_hat {self.max_rhat:.4f} ({rhat_rule}), min ESS {self.min_ess:.0f} "
            f"(>= {self.min_ess_required:g}), divergences {self.n_divergent}",
        ]
        lines += [f"  - {f}" for f in self.failures]
        return lines

    def to_string(self, max_rows=None):
        """The report with the full tables (``max_rows`` limits each table)."""
        import pandas as pd

        means = ["parameter", "closed_mean", "closed_sd", "mcmc_mean", "mcse", "z", "ess_bulk", "r_hat"]
        spread = ["parameter", "closed_sd", "mcmc_sd", "mcse_sd", "z_sd", *_Q_COLUMNS, "r_hat_bulk_crit",
                  "r_hat_tail_crit"]
        with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.4g}".format):
            params = self.parameters if max_rows is None else _largest_z(self.parameters, max_rows)
            pred = self.predictive if max_rows is None else _largest_z(self.predictive, max_rows)
            order = " (largest |z| first)" if max_rows is not None else ""
            return "\n".join(
                self._header()
                + ["", f"parameters{order}:", params[means].to_string(index=False)]
                + ["", f"spread (sd and quantiles) and the r_hat critical values{order}:",
                   params[spread].to_string(index=False)]
                + ["", "predictive class probabilities:", pred.to_string(index=False)]
            )

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        return self.to_string(max_rows=8)


def _largest_z(table, n):
    columns = [c for c in _Z_COLUMNS if c in table.columns]
    size = np.nan_to_num(np.abs(table[columns].to_numpy(dtype=np.float64)), nan=-1.0).max(axis=1)
    order = np.argsort(-size, kind="stable")
    return table.iloc[order[:n]]


def _worst(bad, column="z"):
    row = bad.iloc[int(np.argmax(np.abs(bad[column].to_numpy())))]
    if column == "z":
        return (
            f"{row['parameter']}: closed mean {row['closed_mean']:.4g} vs MCMC {row['mcmc_mean']:.4g} "
            f"(MCSE {row['mcse']:.2g}, z={row['z']:.2f})"
        )
    if column == "z_sd":
        return (
            f"{row['parameter']}: closed sd {row['closed_sd']:.4g} vs MCMC {row['mcmc_sd']:.4g} "
            f"(MCSE {row['mcse_sd']:.2g}, z={row['z_sd']:.2f})"
        )
    q = QUANTILES[_Q_COLUMNS.index(column)]
    return (
        f"{row['parameter']}: MCMC mass below the closed form's {q:g} quantile differs from {q:g} "
        f"(z={row[column]:.2f})"
    )


def _predictive(fitted, nuts, X_rows):
    """Closed-form and MCMC posterior predictive class probabilities of ``X_rows`` (``fitted``: a FittedModel)."""
    from numpyro.infer.util import log_likelihood

    from bayesnb.ppl import models

    from bayesnb.analysis.calibration import fitted_proba

    closed = np.asarray(fitted_proba(fitted, X_rows, "predictive"))
    n_rows, n_classes = closed.shape
    # Every row paired with every class, as data of the model: log p(x_r, y=c | draw).
    X_rep = _repeat_rows(X_rows, n_classes)
    y_rep = np.tile(fitted.classes, n_rows)
    if nuts.log_joint is not None:  # a run of the user's own model (bayesnb.ppl.compile)
        total = nuts.log_joint(X_rep, y_rep)
    else:
        model, kwargs = models.model_from_estimator(fitted, X_rep, y_rep, form="rows")
        with enable_x64():
            sites = jax.jit(lambda s: log_likelihood(model, s, **kwargs))(nuts.latent)
            total = 0.0
            for value in sites.values():
                value = np.asarray(value)
                total = total + value.reshape(value.shape[:2] + (-1,)).sum(axis=-1)
    joint = np.asarray(total).reshape(-1, n_rows, n_classes)  # (draws, rows, classes)
    shift = joint.max(axis=(0, 2), keepdims=True)
    a = np.exp(joint - shift)
    b = a.sum(axis=2, keepdims=True)
    mcmc = a.mean(axis=0) / b.mean(axis=0)
    # Delta method for the ratio of means: the MCSE of mean((a - p b) / mean(b)).
    influence = (a - mcmc[None] * b) / b.mean(axis=0)[None]
    n_chain, n_draw = nuts.diverging.shape
    _, _, mcse = _diagnostics(influence.reshape(n_chain, n_draw, -1))
    mcse = mcse.reshape(n_rows, n_classes)
    # The MCMC estimate is a ratio of means of p(x, y=c | theta_d, pi_d) over the draws.
    # Where that quantity is heavy-tailed across draws (a probability carried by a few
    # draws, typically a class that is very improbable for the row: 1e-100 and below),
    # the mean and its MCSE are unreliable and a z-score says nothing. The Pareto shape
    # k of its upper tail (PSIS, Vehtari et al. 2024) tells: the mean has a finite
    # variance, and the CLT-based MCSE holds, only for k < 1/2.
    k = np.maximum(_pareto_k(joint), _pareto_k(_logsumexp(joint, axis=2))[:, None])
    # The probabilities of a row sum to one draw by draw, so the error of an unreliable
    # class is carried, with the opposite sign, by the others (for two classes: exactly
    # by its complement, ~1 with a vanishing MCSE): a row is compared whole or not at all.
    reliable = np.all(k < PARETO_K_MAX, axis=1, keepdims=True) & np.ones_like(k, dtype=bool)
    closed_mcse = _closed_predictive_mcse(fitted, X_rows, closed)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(mcse**2 + closed_mcse**2)
        z = np.where(se > 0, (mcmc - closed) / se, np.where(mcmc == closed, 0.0, np.inf))
    z = np.where(reliable & np.isfinite(closed_mcse), z, np.nan)
    return closed, mcmc, mcse, z, k, closed_mcse


def _closed_predictive_mcse(fitted, X_rows, closed):
    r"""MCSE of the closed-form predictive probabilities, shape (n_rows, n_classes).

    0 for a conjugate closed form. With integrated hyperparameters the predictive is
    :math:`\sum_m p(x, y{=}c \mid D, a_m) / \sum_{m,c'} p(x, y{=}c' \mid D, a_m)` over a
    finite number of draws :math:`a_m` (``hyper_predict_index_``): a ratio of means,
    whose MCSE is that of the delta method, as for the MCMC side (the draws, evenly
    spaced over the hyperparameters' chains, split in two halves as two chains).
    """
    if _fitted.hyper_posterior(fitted) is None:
        return np.zeros_like(closed)
    joint = np.asarray(fitted.hyper_joint_draws(X_rows), dtype=np.float64)  # (draws, rows, classes)
    a = np.exp(joint - joint.max(axis=(0, 2), keepdims=True))
    b = a.sum(axis=2, keepdims=True)
    p = a.mean(axis=0) / b.mean(axis=0)
    influence = (a - p[None] * b) / b.mean(axis=0)[None]
    n = influence.shape[0]
    if n < 8:  # too few draws (hyper_predict_draws) for an MCSE: not compared (NaN)
        return np.full(closed.shape, np.nan)
    half = n // 2
    _, _, mcse = _diagnostics(influence[: 2 * half].reshape((2, half, -1)))
    return mcse.reshape(closed.shape)


#: Largest Pareto tail shape of the per-draw joint probabilities at which a predictive
#: probability is compared (see :func:`crosscheck`).
PARETO_K_MAX = 0.5


def _logsumexp(a, axis):
    top = a.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.exp(a - top).sum(axis=axis))


def _pareto_k(log_values):
    """Pareto shape k of the upper tail of exp(log_values) over the draws (axis 0), per column."""
    from bayesnb.analysis import _arviz

    flat = np.moveaxis(np.asarray(log_values, dtype=np.float64), 0, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = _arviz.pareto_k(flat.reshape(-1, flat.shape[-1]))
    return k.reshape(flat.shape[:-1])


def _repeat_rows(X, k):
    if hasattr(X, "iloc"):
        import pandas as pd

        return pd.concat([X.iloc[[i]] for i in range(X.shape[0]) for _ in range(k)], ignore_index=True)
    import scipy.sparse as sp

    if sp.issparse(X):
        return sp.csr_matrix(X)[np.repeat(np.arange(X.shape[0]), k)]
    return np.repeat(np.asarray(X), k, axis=0)


# NUM_CHAINS (4 chains by default) comes from bayesnb.ppl._nuts, imported above.

#: Default family-wise probability that a correct model is reported as disagreeing by chance
#: (each of the z-score and the R-hat families of tests).
FALSE_ALARM = 0.01
#: Exact closed-form draws whose quantiles are compared with the MCMC's.
N_EXACT = 16_000


def crosscheck(
    estimator,
    X,
    y,
    *,
    sample_weight=None,
    num_warmup=1000,
    num_samples=1000,
    num_chains=NUM_CHAINS,
    random_state=None,
    form="rows",
    X_new=None,
    n_rows=5,
    z_max=None,
    rhat_max=None,
    min_ess=100,
    false_alarm=FALSE_ALARM,
    chain_method="vectorized",
    progress_bar=None,
    nuts=None,
):
    """Compare a fitted estimator's closed-form posterior with NUTS on its numpyro model.

    The closed-form side (:func:`closed_form`) is the estimator's ``posterior_`` (and
    class posterior), read when this function is called: its moments, the quantiles of
    ``N_EXACT`` exact iid draws from it, and the estimator's own predictive
    probabilities. For an estimator with integrated hyperparameters
    (``hyper_posterior_``) it is the mixture over the hyperparameters' draws of the
    conjugate posteriors given each (moments with their Monte Carlo error, draws
    stratified over the hyperparameter draws, the integrated predictive), and the
    hyperparameters' draws themselves. The MCMC side is NUTS on
    :func:`bayesnb.ppl.models.model_from_estimator` with the estimator's prior (with
    integrated hyperparameters: the un-collapsed model, the hyperparameters sampled
    from their hyperpriors), conditioned on ``(X, y)``. For the two to describe the
    same posterior, ``X, y`` (and ``sample_weight``) must be the data the estimator was
    fitted on. See :mod:`bayesnb.ppl.mcmc` for the comparison and the ``agrees`` rule.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel (``estimator.fitted_model()``)
        Read once, when this function is called: a later refit does not change the report.
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    sample_weight : array-like of shape (n_samples,), optional
    num_warmup, num_samples, num_chains : int
    random_state : int, RandomState, Generator, jax key or None
    form : {"rows", "stats"}
        See :func:`run_nuts`.
    X_new : array-like, optional
        Rows whose predictive class probabilities are compared (default: ``X``).
    n_rows : int
        How many of them (the first ``n_rows``).
    z_max : float or None
        Critical |z|. None (default): :math:`\\Phi^{-1}(1 - \\alpha / 2m)` for the
        ``m`` z-scores compared and :math:`\\alpha` = ``false_alarm`` (Bonferroni).
    rhat_max : float or None
        A fixed R-hat threshold. None (default): each parameter's bulk and tail R-hat
        against :func:`rhat_critical` (its within-chain ESS, two tests per parameter,
        ``false_alarm``).
    min_ess : float
        Smallest bulk ESS (below it the MCSE itself is unreliable).
    false_alarm : float in (0, 1)
        Family-wise probability that a correct, well-mixed run is reported as
        disagreeing by chance (for the z-scores, and for the R-hats).
    chain_method : str
    progress_bar : bool or None
        None: shown when interactive (see :func:`run_nuts`).
    nuts : NUTSRun, optional
        A previous :func:`run_nuts` (or ``CrossCheck.nuts``) of the same model on the
        same data, to check another closed form without sampling again; it must match
        the model built here (else ``ValueError``).

    Returns
    -------
    CrossCheck
    """
    import pandas as pd

    from bayesnb.ppl import export, models

    # The estimator is read once, here: a snapshot, so that a later refit does not change
    # this report, and everything below works on it.
    fitted = _fitted.as_fitted(estimator)
    if not 0.0 < float(false_alarm) < 1.0:
        raise ValueError(f"false_alarm must be in (0, 1), got {false_alarm!r}")
    if nuts is None:
        nuts = run_nuts(
            fitted,
            X,
            y,
            sample_weight=sample_weight,
            num_warmup=num_warmup,
            num_samples=num_samples,
            num_chains=num_chains,
            random_state=random_state,
            form=form,
            chain_method=chain_method,
            progress_bar=progress_bar,
        )
    elif nuts.log_joint is not None:
        if data_fingerprint(X, y, sample_weight) != nuts.fingerprint:
            raise ValueError("nuts= was run on different data than this cross-check")
    else:
        model, kwargs = models.model_from_estimator(fitted, X, y, form=nuts.form, sample_weight=sample_weight)
        if _model_fingerprint(model, kwargs) != nuts.fingerprint:
            raise ValueError("nuts= was run on a different model or different data than this cross-check")
    # The closed form as the estimator holds it now: moments of its posterior_ (and class
    # posterior), or of the mixture over the hyperparameters' draws where they are
    # integrated, and exact draws of it for the quantiles.
    seed = _derived_seed(random_state)
    closed = closed_form(fitted, N_EXACT, jax.random.fold_in(seed, 1))
    dims = {**models.variable_dims(fitted), **models.hyper_dims(fitted)}
    coords = export.coords_of(fitted)
    blocks = []
    for name, draws in nuts.samples.items():
        if name not in closed.moments:
            # A hyperparameter of the run that this estimator does not integrate (a run of
            # the un-collapsed model, nuts=, checked against a plain estimator).
            continue
        mean, sd, mcse, mcse_sd = (np.asarray(m, dtype=np.float64) for m in closed.moments[name])
        keep = export.scalar_mask(dims[name], mean)
        labels = np.array(export.scalar_labels(name, dims[name], coords, mean.shape), dtype=object).reshape(mean.shape)
        # A parameter constant under the closed form (sd 0) is not a free scalar.
        keep &= ~(np.isfinite(sd) & (sd == 0))
        if np.any(keep):
            exact = np.asarray(closed.draws[name])
            blocks.append((labels[keep], mean[keep], sd[keep], draws[..., keep], exact[:, keep],
                           mcse[keep], mcse_sd[keep], closed.strata.get(name)))
    n_params = sum(b[0].size for b in blocks)
    tables, n_skipped, n_sd_skipped = [], 0, 0
    for labels, m, s, flat, iid, c_mcse, c_mcse_sd, strata in blocks:
        table, skipped, sd_skipped = _compare_parameter_block(
            labels, m, s, flat, iid, 2 * n_params, false_alarm, closed_mcse=c_mcse, closed_mcse_sd=c_mcse_sd,
            strata=strata,
        )
        tables.append(table)
        n_skipped += skipped
        n_sd_skipped += sd_skipped
    parameters = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=_PARAMETER_COLUMNS)
    if rhat_max is not None:
        parameters["r_hat_bulk_crit"] = parameters["r_hat_tail_crit"] = float(rhat_max)
    X_rows = X if X_new is None else X_new
    X_rows = X_rows.iloc[:n_rows] if hasattr(X_rows, "iloc") else X_rows[:n_rows]
    p_closed, mcmc, mcse, z, pareto_k, closed_mcse = _predictive(fitted, nuts, X_rows)
    pred_rows = [
        {"row": r, "class": c, "closed": p_closed[r, j], "mcmc": mcmc[r, j], "mcse": mcse[r, j],
         "closed_mcse": closed_mcse[r, j], "z": z[r, j], "pareto_k": pareto_k[r, j]}
        for r in range(p_closed.shape[0])
        for j, c in enumerate(export._labels(fitted.classes))
    ]
    predictive = pd.DataFrame(
        pred_rows, columns=["row", "class", "closed", "mcmc", "mcse", "closed_mcse", "z", "pareto_k"]
    )
    n_chain, n_draw = nuts.diverging.shape
    seed = _derived_seed(random_state)

    def closed_idata():
        if closed.hyper is None:
            return export.to_inference_data(fitted, n_draw, random_state=seed, n_chains=n_chain)
        # The mixture: as many of its exact draws as the MCMC kept, taken at random.
        total = n_chain * n_draw
        n = closed.hyper["log_class"].shape[0]
        pick = np.asarray(jax.random.choice(seed, n, (total,), replace=total > n))
        draws = jax.tree.map(lambda a: np.asarray(a)[pick], (closed.hyper["log_class"], closed.hyper["params"]))
        idata = export.to_inference_data(fitted, n_draw, random_state=seed, n_chains=n_chain, draws=draws)
        hyper = {k: np.asarray(v)[closed.hyper["stratum"][pick]] for k, v in fitted.hyper_posterior.items()}
        return export.add_hyperparameters(
            idata, hyper, n_chain, fitted.n_features_in, feature_names=export.coords_of(fitted).get("feature"),
        )

    return CrossCheck(
        parameters, predictive, nuts, closed_idata, z_max=z_max, rhat_max=rhat_max, min_ess=min_ess,
        n_skipped=n_skipped, n_sd_skipped=n_sd_skipped, false_alarm=false_alarm,
    )


class ClosedForm(NamedTuple):
    """The closed-form side of :func:`crosscheck` (:func:`closed_form`).

    Attributes
    ----------
    moments : dict of name -> (mean, sd, mcse, mcse_sd)
        Arrays of the parameter's shape: the closed-form posterior mean and standard
        deviation and their own Monte Carlo standard errors (0 where exact).
    draws : dict of name -> ndarray of shape (n, ...)
        Exact draws of every parameter.
    strata : dict of name -> (n_chains, n_draws, n_per_draw)
        For mixture draws: ``draws[name]`` is ``n_per_draw`` draws conditional on each of
        the ``n_chains * n_draws`` hyperparameter draws, in order. Empty for iid draws.
    hyper : dict or None
        With integrated hyperparameters: ``log_class`` (n, n_classes) and ``params``
        (the family's pytree) of the mixture draws, and ``stratum`` (n,), the index of
        the hyperparameter draw each is conditional on. None otherwise.
    """

    moments: dict
    draws: dict
    strata: dict
    hyper: dict | None


def closed_form(estimator, n_exact, random_state):
    r"""The closed-form posterior that :func:`crosscheck` compares with NUTS.

    Without integrated hyperparameters: the estimator's ``posterior_`` (and class
    posterior), its exact moments and ``n_exact`` exact iid draws.

    With integrated hyperparameters (``hyper_posterior_``: the draws :math:`a_1 \ldots
    a_S` of NUTS on the collapsed model), the posterior the estimator integrates, the
    mixture :math:`\frac1S \sum_s p(\theta, \pi \mid D, a_s)` of the conjugate
    posteriors given each draw (``fitted.hyper_conditional(s)``):

    * mean :math:`\bar m = \frac1S \sum_s m_s` of the conditional means :math:`m_s`,
      variance :math:`\frac1S \sum_s (v_s + (m_s - \bar m)^2)` (the average conditional
      variance plus the variance of the conditional means);
    * their Monte Carlo standard errors from the finite number of hyperparameter draws:
      of the mean, the MCSE of the series :math:`m_s`; of the sd, that of the series
      :math:`v_s + (m_s - \bar m)^2` divided by twice the sd (delta method); arviz's,
      with the ESS of the hyperparameters' chains (their draws are autocorrelated);
    * exact draws stratified over the hyperparameters' draws,
      :math:`\lceil n_{\rm exact} / S \rceil` from each conditional posterior
      (:func:`bayesnb.core._fitted.hyper_conditional_draws`);
    * the hyperparameters themselves (names of ``hyper_posterior_``): the moments and
      draws of ``hyper_posterior_``, with their MCSEs.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel
    n_exact : int
    random_state : int, RandomState, Generator, jax key or None

    Returns
    -------
    ClosedForm
    """
    from bayesnb.ppl import export, models

    fitted = _fitted.as_fitted(estimator)
    hyper = _fitted.hyper_posterior(fitted)
    if hyper is None:
        moments = {
            name: (mean, sd, np.zeros(np.shape(mean)), np.zeros(np.shape(mean)))
            for name, (mean, sd) in models.posterior_moments(fitted).items()
        }
        log_class, params = _fitted.draws(fitted, n_exact, random_state)
        return ClosedForm(moments, export.parameter_draws(fitted, log_class, params), {}, None)
    n_hyper = next(iter(hyper.values())).shape[0]
    n_chains = fitted.hyper_chains
    per_chain = n_hyper // n_chains
    conditional = [models.posterior_moments(fitted.hyper_conditional(s)) for s in range(n_hyper)]
    moments = {}
    for name in conditional[0]:
        means = np.stack([np.asarray(c[name][0], dtype=np.float64) for c in conditional])
        sds = np.stack([np.asarray(c[name][1], dtype=np.float64) for c in conditional])
        moments[name] = _mixture_moments(means, sds, n_chains, per_chain)
    for name, value in hyper.items():
        value = np.asarray(value, dtype=np.float64)
        moments[name] = _mixture_moments(value, np.zeros_like(value), n_chains, per_chain)
    n_per_draw = -(-int(n_exact) // n_hyper)
    log_class, params = _fitted.hyper_conditional_draws(fitted, n_per_draw, key_from_random_state(random_state))
    draws = export.parameter_draws(fitted, log_class, params)
    strata = {name: (n_chains, per_chain, n_per_draw) for name in draws}
    for name, value in hyper.items():
        draws[name] = np.asarray(value, dtype=np.float64)
        strata[name] = (n_chains, per_chain, 1)
    stratum = np.repeat(np.arange(n_hyper), n_per_draw)
    return ClosedForm(moments, draws, strata, {"log_class": log_class, "params": params, "stratum": stratum})


def _mixture_moments(means, sds, n_chains, per_chain):
    """Mean, sd and their MCSEs of the mixture of conditionals with ``means``, ``sds`` of shape (S, ...)."""
    shape = means.shape[1:]
    with np.errstate(invalid="ignore", over="ignore"):
        mean = means.mean(axis=0)
        terms = sds**2 + (means - mean) ** 2
        sd = np.sqrt(terms.mean(axis=0))
    finite = np.all(np.isfinite(means), axis=0) & np.all(np.isfinite(sds), axis=0)

    def mcse_of(series):
        safe = np.where(finite, series, 0.0).reshape(n_chains, per_chain, -1)
        _, _, mcse = _diagnostics(safe)
        return np.where(finite, mcse.reshape(shape), np.nan)

    mcse = mcse_of(means)
    with np.errstate(divide="ignore", invalid="ignore"):
        mcse_sd = np.where(sd > 0, mcse_of(terms) / (2 * sd), 0.0)
    return mean, sd, mcse, mcse_sd


_PARAMETER_COLUMNS = [
    "parameter", "closed_mean", "closed_sd", "mcmc_mean", "mcmc_sd", "mcse", "mcse_sd", "closed_mcse",
    "closed_mcse_sd", *_Z_COLUMNS, "ess_bulk",
    "r_hat", "r_hat_bulk", "r_hat_tail", "r_hat_bulk_crit", "r_hat_tail_crit",
]


def _compare_parameter_block(labels, mean, sd, flat, iid, n_rhat_tests, false_alarm, *, closed_mcse=None,
                             closed_mcse_sd=None, strata=None):
    r"""Mean, sd and quantiles of MCMC draws against the closed form, with their MCSEs.

    Parameters
    ----------
    labels : ndarray of str, shape (k,)
    mean, sd : ndarray of shape (k,)
        Closed-form posterior moments (``inf`` where they do not exist).
    flat : ndarray of shape (chain, draw, k)
        MCMC draws.
    iid : ndarray of shape (n_exact, k)
        Exact closed-form draws (with ``strata``: stratified over the hyperparameters' draws).
    n_rhat_tests, false_alarm
        See :func:`mixing`.
    closed_mcse, closed_mcse_sd : ndarray of shape (k,), optional
        Monte Carlo standard errors of ``mean`` and ``sd`` themselves (a mixture over a
        finite number of hyperparameter draws); the z-scores divide by
        :math:`\sqrt{\mathrm{MCSE}_{\rm MCMC}^2 + \mathrm{MCSE}_{\rm closed}^2}`. None: exact (0).
    strata : tuple (n_chains, n_draws, n_per_draw), optional
        ``iid`` is ``n_per_draw`` draws conditional on each of the ``n_chains * n_draws``
        hyperparameter draws, in order: the error of the closed form's quantile (in mass)
        is then the MCSE of the per-draw fractions below it, whose autocorrelation across
        the hyperparameters' chains arviz's ESS accounts for, in place of the iid
        :math:`q(1-q)/N`.

    Returns
    -------
    table : pandas.DataFrame
    n_skipped : int
        Parameters without a finite mean and sd.
    n_sd_skipped : int
        Parameters whose sd is not compared: the MCSE of an sd needs a finite fourth
        moment; the Pareto shape :math:`\hat k` of the upper tail of the squared
        deviations of the exact draws decides (:math:`\hat k < 1/2`).
    """
    import pandas as pd

    ess, _, mcse = _diagnostics(flat)
    sample_mean = flat.mean(axis=(0, 1))
    sample_sd = flat.std(axis=(0, 1), ddof=1)
    mcse_sd = _mcse_sd(flat)
    finite = np.isfinite(mean) & np.isfinite(sd)
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = iid - iid.mean(axis=0)
        k4 = _pareto_k(np.log(dev * dev))
        c_mcse = 0.0 if closed_mcse is None else closed_mcse
        c_mcse_sd = 0.0 if closed_mcse_sd is None else closed_mcse_sd
        z = np.where(finite, (sample_mean - mean) / np.sqrt(mcse**2 + c_mcse**2), np.nan)
        sd_ok = finite & (k4 < PARETO_K_MAX)
        z_sd = np.where(sd_ok, (sample_sd - sd) / np.sqrt(mcse_sd**2 + c_mcse_sd**2), np.nan)
    table = {"parameter": labels, "closed_mean": mean, "closed_sd": sd, "mcmc_mean": sample_mean,
             "mcmc_sd": sample_sd, "mcse": mcse, "mcse_sd": mcse_sd, "closed_mcse": np.broadcast_to(c_mcse, mean.shape),
             "closed_mcse_sd": np.broadcast_to(c_mcse_sd, mean.shape), "z": z, "z_sd": z_sd}
    # A quantile through the probability integral transform: the MCMC mass below the
    # closed form's q-quantile is q, up to the MCSE of that mass (a mean of indicators)
    # and the error of the closed quantile in mass: q (1 - q) / n_exact for n_exact iid
    # draws, the MCSE of the per-stratum fractions below it for stratified mixture draws.
    n_exact = iid.shape[0]
    quantiles = np.quantile(iid, QUANTILES, axis=0)  # (n_q, k)
    below = flat[..., None, :] <= quantiles  # (chain, draw, n_q, k)
    _, _, mcse_q = _diagnostics(below.reshape(below.shape[:2] + (-1,)).astype(np.float64))
    mcse_q = mcse_q.reshape(len(QUANTILES), -1)
    if strata is None:
        closed_var_q = np.array([q * (1 - q) / n_exact for q in QUANTILES])[:, None]
    else:
        fractions = (iid[:, None, :] <= quantiles).reshape(tuple(strata) + (-1,)).mean(axis=2)
        _, _, closed_mcse_q = _diagnostics(fractions)
        closed_var_q = closed_mcse_q.reshape(len(QUANTILES), -1) ** 2
    for i, (q, column) in enumerate(zip(QUANTILES, _Q_COLUMNS)):
        mass = below[..., i, :].mean(axis=(0, 1))
        table[column] = (mass - q) / np.sqrt(mcse_q[i] ** 2 + closed_var_q[i])
    table["ess_bulk"] = ess
    table.update(mixing(flat, n_rhat_tests, false_alarm))
    frame = pd.DataFrame({c: table[c] for c in _PARAMETER_COLUMNS})
    return frame, int(np.sum(~finite)), int(np.sum(finite & ~sd_ok))


def _derived_seed(random_state):
    return jax.random.fold_in(key_from_random_state(random_state), 1)
