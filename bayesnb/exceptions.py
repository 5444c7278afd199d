"""Warnings and errors raised by bayesnb."""

__all__ = ["ZeroLikelihoodWarning"]


class ZeroLikelihoodWarning(UserWarning):
    """A row has probability zero under every class for the chosen estimate.

    This happens with ``estimate="mle"`` (or ``"map"`` with unit concentrations) when a
    row contains a feature value never seen with any class. The class posterior is then
    0/0; bayesnb returns the class proportions for such rows (the row carries no usable
    evidence) and warns, rather than returning NaN.

    Examples
    --------
    >>> import warnings
    >>> from bayesnb import MultinomialNB, ZeroLikelihoodWarning
    >>> clf = MultinomialNB(estimate="mle").fit([[1, 0], [3, 0], [2, 0]], [0, 1, 1])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     proba = clf.predict_proba([[0, 1]])  # word 1 was never seen in any class
    >>> [w.category is ZeroLikelihoodWarning for w in caught]
    [True]
    >>> proba.round(3).tolist()  # the maximum-likelihood class proportions 1/3, 2/3
    [[0.333, 0.667]]
    >>> clf.set_params(estimate="predictive").predict_proba([[0, 1]]).round(3).tolist()
    [[0.609, 0.391]]
    """
