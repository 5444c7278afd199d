r"""Posterior predictive checks: replicated data sets, discrepancies, p-values.

Given the training rows :math:`X` with their labels :math:`y`, a replicated data set is
drawn from the posterior predictive *given the observed labels*:
:math:`\theta^{(d)} \sim p(\theta \mid D)` once per replicate, then every row
:math:`x^{\mathrm{rep}}_i \sim p(x \mid y_i, \theta^{(d)})` (the family's ``simulate``;
a family whose ``sample`` draws each row's own latent parameters, ``local_draws`` in
:mod:`bayesnb.core.families.protocol`, takes one draw per row). A discrepancy
:math:`T(X, y)` is computed on the observed and on every replicated data set, and its
posterior predictive p-value (Rubin 1984; Gelman, Meng & Stern 1996) is

.. math::

    p = \min\big(1,\; 2 \min\{\Pr(T^{\mathrm{rep}} \ge T^{\mathrm{obs}}),\;
        \Pr(T^{\mathrm{rep}} \le T^{\mathrm{obs}})\}\big),

two-sided, elementwise for a statistic with several entries (one per class, per
feature, ...). Under the model these p-values are *conservative*, concentrated around
1/2 rather than uniform (Meng 1994): a small one flags a misfit, a large one does not
certify a fit.

Built-in discrepancies are chosen by what a block's data are (the family's ``support``),
never by which family it is:

============  =========================================================================
support       statistics (per class :math:`c`)
============  =========================================================================
counts        ``feature_totals`` (:math:`T_{cj}`, shape (C, F)), ``length_dispersion``
              (variance / mean of the row totals), ``count_dispersion`` (Pearson
              dispersion of the counts given each row's total: about 1 for
              multinomial counts, larger for bursty words),
              ``zero_share`` (share of zero counts), each shape (C,)
binary        ``frequency``: share of ones per feature, (C, F)
codes         ``category_frequency``: share of each category per feature, (C, F, K)
real          ``variance`` per feature, (C, F)
positive      ``variance`` per feature, (C, F)
============  =========================================================================

A :class:`~bayesnb.MixedNB` gets each block's statistics on its columns, named
``"<block>__<statistic>"``.

Examples
--------
>>> import numpy as np
>>> from bayesnb import PoissonNB
>>> rng = np.random.default_rng(0)
>>> y = np.repeat([0, 1], 30)
>>> X = rng.poisson([[2.0, 5.0]], (60, 2)) + y[:, None]
>>> res = ppc(PoissonNB().fit(X, y), X, y, n_draws=200, random_state=0)
>>> sorted(res.observed)
['count_dispersion', 'feature_totals', 'length_dispersion', 'zero_share']
>>> res.replicated["feature_totals"].shape, res.p_value["zero_share"].shape
((200, 2, 2), (2,))
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
import scipy.sparse as sp

from bayesnb.core import _fitted
from bayesnb.core import missing as _missing
from bayesnb.core._random import key_from_random_state
from bayesnb.core._validation import check_n_draws, class_index

__all__ = ["PPCResult", "STATISTICS", "p_values", "ppc", "register_statistic"]


# ----------------------------------------------------------------------------- statistics
def _per_class(X, y_index, n_classes, reduce):
    """``reduce(rows of class c)`` for every class, stacked (NaN for a class without rows)."""
    out = []
    for c in range(n_classes):
        rows = X[y_index == c]
        out.append(reduce(rows) if rows.shape[0] else None)
    shape = next((np.shape(o) for o in out if o is not None), ())
    return np.stack([np.full(shape, np.nan) if o is None else np.asarray(o, dtype=np.float64) for o in out])


def _ratio(num, den):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def feature_totals(X, y_index, n_classes, observed=None):
    """Per-class feature totals :math:`T_{cj} = \\sum_{i: y_i = c} x_{ij}`, shape (n_classes, n_features)."""
    return _per_class(X, y_index, n_classes, lambda r: np.nansum(r, axis=0))


def length_dispersion(X, y_index, n_classes, observed=None):
    """Variance / mean of the row totals (document lengths) of each class, shape (n_classes,)."""

    def disp(rows):
        n = np.nansum(rows, axis=1)
        return _ratio(np.var(n, ddof=1), np.mean(n)) if n.size > 1 else np.nan

    return _per_class(X, y_index, n_classes, disp)


def count_dispersion(X, y_index, n_classes, observed=None):
    r"""Pearson dispersion of each class's counts given the row totals, shape (n_classes,).

    .. math::

        \phi_c = rac{1}{N_c (F_c - 1)} \sum_{i: y_i = c} \sum_{j: \hat p_{cj} > 0}
            rac{(x_{ij} - n_i \hat p_{cj})^2}{n_i \hat p_{cj}},
        \qquad \hat p_{cj} = rac{T_{cj}}{\sum_k T_{ck}},

    over the :math:`N_c` rows of class :math:`c` with a positive total :math:`n_i`, and the
    :math:`F_c` features it uses. Each row is centred on its own length, so the
    statistic does not see how long the rows are: about 1 for multinomial counts given
    the lengths, larger for bursty words (a word that occurs once in a document tends
    to occur again; under a Dirichlet-multinomial with precision :math:`A` it is about
    :math:`(ar n + A)/(1 + A)`).
    """

    def disp(rows):
        rows = np.where(np.isnan(rows), 0.0, rows)
        n = rows.sum(axis=1)
        rows, n = rows[n > 0], n[n > 0]
        total = rows.sum(axis=0)
        used = total > 0
        if n.size < 2 or used.sum() < 2:
            return np.nan
        p = total[used] / total.sum()
        # sum_j (x - n p)^2 / (n p) = sum_j x^2 / (n p) - n  (the x sum to n over the used features)
        chi2 = np.sum((rows[:, used] ** 2 / p).sum(axis=1) / n - n)
        return chi2 / (n.size * (used.sum() - 1))

    return _per_class(X, y_index, n_classes, disp)


def zero_share(X, y_index, n_classes, observed=None):
    """Share of the (observed) counts of each class that are zero, shape (n_classes,)."""
    return _per_class(X, y_index, n_classes, lambda r: _ratio(np.sum(r == 0), np.sum(~np.isnan(r))))


def frequency(X, y_index, n_classes, observed=None):
    """Share of ones of each feature in each class, shape (n_classes, n_features)."""
    return _per_class(X, y_index, n_classes, lambda r: np.nanmean(r, axis=0))


def category_frequency(X, y_index, n_classes, observed=None):
    """Share of each category code of each feature in each class, shape (n_classes, n_features, n_codes).

    The codes are ``0 .. max`` of ``observed`` (the observed rows; ``X`` itself by
    default), so that replicated data sets give statistics of one shape.
    """
    ref = X if observed is None else observed
    n_codes = int(np.nanmax(ref, initial=0)) + 1
    return _per_class(
        X, y_index, n_classes, lambda r: np.stack([np.nanmean(np.where(np.isnan(r), np.nan, r == k), axis=0) for k in range(n_codes)], axis=-1)
    )


def variance(X, y_index, n_classes, observed=None):
    """Sample variance (ddof 1) of each feature in each class, shape (n_classes, n_features)."""
    return _per_class(X, y_index, n_classes, lambda r: np.nanvar(r, axis=0, ddof=1) if r.shape[0] > 1 else np.full(r.shape[1], np.nan))


#: Built-in discrepancies by what one feature value is (a family's ``support``):
#: ``{support: {name: stat(X, y_index, n_classes, observed=None)}}`` (``observed``: the
#: observed rows of the same columns, for a statistic whose shape depends on them).
STATISTICS = {
    "counts": {
        "feature_totals": feature_totals,
        "length_dispersion": length_dispersion,
        "count_dispersion": count_dispersion,
        "zero_share": zero_share,
    },
    "binary": {"frequency": frequency},
    "codes": {"category_frequency": category_frequency},
    "real": {"variance": variance},
    "positive": {"variance": variance},
}


def register_statistic(support, name, stat):
    """Add a built-in discrepancy ``stat(X, y_index, n_classes, observed=None) -> float or array`` for data of ``support``.

    Parameters
    ----------
    support : str
        A family ``support`` (``"counts"``, ``"binary"``, ``"codes"``, ``"real"``,
        ``"positive"``, or a new one).
    name : str
    stat : callable
    """
    if not callable(stat):
        raise TypeError(f"stat must be callable, got {type(stat).__name__}")
    STATISTICS.setdefault(support, {})[name] = stat


def p_values(observed, replicated):
    r"""Two-sided posterior predictive p-values, elementwise.

    Parameters
    ----------
    observed : ndarray of shape S
    replicated : ndarray of shape (n_draws, *S)

    Returns
    -------
    p_value : ndarray of shape S
        :math:`\min(1, 2\min(\Pr(T^{rep} \ge T^{obs}), \Pr(T^{rep} \le T^{obs})))`
        over the replicates where :math:`T^{rep}` is defined; NaN where the observed
        statistic is undefined.
    p_upper : ndarray of shape S
        :math:`\Pr(T^{rep} \ge T^{obs})` (one-sided).
    """
    observed = np.asarray(observed, dtype=np.float64)
    replicated = np.asarray(replicated, dtype=np.float64)
    defined = ~np.isnan(replicated)
    count = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = np.sum(defined & (replicated >= observed), axis=0) / count
        lower = np.sum(defined & (replicated <= observed), axis=0) / count
        two = np.minimum(1.0, 2.0 * np.minimum(upper, lower))
    bad = np.isnan(observed) | (count == 0)
    return np.where(bad, np.nan, two), np.where(bad, np.nan, upper)


# ----------------------------------------------------------------------------- data
def _dense(part):
    """A block's validated rows as a dense float array, NaN at unobserved entries."""
    mask = None
    if isinstance(part, _missing.MaskedX):
        part, mask = part.X, part.mask
    values = np.asarray(part.toarray() if sp.issparse(part) else part, dtype=np.float64)
    if mask is not None:
        mask = np.asarray(mask.toarray() if sp.issparse(mask) else mask, dtype=bool)
        values = np.where(mask, np.nan, values)
    return values


