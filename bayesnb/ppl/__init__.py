"""The probabilistic-programming layer: numpyro models of the families, the NUTS
cross-check, simulation-based calibration and the export of posteriors to arviz.

* :mod:`bayesnb.ppl.models`: each fitted model as a numpyro program (rows or sufficient
  statistics), with its plate diagram.
* :mod:`bayesnb.ppl.mcmc`: NUTS on that program and the cross-check against the closed form.
* :mod:`bayesnb.ppl.sbc`: simulation-based calibration of the closed-form posterior.
* :mod:`bayesnb.ppl.export`: ``arviz.InferenceData`` from the closed-form posterior.
* :mod:`bayesnb.ppl.compile`: a user's numpyro model of the naive-Bayes shape recognised
  as the registered families (:func:`bayesnb.compile_model` makes the estimator), and
  NUTS on that model as written for the cross-check.

Functions here read an estimator's public fitted pytrees (``prior_``, ``stats_``,
``posterior_``, ``classes_``); they never import :mod:`bayesnb.estimators`.
"""
