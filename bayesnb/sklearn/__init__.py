"""scikit-learn's naive Bayes, one import away: ``from bayesnb.sklearn import MultinomialNB``.

The four estimators of this namespace, :class:`MultinomialNB`, :class:`BernoulliNB`,
:class:`CategoricalNB` and :class:`GaussianNB`, have scikit-learn's constructor
signatures and defaults exactly (``get_params``, ``clone``, grid searches and pipelines
see scikit-learn's parameters and nothing else), its fitted attributes, its numbers
(the discrete smoothing is the posterior mean under the ``alpha`` prior, the class
prior the maximum-likelihood frequencies unless given, Gaussian variances the
maximum-likelihood ones plus scikit-learn's ``epsilon_``) and its error messages. They
are subclasses of bayesnb's own estimators, fitted by the same core (statistics,
conjugate posterior, likelihood), so every Bayesian method of bayesnb works on the same
fitted object: :meth:`~bayesnb.MultinomialNB.log_evidence`,
:meth:`~bayesnb.MultinomialNB.predict_proba_interval`,
:meth:`~bayesnb.MultinomialNB.predict_proba_draws`,
:meth:`~bayesnb.MultinomialNB.sample_posterior`,
:meth:`~bayesnb.MultinomialNB.to_inference_data`, :meth:`~bayesnb.MultinomialNB.sample`.
The main namespace's own parameters (``estimate``, ``class_alpha``, ...) are not
parameters here (``set_params`` refuses them, as scikit-learn's would); ``to_bayesnb()``
turns a fitted estimator into the equivalent ``bayesnb`` one, whose ``estimate`` can
be switched to the exact posterior predictive.

``bayesnb.sklearn`` is imported on demand (``import bayesnb`` does not load it) and never
shadows scikit-learn itself: bayesnb's modules import ``sklearn`` absolutely.
"""

from bayesnb.sklearn._naive_bayes import BernoulliNB, CategoricalNB, GaussianNB, MultinomialNB

__all__ = ["BernoulliNB", "CategoricalNB", "GaussianNB", "MultinomialNB"]