def _observed(fitted, X):
    """The validated training rows, dense, in the columns of the model (NaN where no block models a column)."""
    checked = fitted.validate(X)
    if not _fitted.is_mixed(fitted):
        return _dense(checked)
    out = np.full(checked.shape, np.nan)
    for block, part in zip(_fitted.blocks(fitted), checked.parts):
        out[:, block.columns] = _dense(part)
    return out


def _block_params(key, block, d, drawn, y_index):
    """Parameters of replicate ``d`` of a block: its shared draw ``drawn[d]``, or one draw per row (``local_draws``, from ``key``)."""
    if drawn is None:
        return block.family.local_draws(key, block.posterior, y_index)
    return jax.tree.map(lambda a: a[d], drawn)


def _replicates(key, fitted, y_index, n_draws, shape, unobserved):
    """Yield ``n_draws`` replicated data sets of ``shape``, NaN where ``unobserved``."""
    parts = _fitted.blocks(fitted)
    keys = []
    for k in jax.random.split(key, len(parts)):
        keys.append(tuple(jax.random.split(k)))  # (parameter draws, rows)
    if _fitted.hyper_posterior(fitted):
        # Fitted with hyperpriors: the posterior is the mixture over the hyperparameters'
        # draws, each draw of every block's parameters from one conditional posterior.
        _, mixture = _fitted.draws(fitted, n_draws, keys[0][0])
        shared = [mixture[block.name] if _fitted.is_mixed(fitted) else mixture for block in parts]
    else:
        shared = [_fitted.block_draws(k_draw, block, n_draws) for block, (k_draw, _) in zip(parts, keys)]
    drawn = [None if block.family.local_draws is not None else d for block, d in zip(parts, shared)]
    # One split per block rather than a fold_in per replicate: JAX dispatch dominates small data.
    row_keys = [jax.random.split(k_rows, n_draws) for _, k_rows in keys]
    draw_keys = [jax.random.split(k_draw, n_draws) if dr is None else None for (k_draw, _), dr in zip(keys, drawn)]
    for d in range(n_draws):
        X = np.full(shape, np.nan)
        for b, (block, dr) in enumerate(zip(parts, drawn)):
            params = _block_params(None if dr is not None else draw_keys[b][d], block, d, dr, y_index)
            rows = np.asarray(block.family.simulate(row_keys[b][d], params, y_index, block.stats))
            X[:, slice(None) if block.columns is None else block.columns] = rows
        X[unobserved] = np.nan
        yield X


