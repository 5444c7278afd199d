"""The input/output layer: model files and data sets.

* :mod:`bayesnb.io.persistence`: the ``.npz`` model format (:func:`bayesnb.load`), with
  registries of estimator classes and pytree types so that it never imports an estimator.
* :mod:`bayesnb.io.datasets`: readers of the bundled and shared corpora and of CSV/TSV tables.
"""
