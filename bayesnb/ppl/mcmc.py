r"""Cross-check of the closed-form posterior against NUTS on the numpyro model.

:func:`crosscheck` runs numpyro's NUTS on the generative model of a fitted estimator
(:func:`bayesnb.ppl.models.model_from_estimator`: the estimator's own prior hyperparameters
and class-proportion settings, conditioned on the data ``X, y``) and compares:

* every scalar parameter: the closed-form posterior mean and standard deviation
  (:func:`bayesnb.ppl.models.posterior_moments`, from the estimator's ``posterior_``) next
  to the MCMC mean, its Monte Carlo standard error (MCSE), the z-score
  :math:`z = (\bar\theta_{\rm MCMC} - E[\theta \mid D]) / \mathrm{MCSE}`, the bulk
  effective sample size and the rank-normalised split :math:`\hat R`;
* the posterior predictive class probabilities :math:`p(y = c \mid x, D)` of a few rows:
  the estimator's exact closed form (``estimate="predictive"``) next to the MCMC
  estimate :math:`\sum_d p(x, y{=}c \mid \theta_d, \pi_d) / \sum_{d,c'} p(x, y{=}c' \mid
  \theta_d, \pi_d)`, computed from numpyro's own log densities of the model, with a
  delta-method MCSE.

The rule for the report's ``agrees`` (:class:`CrossCheck`), all of them:

1. every |z| < ``z_max`` (default 4), parameters and predictive probabilities alike;
2. every :math:`\hat R` < ``rhat_max`` (default 1.01);
3. every bulk ESS ≥ ``min_ess`` (default 100; below it the MCSE itself is unreliable);
4. no divergent NUTS transition.

A parameter whose closed-form mean or standard deviation does not exist (a posterior
too heavy-tailed, e.g. an inverse-gamma shape :math:`\le 2`) gets no z-score; it is
listed and counted in the report's ``n_skipped``, not silently dropped. Likewise a
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

numpyro's inference and arviz are imported inside the functions: ``import bayesnb``
does not load them.
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

import jax
import numpy as np
from sklearn.utils.validation import check_is_fitted

from bayesnb.core._random import key_from_random_state
from bayesnb.core._x64 import enable_x64

__all__ = ["crosscheck", "run_nuts", "NUTSRun", "CrossCheck"]


def _interactive():
    """Show numpyro's progress bar only to a person at a terminal (not in tests or CI)."""
    if os.environ.get("CI") or os.environ.get("PYTEST_CURRENT_TEST"):
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


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
    inference_data : arviz.InferenceData
        ``posterior`` (canonical parameters) and ``sample_stats`` (``diverging``).
    fingerprint : tuple
        Identifies the model and data (see :func:`crosscheck`'s ``nuts``).
    form : {"rows", "stats"}
    """

    samples: dict
    diverging: np.ndarray
    model: object
    model_kwargs: dict
    latent: dict
    inference_data: object
    fingerprint: tuple
    form: str


def _fingerprint(value):
    """A hashable digest of the model arguments: the same model on the same data."""
    import hashlib

    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(value, is_leaf=lambda x: x is None):
        digest.update(repr(type(leaf)).encode())
        if leaf is None:
            continue
        arr = np.asarray(leaf)
        digest.update(str(arr.dtype).encode() + str(arr.shape).encode())
        digest.update(np.ascontiguousarray(arr).tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
    return (digest.hexdigest(),)


def _model_fingerprint(model, kwargs):
    return (model.__name__,) + _fingerprint({k: v for k, v in sorted(kwargs.items())})


def run_nuts(
    estimator,
    X,
    y,
    *,
    sample_weight=None,
    num_warmup=1000,
    num_samples=1000,
    num_chains=2,
    random_state=None,
    form="rows",
    chain_method="vectorized",
    progress_bar=None,
    target_accept_prob=0.8,
):
    """Run numpyro's NUTS on the generative model of a fitted estimator, conditioned on ``(X, y)``.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
        Supplies the prior hyperparameters and class-proportion settings (not the data).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    sample_weight : array-like of shape (n_samples,), optional
    num_warmup, num_samples, num_chains : int
        NUTS warm-up iterations, draws kept per chain, chains (at least 2).
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
    import arviz as az
    from numpyro.infer import MCMC, NUTS

    from bayesnb.ppl import export, models

    check_is_fitted(estimator, "stats_")
    if int(num_chains) < 2:
        raise ValueError(f"num_chains must be >= 2 (r_hat compares chains), got {num_chains!r}")
    if progress_bar is None:
        progress_bar = _interactive()
    model, kwargs = models.model_from_estimator(estimator, X, y, form=form, sample_weight=sample_weight)
    key = key_from_random_state(random_state)
    with enable_x64():
        mcmc = MCMC(
            NUTS(model, target_accept_prob=target_accept_prob),
            num_warmup=int(num_warmup),
            num_samples=int(num_samples),
            num_chains=int(num_chains),
            chain_method=chain_method,
            progress_bar=bool(progress_bar),
        )
        mcmc.run(key, extra_fields=("diverging",), **kwargs)
        grouped = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
        latent = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
        diverging = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"], dtype=bool)
    samples = {}
    if "class_probs" in grouped:
        samples["class_probs"] = grouped["class_probs"]
    for name, _, _, spec in models.block_specs(estimator):
        block = {var: grouped[models._prefixed(name, var)] for var in spec.variables}
        for var, value in spec.canonical(block).items():
            samples[models._prefixed(name, var)] = value
    dims = {k: list(v) for k, v in models.variable_dims(estimator).items() if k in samples}
    idata = az.from_dict(
        posterior=samples,
        sample_stats={"diverging": diverging},
        coords=export.coords_of(estimator),
        dims=dims,
        attrs={"inference_library": "numpyro", "sampler": "NUTS", "form": form},
    )
    return NUTSRun(samples, diverging, model, kwargs, latent, idata, _model_fingerprint(model, kwargs), form)


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
    return ess, rhat, mcse


class CrossCheck:
    """Closed form versus NUTS: the report returned by :func:`crosscheck`.

    Attributes
    ----------
    agrees : bool
        The documented rule (see :mod:`bayesnb.ppl.mcmc`).
    failures : list of str
        Why it does not agree (empty when it does).
    parameters : pandas.DataFrame
        One row per scalar parameter: ``parameter``, ``closed_mean``, ``closed_sd``,
        ``mcmc_mean``, ``mcse``, ``z``, ``ess_bulk``, ``r_hat``.
    predictive : pandas.DataFrame
        One row per (row, class): ``row``, ``class``, ``closed``, ``mcmc``, ``mcse``,
        ``z``, ``pareto_k`` (``z`` is NaN where ``pareto_k`` >= 1/2: not compared).
    n_skipped : int
        Parameters without a finite closed-form mean/sd (no z-score).
    n_unreliable : int
        Predictive probabilities whose MCMC estimate is unreliable (no z-score).
    n_divergent : int
    max_abs_z, max_rhat, min_ess : float
    nuts : NUTSRun
    mcmc_inference_data, closed_form_inference_data : arviz.InferenceData
        The MCMC draws, and as many exact iid closed-form draws, with the same
        variables, dims and coords (e.g. for ``az.plot_forest([closed, mcmc])``).
    z_max, rhat_max, min_ess_required : float
        The thresholds of the rule.
    """

    def __init__(self, parameters, predictive, nuts, closed_idata, *, z_max, rhat_max, min_ess, n_skipped):
        self.parameters = parameters
        self.predictive = predictive
        self.nuts = nuts
        self.mcmc_inference_data = nuts.inference_data
        self._closed_idata = closed_idata
        self.z_max = float(z_max)
        self.rhat_max = float(rhat_max)
        self.min_ess_required = float(min_ess)
        self.n_skipped = int(n_skipped)
        self.n_unreliable = int(np.sum(~np.isfinite(predictive["z"].to_numpy())))
        self.n_divergent = int(np.sum(nuts.diverging))
        z = np.concatenate([parameters["z"].to_numpy(), predictive["z"].to_numpy()])
        z = z[np.isfinite(z)]
        self.max_abs_z = float(np.max(np.abs(z), initial=0.0))
        self.max_rhat = float(np.nanmax(parameters["r_hat"].to_numpy(), initial=1.0))
        self.min_ess = float(np.nanmin(parameters["ess_bulk"].to_numpy(), initial=np.inf))
        failures = []
        bad = parameters[np.abs(parameters["z"]) >= z_max]
        if len(bad):
            failures.append(f"{len(bad)} parameter(s) with |z| >= {z_max:g}, worst {_worst(bad)}")
        bad_pred = np.flatnonzero(np.abs(predictive["z"].to_numpy()) >= z_max)
        if bad_pred.size:
            worst = predictive.iloc[bad_pred[np.argmax(np.abs(predictive["z"].to_numpy()[bad_pred]))]]
            failures.append(
                f"{bad_pred.size} predictive probabilit(ies) with |z| >= {z_max:g}, worst row {int(worst['row'])} "
                f"class {worst['class']}: closed {worst['closed']:.4g} vs MCMC {worst['mcmc']:.4g} (z={worst['z']:.2f})"
            )
        if self.max_rhat >= rhat_max:
            failures.append(f"r_hat up to {self.max_rhat:.4f} (>= {rhat_max:g}): the chains have not mixed")
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
        lines = [
            f"bayesnb cross-check, closed form vs NUTS ({n_chain} chain(s) x {n_draw} draws): {verdict}",
            f"  parameters: {len(self.parameters)} compared"
            + (f", {self.n_skipped} without a finite closed-form mean/sd" if self.n_skipped else "")
            + f"; predictive probabilities: {len(self.predictive) - self.n_unreliable} compared"
            + (
                f", {self.n_unreliable} not (Pareto k >= {PARETO_K_MAX:g}: carried by too few draws)"
                if self.n_unreliable
                else ""
            ),
            f"  max |z| {self.max_abs_z:.2f} (rule < {self.z_max:g}), max r_hat {self.max_rhat:.4f} "
            f"(< {self.rhat_max:g}), min ESS {self.min_ess:.0f} (>= {self.min_ess_required:g}), "
            f"divergences {self.n_divergent}",
        ]
        lines += [f"  - {f}" for f in self.failures]
        return lines

    def to_string(self, max_rows=None):
        """The report with the full tables (``max_rows`` limits each table)."""
        import pandas as pd

        with pd.option_context("display.width", 120, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
            params = self.parameters if max_rows is None else _largest_z(self.parameters, max_rows)
            pred = self.predictive if max_rows is None else _largest_z(self.predictive, max_rows)
            return "\n".join(
                self._header()
                + ["", "parameters" + (" (largest |z| first)" if max_rows is not None else "") + ":", params.to_string(index=False)]
                + ["", "predictive class probabilities:", pred.to_string(index=False)]
            )

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        return self.to_string(max_rows=8)


def _largest_z(table, n):
    order = np.argsort(-np.nan_to_num(np.abs(table["z"].to_numpy()), nan=-1.0), kind="stable")
    return table.iloc[order[:n]]


def _worst(bad):
    row = bad.iloc[int(np.argmax(np.abs(bad["z"].to_numpy())))]
    return (
        f"{row['parameter']}: closed {row['closed_mean']:.4g} ± {row['closed_sd']:.3g} vs MCMC "
        f"{row['mcmc_mean']:.4g} (MCSE {row['mcse']:.2g}, z={row['z']:.2f})"
    )


def _predictive(estimator, nuts, X_rows):
    """Closed-form and MCMC posterior predictive class probabilities of ``X_rows``."""
    import arviz as az
    from numpyro.infer.util import log_likelihood

    from bayesnb.ppl import models

    closed_est = _with_estimate(estimator, "predictive")
    closed = closed_est.predict_proba(X_rows)
    n_rows, n_classes = closed.shape
    # Every row paired with every class, as data of the model: log p(x_r, y=c | draw).
    X_rep = _repeat_rows(X_rows, n_classes)
    y_rep = np.tile(estimator.classes_, n_rows)
    model, kwargs = models.model_from_estimator(estimator, X_rep, y_rep, form="rows")
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
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(mcse > 0, (mcmc - closed) / mcse, np.where(mcmc == closed, 0.0, np.inf))
    z = np.where(reliable, z, np.nan)
    return closed, mcmc, mcse, z, k


#: Largest Pareto tail shape of the per-draw joint probabilities at which a predictive
#: probability is compared (see :func:`crosscheck`).
PARETO_K_MAX = 0.5


def _logsumexp(a, axis):
    top = a.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.exp(a - top).sum(axis=axis))


def _pareto_k(log_values):
    """Pareto shape k of the upper tail of exp(log_values) over the draws (axis 0), per column."""
    import arviz as az

    flat = np.moveaxis(np.asarray(log_values, dtype=np.float64), 0, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        _, k = az.psislw(flat.reshape(-1, flat.shape[-1]), normalize=False)
    return np.asarray(k, dtype=np.float64).reshape(flat.shape[:-1])


def _repeat_rows(X, k):
    if hasattr(X, "iloc"):
        import pandas as pd

        return pd.concat([X.iloc[[i]] for i in range(X.shape[0]) for _ in range(k)], ignore_index=True)
    import scipy.sparse as sp

    if sp.issparse(X):
        return sp.csr_matrix(X)[np.repeat(np.arange(X.shape[0]), k)]
    return np.repeat(np.asarray(X), k, axis=0)


def _with_estimate(estimator, estimate):
    import copy

    # A shallow copy with another public ``estimate``: the fitted pytrees are shared (the
    # estimator's memo of point estimates is keyed by the estimate, so sharing it is safe).
    return copy.copy(estimator).set_params(estimate=estimate)


def crosscheck(
    estimator,
    X,
    y,
    *,
    sample_weight=None,
    num_warmup=1000,
    num_samples=1000,
    num_chains=2,
    random_state=None,
    form="rows",
    X_new=None,
    n_rows=5,
    z_max=4.0,
    rhat_max=1.01,
    min_ess=100,
    chain_method="vectorized",
    progress_bar=None,
    nuts=None,
):
    """Compare a fitted estimator's closed-form posterior with NUTS on its numpyro model.

    The closed-form side is the estimator's ``posterior_`` (and class posterior); the
    MCMC side is NUTS on :func:`bayesnb.ppl.models.model_from_estimator` with the
    estimator's prior, conditioned on ``(X, y)``. For the two to describe the same
    posterior, ``X, y`` (and ``sample_weight``) must be the data the estimator was
    fitted on. See :mod:`bayesnb.ppl.mcmc` for the comparison and the ``agrees`` rule.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
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
    z_max, rhat_max, min_ess : float
        Thresholds of the ``agrees`` rule.
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

    check_is_fitted(estimator, "stats_")
    if nuts is None:
        nuts = run_nuts(
            estimator,
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
    else:
        model, kwargs = models.model_from_estimator(estimator, X, y, form=nuts.form, sample_weight=sample_weight)
        if _model_fingerprint(model, kwargs) != nuts.fingerprint:
            raise ValueError("nuts= was run on a different model or different data than this cross-check")
    moments = models.posterior_moments(estimator)
    dims = models.variable_dims(estimator)
    coords = export.coords_of(estimator)
    rows = []
    n_skipped = 0
    for name, draws in nuts.samples.items():
        mean, sd = (np.asarray(m, dtype=np.float64) for m in moments[name])
        keep = export.scalar_mask(dims[name], mean)
        labels = np.array(export.scalar_labels(name, dims[name], coords, mean.shape), dtype=object).reshape(mean.shape)
        flat = draws[..., keep]  # (chain, draw, k)
        if flat.shape[-1] == 0:
            continue
        ess, rhat, mcse = _diagnostics(flat)
        m, s = mean[keep], sd[keep]
        sample_mean = flat.mean(axis=(0, 1))
        finite = np.isfinite(m) & np.isfinite(s)
        constant = finite & (s == 0)
        n_skipped += int(np.sum(~finite))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(finite & ~constant, (sample_mean - m) / mcse, np.nan)
        for i, label in enumerate(labels[keep]):
            if constant[i]:
                continue
            rows.append(
                {
                    "parameter": label,
                    "closed_mean": m[i],
                    "closed_sd": s[i],
                    "mcmc_mean": sample_mean[i],
                    "mcse": mcse[i],
                    "z": z[i],
                    "ess_bulk": ess[i],
                    "r_hat": rhat[i],
                }
            )
    parameters = pd.DataFrame(
        rows, columns=["parameter", "closed_mean", "closed_sd", "mcmc_mean", "mcse", "z", "ess_bulk", "r_hat"]
    )
    X_rows = X if X_new is None else X_new
    X_rows = X_rows.iloc[:n_rows] if hasattr(X_rows, "iloc") else X_rows[:n_rows]
    closed, mcmc, mcse, z, pareto_k = _predictive(estimator, nuts, X_rows)
    pred_rows = [
        {"row": r, "class": c, "closed": closed[r, j], "mcmc": mcmc[r, j], "mcse": mcse[r, j], "z": z[r, j],
         "pareto_k": pareto_k[r, j]}
        for r in range(closed.shape[0])
        for j, c in enumerate(export._labels(estimator.classes_))
    ]
    predictive = pd.DataFrame(pred_rows, columns=["row", "class", "closed", "mcmc", "mcse", "z", "pareto_k"])
    n_chain, n_draw = nuts.diverging.shape
    seed = _derived_seed(random_state)
    # A snapshot: a later refit of the estimator must not change this report.
    snapshot = _with_estimate(estimator, estimator.estimate)

    def closed_idata():
        return export.to_inference_data(snapshot, n_draw, random_state=seed, n_chains=n_chain)

    return CrossCheck(
        parameters, predictive, nuts, closed_idata, z_max=z_max, rhat_max=rhat_max, min_ess=min_ess, n_skipped=n_skipped
    )


def _derived_seed(random_state):
    return jax.random.fold_in(key_from_random_state(random_state), 1)