# ----------------------------------------------------------------------------- result
class PPCResult(NamedTuple):
    r"""What :func:`ppc` returns.

    Attributes
    ----------
    observed : dict of str to ndarray
        :math:`T(X, y)` of each statistic (its own shape ``S``).
    replicated : dict of str to ndarray
        :math:`T(X^{rep}, y)`, shape (n_draws, *S).
    p_value : dict of str to ndarray
        Two-sided posterior predictive p-values, shape ``S`` (see :func:`p_values`).
    p_upper : dict of str to ndarray
        One-sided :math:`\Pr(T^{rep} \ge T^{obs})`, shape ``S``.
    X_observed : ndarray of shape (n_samples, n_features)
        The validated training rows (category codes, NaN at unobserved entries).
    X_replicated : ndarray of shape (n_draws, n_samples, n_features) or None
        The replicated data sets (kept with ``keep_replicates``).
    y : ndarray of shape (n_samples,)
        The labels the replicates are conditioned on.
    classes : ndarray of shape (n_classes,)
    """

    observed: dict
    replicated: dict
    p_value: dict
    p_upper: dict
    X_observed: np.ndarray
    X_replicated: np.ndarray | None
    y: np.ndarray
    classes: np.ndarray

    def summary(self):
        """One row per statistic and entry: observed value, replicated mean and sd, p-value.

        Returns
        -------
        pandas.DataFrame
            Indexed by (statistic, entry), entry a tuple of indices into the statistic
            (``()`` for a scalar); columns ``observed``, ``replicated_mean``,
            ``replicated_sd``, ``p_value``, sorted by statistic.
        """
        import pandas as pd

        records = []
        for name in sorted(self.observed):
            obs, rep, p = self.observed[name], self.replicated[name], self.p_value[name]
            with np.errstate(invalid="ignore"), _quiet():
                mean, sd = np.nanmean(rep, axis=0), np.nanstd(rep, axis=0, ddof=1)
            for idx in np.ndindex(obs.shape):
                records.append((name, idx, float(obs[idx]), float(mean[idx]), float(sd[idx]), float(p[idx])))
        frame = pd.DataFrame(records, columns=["statistic", "entry", "observed", "replicated_mean", "replicated_sd", "p_value"])
        return frame.set_index(["statistic", "entry"])

    def plot(self, statistic, entry=None, *, bins=30, ax=None):
        """The replicated statistic's histogram with the observed value as a vertical line.

        Parameters
        ----------
        statistic : str
            A key of ``observed``.
        entry : tuple of int, optional
            Which entry of a statistic with several (default: the one with the smallest
            p-value).
        bins : int
        ax : matplotlib Axes, optional
            Drawn on a new figure (no pyplot) when None.

        Returns
        -------
        matplotlib.axes.Axes
        """
        from bayesnb.analysis.plots import _new_axes

        if statistic not in self.observed:
            raise ValueError(f"unknown statistic {statistic!r}; the checked ones are {sorted(self.observed)}")
        obs, rep, p = self.observed[statistic], self.replicated[statistic], self.p_value[statistic]
        if entry is None:
            entry = np.unravel_index(int(np.nanargmin(np.where(np.isnan(p), np.inf, p))), p.shape) if p.size else ()
        entry = tuple(int(i) for i in np.atleast_1d(entry)) if np.ndim(entry) else ((int(entry),) if entry != () else ())
        ax = _new_axes(ax, (5.0, 3.2))
        values = rep[(slice(None), *entry)]
        values = values[~np.isnan(values)]
        ax.hist(values, bins=bins, color="#1f77b4", alpha=0.7, label=f"replicated ({values.size})")
        # p = 0 from n replicates means p < 1/n, not an impossibility.
        shown = f"p < {1 / values.size:.2g}" if p[entry] == 0 and values.size else f"p = {p[entry]:.3g}"
        ax.axvline(obs[entry], color="#d62728", lw=2, label=f"observed ({shown})")
        ax.set_xlabel(statistic + (f" {list(entry)}" if entry else ""))
        ax.set_ylabel("replicated data sets")
        ax.legend(frameon=False)
        return ax

    def to_inference_data(self):
        """The replicated and observed data for ``az.plot_ppc`` (arviz 1.x: ``plot_ppc_dist``).

        The installed arviz's object: ``InferenceData`` on arviz 0.x, ``DataTree`` on 1.x.

        Groups ``posterior_predictive`` (``X``, dims (chain, draw, data, feature), one
        chain) and ``observed_data`` (``X``, dims (data, feature)), under the same
        name so that ``az.plot_ppc(idata)`` pairs them; ``constant_data`` ``y`` holds
        the labels the replicates were conditioned on.

        Raises
        ------
        ValueError
            If the replicated data sets were not kept (``keep_replicates=False``).
        """
        from bayesnb.analysis import _arviz

        if self.X_replicated is None:
            raise ValueError("the replicated data sets were not kept: call ppc(..., keep_replicates=True)")
        n, f = self.X_observed.shape
        coords = {"data": np.arange(n), "feature": np.arange(f)}
        dims = {"X": ["data", "feature"], "y": ["data"]}
        groups = {
            "posterior_predictive": {"X": self.X_replicated[None]},
            "observed_data": {"X": self.X_observed},
            "constant_data": {"y": np.asarray(self.y)},
        }
        return _arviz.from_dict(groups, coords=coords, dims=dims)


