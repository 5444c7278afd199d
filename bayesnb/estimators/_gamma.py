"""The estimator front shared by the families with a Gamma prior on each rate (Poisson, exponential)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from bayesnb.core._validation import check_estimate
from bayesnb.core.empirical_bayes import is_evidence, maximize_evidence
from bayesnb.core.families import _gamma
from bayesnb.core.priors import Gamma
from bayesnb.estimators._base import BaseNB

__all__ = ["GammaRateNB"]


class GammaRateNB(BaseNB):
    """Base of estimators whose feature model has a rate per (class, feature) with a Gamma prior.

    The prior comes from ``alpha`` (shape) and ``beta`` (rate), or a whole ``prior``;
    any of them may be ``"evidence"``: the shape and / or rate are then learned by
    maximising the closed-form evidence
    (:func:`bayesnb.core.empirical_bayes.maximize_evidence` on the family's
    ``log_evidence``), starting from the values :meth:`_start_prior` gives. Subclasses
    set ``_family`` (whose module provides ``make_prior``) and ``_start_prior``.
    """

    def __init__(self, *, alpha, beta, prior, class_alpha, class_prior, fit_prior, estimate, missing, temperature=1.0, calibrate=None, **hyper):
        super().__init__(
            class_alpha=class_alpha, class_prior=class_prior, fit_prior=fit_prior, estimate=estimate, missing=missing,
            temperature=temperature,
            calibrate=calibrate,
            **hyper,
        )
        self.alpha = alpha
        self.beta = beta
        self.prior = prior

    def _start_prior(self, shape):  # pragma: no cover - abstract
        """The prior from ``alpha`` / ``beta``, a default standing for a value set to "evidence"."""
        raise NotImplementedError

    def _make_prior(self):
        shape = (self.classes_.size, self.n_features_in_)
        learn = [
            field
            for field, value in (("concentration", self.alpha), ("rate", self.beta))
            if is_evidence(self.prior) or is_evidence(value)
        ]
        if self.prior is not None and not is_evidence(self.prior):
            if learn:
                raise ValueError(
                    "alpha/beta='evidence' learn the Gamma prior that prior= replaces; pass "
                    "prior='evidence' (or prior=None)"
                )
            if not isinstance(self.prior, Gamma):
                raise TypeError(f"prior must be a bayesnb.core.priors.Gamma or None, got {type(self.prior).__name__}")
            return _gamma.make_prior(
                self.prior.concentration, self.prior.rate, shape, names=("prior.concentration", "prior.rate")
            )
        start = self._start_prior(shape)
        if not learn:
            return start
        prior, self.evidence_trace_["prior"] = maximize_evidence(self._family, start, self.stats_, learn)
        return prior

    @property
    def rate_(self):
        """ndarray of shape (n_classes, n_features): rates of the current ``estimate``."""
        check_is_fitted(self, "stats_")
        return np.exp(np.asarray(self._point(check_estimate(self.estimate)).log_rate))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags
