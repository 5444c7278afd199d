r"""Exact leave-one-out expected log predictive density, as an arviz ``ELPDData``.

:func:`loo` turns the closed-form leave-one-out predictives of
:mod:`bayesnb.analysis.loo` (every training row's sufficient statistics downdated out of
``stats_``, no refit; what a refit would re-learn from the rows re-learned without the
row where the estimator does so, otherwise labelled approximate) into the object that
``arviz.loo`` returns, so that ``arviz.compare`` ranks bayesnb models beside any other
model whose pointwise leave-one-out log predictive densities are known. It is the
installed arviz's native ``ELPDData``: on arviz 0.x a Series with ``elpd_loo`` and
``loo_i``, on arviz 1.x a dataclass with ``elpd`` and ``elpd_i``; :func:`elpd_values`
reads either (and ``az.loo``'s) under one set of names, and bayesnb's own code reads
them through it:

.. math::

    \widehat{\mathrm{elpd}}_{\mathrm{loo}} = \sum_i \log p(y_i \mid x_i, D_{-i})
    \quad\text{(``kind="conditional"``)}, \qquad
    \sum_i \log p(x_i, y_i \mid D_{-i}) \quad\text{(``kind="joint"``)}.

Nothing is estimated: where PSIS-LOO (``arviz.loo`` on posterior draws) approximates
each term by importance sampling and flags rows whose Pareto :math:`\hat k` is large,
these terms are exact, equal to brute-force refits without each row (see the guide page
"Exact leave-one-out and posterior predictive checks"), except where the estimator
learned its prior or temperature from all the rows: :func:`loo` then says so (see its
"Exact and approximate" section).

Examples
--------
>>> import numpy as np
>>> from bayesnb import MultinomialNB
>>> X = np.array([[3, 0, 1], [4, 1, 0], [0, 3, 1], [1, 4, 1], [2, 2, 0], [0, 2, 2]])
>>> y = np.array([0, 0, 1, 1, 0, 1])
>>> clf = MultinomialNB().fit(X, y)
>>> res = elpd_values(loo(clf, X, y))
>>> res.pointwise.shape, bool(np.isclose(res.elpd, res.pointwise.sum()))
((6,), True)
>>> # the same as refitting without each row (the Dirichlet prior does not depend on the data)
>>> refit = [MultinomialNB().fit(np.delete(X, i, 0), np.delete(y, i)).predict_log_proba(X[i:i + 1])[0, y[i]]
...          for i in range(6)]
>>> bool(np.allclose(res.pointwise.values, refit, atol=1e-10))
True
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from bayesnb.analysis import _arviz
from bayesnb.analysis import loo as _loo
from bayesnb.core import _fitted
from bayesnb.exceptions import ApproximateLOOWarning

__all__ = ["KINDS", "ELPDValues", "elpd_data", "elpd_values", "loo"]

#: What each pointwise term predicts.
KINDS = ("conditional", "joint")


class ELPDValues(NamedTuple):
    r"""The entries of an ``ELPDData`` under names that do not depend on the arviz version.

    Attributes
    ----------
    elpd : float
        The sum of the pointwise values (arviz 0.x ``elpd_loo``, 1.x ``elpd``).
    se : float
        Its standard error.
    p : float
        Effective number of parameters (0.x ``p_loo``, 1.x ``p``).
    pointwise : xarray.DataArray of shape (n_data_points,)
        The pointwise values (0.x ``loo_i``, 1.x ``elpd_i``).
    n_data_points, n_samples : int
    warning : bool
    scale : str
    approximate : bool
        bayesnb's: True where the values are not exact leave-one-out (False for a result
        of ``az.loo``, which says so through ``warning`` and its Pareto :math:`\hat k`).
    approximate_reason : str
        bayesnb's: the causes, ``""`` when exact.
    """

    elpd: float
    se: float
    p: float
    pointwise: object
    n_data_points: int
    n_samples: int
    warning: bool
    scale: str
    approximate: bool
    approximate_reason: str


def elpd_values(result):
    """Read an ``ELPDData`` of either arviz line: :func:`loo`'s, :func:`elpd_data`'s or ``az.loo``'s.

    The one accessor bayesnb's code and documentation use: arviz 0.x names the entries
    ``elpd_loo``, ``p_loo``, ``loo_i``, arviz 1.x ``elpd``, ``p``, ``elpd_i``.

    Parameters
    ----------
    result : arviz.ELPDData

    Returns
    -------
    ELPDValues

    Examples
    --------
    >>> import numpy as np
    >>> v = elpd_values(elpd_data(np.log([0.5, 0.25, 0.8])))
    >>> round(v.elpd, 4), v.n_data_points, v.pointwise.dims, v.approximate
    (-2.3026, 3, ('observation',), False)
    """
    fields = _arviz.elpd_fields(result)

    def extra(name, default):
        try:
            return result[name]
        except (KeyError, AttributeError):
            return default

    return ELPDValues(
        elpd=float(fields["elpd"]), se=float(fields["se"]), p=float(fields["p"]), pointwise=fields["pointwise"],
        n_data_points=int(fields["n_data_points"]), n_samples=int(fields["n_samples"]),
        warning=bool(fields["warning"]), scale=str(fields["scale"]), approximate=bool(extra("approximate", False)),
        approximate_reason=str(extra("approximate_reason", "")),
    )


def elpd_data(pointwise, *, p_loo=np.nan, n_samples=0, dim="observation", coords=None, approximate=()):
    r"""The installed arviz's ``ELPDData`` (``az.loo``'s result, on the log scale) from pointwise values.

    The builder shared by :func:`loo` and by callers that have leave-one-out log
    predictive densities from elsewhere (e.g. brute-force refits of another classifier),
    so that ``arviz.compare`` takes them all.

    Parameters
    ----------
    pointwise : array-like of shape (n_data_points,)
        :math:`\log p(\text{row}_i \mid D_{-i})`.
    p_loo : float, optional
        Effective number of parameters, :math:`\mathrm{lppd} - \widehat{\mathrm{elpd}}_{\mathrm{loo}}`
        (NaN where unknown).
    n_samples : int, optional
        Posterior draws the values were computed from (0: closed form, no draws).
    dim : str, optional
        Name of the dimension of the pointwise values.
    coords : sequence of length n_data_points, optional
        Its coordinates (default ``0 .. n-1``).
    approximate : sequence of str, optional
        Why the values are not exact leave-one-out (one sentence each); empty: exact.

    Returns
    -------
    arviz.ELPDData
        The installed arviz's (read it with :func:`elpd_values`): the sum (``elpd_loo``
        on arviz 0.x, ``elpd`` on 1.x), ``se`` (:math:`\sqrt{n\,\mathrm{Var}(\text{loo}_i)}`,
        as ``az.loo``), the effective number of parameters (``p_loo`` / ``p``),
        ``n_samples``, ``n_data_points``, ``warning`` (True where a pointwise value is
        not finite: a row impossible under the model; and where the values are
        approximate), the pointwise values (``loo_i`` / ``elpd_i``, an
        ``xarray.DataArray``), ``scale`` (``"log"``), and bayesnb's ``approximate``
        (bool) and ``approximate_reason`` (the reasons joined by ``"; "``, ``""`` when
        exact), read as ``result["approximate"]`` on both.

    Raises
    ------
    ValueError
        If ``pointwise`` is not one-dimensional and non-empty, or holds NaN or +inf.
    """
    import xarray as xr

    values = np.asarray(pointwise, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"pointwise values must be a non-empty 1-d array, got shape {values.shape}")
    if np.isnan(values).any() or np.isposinf(values).any():
        bad = int(np.flatnonzero(np.isnan(values) | np.isposinf(values))[0])
        raise ValueError(f"pointwise log predictive density {values[bad]} at row {bad} is not a log probability")
    coords = np.arange(values.size) if coords is None else np.asarray(coords)
    pointwise = xr.DataArray(values, dims=(dim,), coords={dim: coords})
    reasons = [str(r) for r in approximate]
    return _arviz.elpd_data(
        pointwise, p=p_loo, n_samples=n_samples, warning=not bool(np.isfinite(values).all()) or bool(reasons),
        extra={"approximate": bool(reasons), "approximate_reason": "; ".join(reasons)},
    )


def loo(estimator, X, y, kind="conditional", *, sample_weight=None):
    r"""Exact leave-one-out of a fitted bayesnb estimator on its training data, as ``az.loo`` returns it.

    Row :math:`i`'s statistics are removed from the fitted ``stats_`` (its whole weight,
    where ``sample_weight`` was given) and its label and features are predicted by the
    model fitted on the rest, :math:`D_{-i}`: no refit, :math:`O(NF)` for the families
    whose classes share no parameter (a downdate per row for a shared covariance). The
    terms are those of :meth:`loo_terms <bayesnb.MultinomialNB.loo_terms>`
    (:mod:`bayesnb.analysis.loo`) under the estimator's ``estimate``: with the default
    ``"predictive"`` the exact posterior predictive, otherwise the plug-in of the point
    estimate of the downdated posterior.

    **Exact and approximate.** The terms equal brute-force refits without each row
    (``clone(estimator).fit`` on the other rows, then its ``predict_log_proba`` /
    ``predict_joint_log_proba`` of the row; to 1e-8 in
    ``tests/analysis/test_loo_exact_refits.py``, every family, every estimate, both
    kinds, with weights) wherever the prior does not depend on the rows: the default
    priors of ``MultinomialNB``, ``BernoulliNB``, ``CategoricalNB`` and ``PoissonNB``,
    any prior given explicitly, and every ``estimate="mle"`` (which reads no prior).
    What a refit learns again from the rows is learned again here, still exactly:
    ``PolyaNB``'s mean (smoothed from its class's word totals) and precision (with
    ``precision="evidence"``, re-learned per left-out row by Newton steps on its
    evidence, warm-started at ``precision_``: 0.05 s for 500 SMS messages, 0.2 s for
    2,000, 0.7 s for all 5,574, 7 s for 2,203 long 20 Newsgroups posts, against
    refits of 0.04-0.4 s each), ``CategoricalNB``'s table of categories (learned from
    the largest code seen), ``GaussianNB``'s "mle" variance floor (scaled to the pooled
    variances). Where something else was learned from all the rows and is held at its
    fitted value, the terms approximate leave-one-out, and the result says so
    (``approximate=True``, the causes in ``approximate_reason``, ``warning=True`` as
    ``arviz.compare`` shows it, and an :class:`~bayesnb.ApproximateLOOWarning`; the
    causes are ``estimator.loo_approximations(kind)``):

    - hyperparameters learned by their evidence (``alpha="evidence"``,
      ``prior="evidence"``, ``class_alpha="evidence"``; not PolyaNB's precision);
    - the data-scaled default priors (``GaussianNB`` and ``GaussianBayesClassifier``
      with ``prior=None``, ``ExponentialNB`` with ``beta=None``), also as blocks of a
      :class:`~bayesnb.MixedNB`;
    - hyperparameters integrated by NUTS (hyperpriors: the terms hold their mode);
    - ``temperature="loo"`` (``kind="conditional"`` only: the joint is untempered).

    How far off, against the brute-force refits (measured once; per-row mean
    :math:`|\text{closed form} - \text{refit}|`, and the difference of the sums):
    ``GaussianNB()`` on scikit-learn's breast-cancer data (569 rows, 30 features)
    1.2e-5 nats (max 4.3e-3; elpd -411.953 against -411.947) conditional, 3.5e-5
    (elpd +0.019) joint; ``GaussianBayesClassifier(covariance="full")`` there 1.6e-4
    (elpd +0.034) and 0.011 (max 1.39, elpd +5.2); ``GaussianNB(prior="evidence")``
    2.9e-4 (elpd +0.025) and 1.3e-3 (elpd +0.74); ``MultinomialNB(alpha="evidence")``
    on the first 500 SMS messages 1.7e-4 (max 0.018, elpd +0.065) and 5.7e-3 (elpd
    +2.8); ``MultinomialNB(class_alpha="evidence")`` there 1.6e-6 and 1.8e-5. Small
    against the differences between models that ``az.compare`` usually ranks, but not
    leave-one-out: give the hyperparameters explicitly for an exact one.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel
        Any estimator with ``loo_terms`` (every family and :class:`~bayesnb.MixedNB`),
        read once; its pytree (``estimator.fitted_model()``) carries the same terms.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The training rows (their statistics are in ``stats_``).
    y : array-like of shape (n_samples,)
        Their labels.
    kind : {"conditional", "joint"}, default="conditional"
        ``"conditional"``: :math:`\log p(y_i \mid x_i, D_{-i})`, the classifier's
        leave-one-out log score (tempered by ``temperature_`` as ``predict_log_proba``
        is); ``"joint"``: :math:`\log p(x_i, y_i \mid D_{-i})`, the generative model's
        (untempered: the model as written; for the multinomial family the log
        probability of the token sequence, as everywhere in bayesnb).
    sample_weight : array-like of shape (n_samples,), optional
        The weights the estimator was fitted with. Each row is left out whole; its
        pointwise value is not multiplied by its weight (the elpd sums rows, as
        arviz does).

    Returns
    -------
    arviz.ELPDData
        The installed arviz's, as :func:`elpd_data` builds it (read it with
        :func:`elpd_values`): the elpd, ``se``, the effective number of parameters,
        ``n_samples`` (0: closed form, no posterior draws), ``n_data_points``,
        ``warning``, the pointwise values (``xarray.DataArray`` with dim
        ``observation``, the rows of ``X``), ``scale`` ``"log"``. The effective number
        of parameters (``p_loo`` on arviz 0.x, ``p`` on 1.x) is
        :math:`\sum_i \log p(\cdot_i \mid D) - \widehat{\mathrm{elpd}}_{\mathrm{loo}}`,
        the in-sample predictive (same ``kind`` and ``estimate``) minus the leave-one-out
        one, the effective number of parameters of Vehtari, Gelman & Gabry (2017).
        ``warning`` is True where a row is impossible without itself (a ``-inf`` term,
        e.g. an MLE that never saw the row's word in its class, or a row impossible
        under every class); such a term is ``-inf``, not the class proportions that
        ``predict`` falls back to, and ``se`` is then NaN. ``warning`` is also True
        where the terms are approximate: ``approximate`` (bool) and
        ``approximate_reason`` (the causes, ``""`` when exact) say so.

    Warns
    -----
    ApproximateLOOWarning
        Where the terms are approximate (see above), naming each cause.

    Raises
    ------
    ValueError
        If ``kind`` is unknown, ``X``, ``y`` do not fit the estimator (see
        ``loo_terms``), or they are not the rows it was fitted on: their sufficient
        statistics (with ``sample_weight``) differ from those it holds (other rows, a
        part of them, other labels or weights; rows in another order are the same rows).
    TypeError
        If ``estimator`` has no exact leave-one-out (no ``loo_terms``).

    See Also
    --------
    bayesnb.analysis.loo : the downdate of the sufficient statistics.
    elpd_data : the same object from pointwise values computed elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> import bayesnb
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 2)) + np.repeat([[0, 0], [2, 1]], 15, axis=0)
    >>> y = np.repeat([0, 1], 15)
    >>> from bayesnb.core.priors import NormalInverseGamma
    >>> from bayesnb.analysis.elpd import elpd_values
    >>> diag = elpd_values(bayesnb.loo(bayesnb.GaussianNB(prior=NormalInverseGamma(0.0, 0.1, 2.0, 1.0)).fit(X, y), X, y))
    >>> diag.warning, diag.approximate, diag.n_data_points, diag.scale
    (False, False, 30, 'log')

    GaussianNB's default prior is scaled to ``X``, and not re-scaled without each row:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     default = elpd_values(bayesnb.loo(bayesnb.GaussianNB().fit(X, y), X, y))
    >>> default.approximate, default.warning, default.approximate_reason[:33]
    (True, True, 'prior=None: the default prior is ')
    >>> [w.category.__name__ for w in caught]
    ['ApproximateLOOWarning']
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(estimator, _fitted.FittedModel) and not callable(getattr(estimator, "loo_terms", None)):
        raise TypeError(f"{type(estimator).__name__} has no exact leave-one-out (it has no loo_terms)")
    fitted = _fitted.as_fitted(estimator)  # the estimator is read once, here
    terms = fitted.loo_terms(X, y, sample_weight=sample_weight)
    # Each row is left out of the statistics the model holds: rows it was not fitted on
    # (other rows, a part of them, other weights or labels) would give numbers that are
    # no leave-one-out of anything.
    if not _fitted.fitted_on(fitted, fitted.validate(X), terms.y_index, sample_weight):
        raise ValueError(
            f"bayesnb.loo: this {fitted.name} was not fitted on these data: the sufficient statistics of X, y (and "
            "sample_weight) differ from those it holds. Pass the rows it was fitted on (all of them, with the same "
            "weights): exact leave-one-out leaves each of them out of those statistics."
        )
    reasons = _fitted.loo_approximations(fitted, kind)
    if reasons:
        warnings.warn(
            f"bayesnb.loo of this {fitted.name} is approximate, not leave-one-out refits: "
            + "; ".join(reasons)
            + ". Its ELPDData has approximate=True and warning=True.",
            ApproximateLOOWarning,
            stacklevel=2,
        )
    rows = np.arange(terms.y_index.size)
    if kind == "conditional":
        temperature = _fitted.temperature(fitted)
        pointwise = _loo.conditional(terms, temperature)
        # conditional() gives a row impossible under every class its class proportions
        # (predict's fallback); as a log score that row is impossible: -inf.
        scores = terms.class_log + terms.feature_log / temperature
        pointwise = np.where(np.isneginf(scores.max(axis=1)), -np.inf, pointwise)
        # The in-sample score is that of the model as written (tempered), as the
        # leave-one-out terms are: normalised from the joint, not predict_log_proba, which
        # applies a calibration map (calibrate="loo") fitted to these very terms.
        from bayesnb.core._normalize import log_normalize

        joint = np.asarray(fitted.joint_log_proba(X), dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_proba = log_normalize(joint, np.asarray(_fitted.class_log_prior(fitted), dtype=np.float64))[0]
        in_sample = log_proba[rows, terms.y_index]
    else:
        pointwise = _loo.joint(terms)
        # predict_joint_log_proba divides the feature part by temperature_; the joint of the
        # model as written multiplies it back.
        # The joint first: it refuses an estimate with no mode in the words of the model's parameters.
        tempered = np.asarray(fitted.joint_log_proba(X), dtype=np.float64)[rows, terms.y_index]
        class_log = np.asarray(_fitted.class_log_prior(fitted), dtype=np.float64)
        cls = class_log[terms.y_index]
        with np.errstate(invalid="ignore"):
            in_sample = cls + (tempered - cls) * _fitted.temperature(fitted)
    with np.errstate(invalid="ignore"):
        p_loo = float(in_sample.sum() - pointwise.sum())
    if not np.isfinite(p_loo):
        p_loo = np.nan
    coords = getattr(X, "index", None)
    return elpd_data(pointwise, p_loo=p_loo, coords=None if coords is None else list(coords), approximate=reasons)
