"""scikit-learn's naive Bayes, one import away: ``from bayesnb.sklearn import MultinomialNB``.

The four Bayesian estimators of this namespace, :class:`MultinomialNB`,
:class:`BernoulliNB`, :class:`CategoricalNB` and :class:`GaussianNB`, have scikit-learn's
constructor signatures and defaults exactly (``get_params``, ``clone``, grid searches and
pipelines see scikit-learn's parameters and nothing else), its fitted attributes, its
numbers (the discrete smoothing is the posterior mean under the ``alpha`` prior, the class
prior the maximum-likelihood frequencies unless given, Gaussian variances the
maximum-likelihood ones plus scikit-learn's ``epsilon_``) and its error messages. They
are subclasses of bayesnb's own estimators, fitted by the same core (statistics,
conjugate posterior, likelihood), so every Bayesian method of bayesnb works on the same
fitted object: :meth:`~bayesnb.MultinomialNB.log_evidence`,
:meth:`~bayesnb.MultinomialNB.predict_proba_interval`,
:meth:`~bayesnb.MultinomialNB.predict_proba_draws`,
:meth:`~bayesnb.MultinomialNB.sample_posterior`,
:meth:`~bayesnb.MultinomialNB.to_inference_data`, :meth:`~bayesnb.MultinomialNB.sample`,
``save`` (read back by :func:`bayesnb.load` as the same class of this namespace, once
``bayesnb.sklearn`` is imported) and :func:`bayesnb.compare` (which scores the model's
other estimates through ``to_bayesnb``).
The main namespace's own parameters (``estimate``, ``class_alpha``, ...) are not
parameters here (``set_params`` refuses them, as scikit-learn's would); ``to_bayesnb()``
turns a fitted estimator into the equivalent ``bayesnb`` one, whose ``estimate`` can
be switched to the exact posterior predictive.

``ComplementNB`` is **not Bayesian**: it is scikit-learn's own
``sklearn.naive_bayes.ComplementNB``, the very same class, re-exported so that replacing
``from sklearn.naive_bayes import ...`` by ``from bayesnb.sklearn import ...`` keeps
working for every class scikit-learn's module exports. Complement naive Bayes (Rennie et
al. 2003) weights each class by the statistics of all the *other* classes and normalises
the weights; it is a heuristic with no generative model, hence no posterior, evidence or
intervals. It is not a bayesnb family (not in :mod:`bayesnb.core.families`), has none of
the Bayesian methods, and ``save`` / :func:`bayesnb.compare` do not take it (pass it to
``compare`` as one of its ``baselines``).

``bayesnb.sklearn`` is imported on demand (``import bayesnb`` does not load it) and never
shadows scikit-learn itself: bayesnb's modules import ``sklearn`` absolutely.
"""

from sklearn.naive_bayes import ComplementNB

from bayesnb.sklearn._naive_bayes import BernoulliNB, CategoricalNB, GaussianNB, MultinomialNB

__all__ = ["BernoulliNB", "CategoricalNB", "ComplementNB", "GaussianNB", "MultinomialNB"]
