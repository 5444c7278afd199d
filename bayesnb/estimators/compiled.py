r"""Estimators from numpyro models: :func:`compile_model`.

:func:`bayesnb.ppl.compile.recognise_model` reads a numpyro model of the naive-Bayes
shape as the registered families (pure: sites, priors, columns, class prior); this
module turns what it read into an unfitted estimator that *is* the model's closed form:
the family's own estimator for a model with one observed feature site over every
column, a :class:`~bayesnb.MixedNB` of one block per site otherwise, each configured
with the prior read from the model (``alpha`` / ``prior`` / ``covariance`` as the
estimator takes them) and the class prior (``class_alpha``, or fixed ``class_prior``).
No math of its own: every estimate, the evidence, the draws, export, the cross-check
and SBC are the existing estimator's.

A hyperparameter that is a sample site of the model (a :class:`~bayesnb.ppl.compile.Hyperprior`)
is passed to the estimator as its numpyro distribution, in the form of the estimators'
integrated-hyperparameter API (``MultinomialNB(alpha=dist.Gamma(2.0, 1.0))``,
``class_alpha=dist.Exponential(1.0)``, fields of the ``prior`` pytrees as
distributions); an estimator that does not take a distribution for that parameter
(``_hyperprior_params``) is refused with :class:`~bayesnb.exceptions.ModelCompileError`
naming the site.
"""

from __future__ import annotations

import numpy as np

from bayesnb.estimators import estimator_for
from bayesnb.estimators.mixed import MixedNB
from bayesnb.exceptions import ModelCompileError

__all__ = ["compile_model"]


def _unwrap(value, found):
    """``value`` with every Hyperprior replaced by its distribution (collected in ``found``)."""
    from bayesnb.ppl.compile import Hyperprior

    if isinstance(value, Hyperprior):
        found.append(value)
        return value.distribution
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_unwrap(v, found) for v in value))
    if isinstance(value, tuple):
        return tuple(_unwrap(v, found) for v in value)
    return value


def _configured(estimator, params, site, what):
    """``estimator`` with ``params`` set; a hyperprior where it takes none is refused."""
    accepted = getattr(type(estimator), "_hyperprior_params", frozenset())
    plain = {}
    for name, value in params.items():
        found = []
        plain[name] = _unwrap(value, found)
        if found and name not in accepted:
            hyper = found[0]
            raise ModelCompileError(
                hyper.site,
                f"it is a hyperprior ({type(hyper.distribution).__name__}) on {what} of site {site!r}, given to "
                f"{type(estimator).__name__}'s {name!r}, which in this version takes no distribution (integrating "
                "a hyperparameter by NUTS on the collapsed model needs bayesnb's integrated-hyperparameter API); "
                "fix the hyperparameter to a value in the model",
            )
    return estimator.set_params(**plain)


def _site_estimator(spec):
    estimator = estimator_for(spec.family)
    try:
        params = type(estimator)._params_from_prior(spec.prior)
    except ValueError as err:
        raise ModelCompileError(spec.site, f"its prior is not one {type(estimator).__name__} takes: {err}") from None
    return _configured(estimator, params, spec.site, "the prior")


def _block_name(site, taken):
    # MixedNB block names may not contain "__" (it separates a block's parameters).
    name = site.replace("__", "_") or "block"
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def compile_model(model, X, y, **model_kwargs):
    """An unfitted estimator that is the closed form of a numpyro naive Bayes model.

    The model (``model(X, y, **model_kwargs)``: class proportions, per-class parameters
    in plates, labels ``y`` in a data plate, observed features given the label) is
    traced and each (prior, likelihood) pair recognised as a registered family
    (:func:`bayesnb.ppl.compile.recognise_model`): Dirichlet–Multinomial,
    Dirichlet–Categorical, Beta–Bernoulli, Gamma–Poisson, Gamma–Exponential,
    Normal-Inverse-Gamma–Normal, Normal-Inverse-Wishart–MultivariateNormal, and
    Dirichlet–Categorical (or fixed proportions) for the labels. Constants are read from
    the model; a hyperparameter that is a sample site is passed to the estimator as its
    distribution.

    Parameters
    ----------
    model : callable
        A numpyro model, called as ``model(X, y, **model_kwargs)``.
    X : array-like of shape (n_rows, n_features)
        Example data of the shape the model expects (e.g. the training rows): the model
        is run on it (and on probe data of the same columns) to be read; the estimator
        is fitted later, on any data.
    y : array-like of shape (n_rows,)
        Class indices ``0 .. n_classes - 1`` as the model takes them, or labels
        (strings, ...), given to the model as their indices in sorted order. The
        estimator is fitted with labels whose sorted order is the model's class order.
    **model_kwargs
        Further arguments of the model (hyperparameters, priors).

    Returns
    -------
    estimator : unfitted bayesnb estimator
        The family's estimator (e.g. ``BernoulliNB``) for one observed site over every
        column, else ``MixedNB`` with one block per observed site (named after it).

    Raises
    ------
    ModelCompileError
        Naming the site, for a model that is not conjugate or not of the naive-Bayes
        shape, or a hyperprior the estimator does not take.

    Examples
    --------
    >>> import numpy as np
    >>> import numpyro
    >>> import numpyro.distributions as dist
    >>> import bayesnb
    >>> def model(X, y):
    ...     pi = numpyro.sample("pi", dist.Dirichlet(np.ones(2)))
    ...     with numpyro.plate("class", 2, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
    ...         rate = numpyro.sample("rate", dist.Gamma(2.0, 1.0))
    ...     with numpyro.plate("data", X.shape[0], dim=-2):
    ...         y = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])[:, 0]
    ...         with numpyro.plate("columns", X.shape[1], dim=-1):
    ...             numpyro.sample("x", dist.Poisson(rate[y]), obs=X)
    >>> X, y = np.array([[3, 0], [4, 1], [0, 2], [1, 5]]), np.array([0, 0, 1, 1])
    >>> clf = bayesnb.compile_model(model, X, y)
    >>> type(clf).__name__, clf.prior.concentration[0].tolist()
    ('PoissonNB', [2.0, 2.0])
    >>> clf.fit(X, y).predict([[5, 0], [0, 4]]).tolist()
    [0, 1]
    """
    from bayesnb.ppl.compile import recognise_model

    compiled = recognise_model(model, X, y, **model_kwargs)
    labels = compiled.labels
    if labels.probs is not None:
        class_params = {"class_prior": labels.probs}
    else:
        class_params = {"class_alpha": labels.concentration, "class_prior": None, "fit_prior": True}
    sites = compiled.sites
    if len(sites) == 1 and np.array_equal(sites[0].columns, np.arange(compiled.n_features)):
        estimator = _site_estimator(sites[0])
    else:
        taken = set()
        blocks = [(_block_name(s.site, taken), _site_estimator(s), s.columns.tolist()) for s in sites]
        estimator = MixedNB(blocks=blocks, remainder="drop")
    return _configured(estimator, class_params, labels.site, "the class proportions")
