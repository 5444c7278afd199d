"""The analysis layer: what a researcher reads off a fitted posterior.

* :mod:`bayesnb.analysis.uncertainty`: credible intervals of probabilities and parameters,
  predictive draws, the most telling features.
* :mod:`bayesnb.analysis.comparison`: MLE, MAP, posterior mean and exact predictive side by
  side (:func:`bayesnb.compare`).
* :mod:`bayesnb.analysis.evidence`: Bayes factors between fitted models and feature
  selection by evidence.
* :mod:`bayesnb.analysis.loo` and :mod:`bayesnb.analysis.elpd`: exact leave-one-out by
  downdating sufficient statistics, and as an arviz ``ELPDData`` (:func:`bayesnb.loo`).
* :mod:`bayesnb.analysis.ppc`: posterior predictive checks (:func:`bayesnb.ppc`).
* :mod:`bayesnb.analysis.plots`: reliability diagrams, interval and feature plots.

Functions here take public fitted pytrees or predictions; they never import
:mod:`bayesnb.estimators`.
"""