class _quiet:
    """Silence numpy's warnings about all-NaN slices (a statistic undefined for a class)."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


# Above this many numbers the replicated data sets are not kept by default.
_KEEP_ENTRIES = 1 << 24


def _statistics(fitted, statistics, n_classes, Xobs):
    """``{name: f(X, y_labels, y_index)}`` for the requested statistics."""
    builtins = {}
    for name, family, cols in ((b.name, b.family, b.columns) for b in _fitted.blocks(fitted)):
        table = STATISTICS.get(family.support, {})
        for stat_name, stat in table.items():
            full = f"{name}__{stat_name}" if name else stat_name
            builtins[full] = _on_columns(stat, cols, n_classes, Xobs)
    if statistics is None:
        return builtins
    if callable(statistics):
        statistics = {getattr(statistics, "__name__", "statistic"): statistics}
    if isinstance(statistics, str):
        statistics = [statistics]
    out = {}
    items = statistics.items() if isinstance(statistics, dict) else ((s, s) for s in statistics)
    for name, stat in items:
        if isinstance(stat, str):
            if stat not in builtins:
                raise ValueError(f"unknown statistic {stat!r}; the built-in ones for this model are {sorted(builtins)}")
            out[name] = builtins[stat]
        elif callable(stat):
            out[str(name)] = _user(stat)
        else:
            raise TypeError(f"a statistic must be a built-in name or a callable stat(X, y), got {stat!r}")
    return out


def _on_columns(stat, cols, n_classes, Xobs):
    reference = Xobs if cols is None else Xobs[:, cols]

    def f(X, y, y_index):
        return stat(X if cols is None else X[:, cols], y_index, n_classes, observed=reference)

    return f


def _user(stat):
    def f(X, y, y_index):
        return stat(X, y)

    return f


def ppc(estimator, X, y, statistics=None, *, n_draws=500, random_state=None, keep_replicates="auto"):
    r"""Posterior predictive check of a fitted estimator on its training data.

    Draws ``n_draws`` replicated data sets :math:`X^{rep}` from the posterior predictive
    given the observed labels (see the module docstring), computes each statistic on
    the observed and the replicated data, and its posterior predictive p-values.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel (``estimator.fitted_model()``)
        Any one-family estimator or :class:`~bayesnb.MixedNB`.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The training rows (made dense, as every replicate is: for a large vocabulary,
        check a subset of rows or columns).
    y : array-like of shape (n_samples,)
        Their labels (the replicates keep them).
    statistics : None, str, callable, sequence or dict, optional
        None: every built-in statistic of the model's families (see the module
        docstring). A name or sequence of names: those built-ins. A callable
        ``stat(X, y) -> float or ndarray`` of the dense validated rows (category codes for
        categorical features, NaN at unobserved entries, shape (n_samples, n_features))
        and the labels; a dict maps names to built-in names or callables.
    n_draws : int, default=500
        Replicated data sets.
    random_state : int, RandomState, Generator, jax key or None
    keep_replicates : bool or "auto", default="auto"
        Keep the replicated data sets (needed by :meth:`PPCResult.to_inference_data`);
        "auto" keeps them up to 2**24 numbers in all.

    Returns
    -------
    PPCResult

    Raises
    ------
    ValueError
        If ``X`` and ``y`` do not fit the estimator, a statistic is unknown, or a
        callable's result changes shape between data sets.

    Examples
    --------
    Counts whose spread no Poisson rate can produce (in each class half the rows 0, half 8):

    >>> import numpy as np
    >>> import bayesnb
    >>> y = np.repeat([0, 1], 20)
    >>> X = np.tile([[0], [8]], (20, 1))
    >>> res = bayesnb.ppc(bayesnb.PoissonNB().fit(X, y), X, y, statistics=["length_dispersion"],
    ...                   n_draws=200, random_state=0)
    >>> res.observed["length_dispersion"].round(2).tolist(), res.p_value["length_dispersion"].tolist()
    ([4.21, 4.21], [0.0, 0.0])
    >>> ax = res.plot("length_dispersion")  # observed value over the replicated histogram
    """
    n_draws = check_n_draws(n_draws, "n_draws")
    fitted = _fitted.as_fitted(estimator)  # the estimator is read here, once
    Xobs = _observed(fitted, X)
    y, classes = np.asarray(y), np.asarray(fitted.classes)
    y_index = class_index(y, classes, n_rows=Xobs.shape[0])
    stats = _statistics(fitted, statistics, classes.size, Xobs)
    if not stats:
        raise ValueError("no statistic to check: pass statistics= (a callable stat(X, y) or a built-in name)")
    if keep_replicates == "auto":
        keep_replicates = n_draws * Xobs.size <= _KEEP_ENTRIES
    unobserved = np.isnan(Xobs)
    with _quiet():
        observed = {k: np.asarray(f(Xobs, y, y_index), dtype=np.float64) for k, f in stats.items()}
    replicated = {k: np.empty((n_draws,) + v.shape) for k, v in observed.items()}
    kept = np.empty((n_draws,) + Xobs.shape) if keep_replicates else None
    key = key_from_random_state(random_state)
    for d, Xrep in enumerate(_replicates(key, fitted, y_index, n_draws, Xobs.shape, unobserved)):
        with _quiet():
            for k, f in stats.items():
                value = np.asarray(f(Xrep, y, y_index), dtype=np.float64)
                if value.shape != observed[k].shape:
                    raise ValueError(
                        f"statistic {k!r} has shape {value.shape} on a replicated data set but "
                        f"{observed[k].shape} on the observed one"
                    )
                replicated[k][d] = value
        if kept is not None:
            kept[d] = Xrep
    p, upper = {}, {}
    for k in observed:
        p[k], upper[k] = p_values(observed[k], replicated[k])
    return PPCResult(observed, replicated, p, upper, Xobs, kept, y, classes)
