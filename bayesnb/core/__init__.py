"""The core layer: the mathematics of conjugate naive Bayes, as pure functions on pytrees.

* :mod:`bayesnb.core.families`: the :class:`~bayesnb.core.families.Family` protocol, the
  registry and one module per conjugate family (statistics, posterior, point estimates,
  likelihood, exact predictive, evidence, draws, numpyro model).
* :mod:`bayesnb.core.priors` and :mod:`bayesnb.core.stats`: the prior and
  sufficient-statistics pytrees the families read and write.
* :mod:`bayesnb.core.class_prior`: the Dirichlet-categorical model of the class labels.
* :mod:`bayesnb.core.missing`: the missing-value policies (which entries are masked).
* :mod:`bayesnb.core.empirical_bayes`: hyperparameters by maximising a family's evidence.
* :mod:`bayesnb.core.kernels`: the data-touching products on dense and sparse input.

Nothing here holds state or imports a layer above it (estimators, ppl, analysis, io,
scale, cli).
"""
