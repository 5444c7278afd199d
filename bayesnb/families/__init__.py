"""Conjugate families: one module each, all with the same pure functions.

``posterior(prior, stats)``, ``point(prior, stats, kind)``, ``log_likelihood(params, X)``,
``log_predictive(posterior, X)``, ``log_evidence(prior, stats)`` and
``sample(key, posterior, n)``. ``point`` takes the prior and the statistics rather than
the posterior because the maximum-likelihood estimate is a function of the statistics
alone.
"""

from . import bernoulli, categorical, multinomial

__all__ = ["bernoulli", "categorical", "multinomial"]
