"""Warnings and errors raised by bayesnb."""

__all__ = ["EvidenceWarning", "ModelFileError", "ZeroLikelihoodWarning"]


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


class ModelFileError(ValueError):
    """A file given to :func:`bayesnb.load` is not a readable bayesnb model.

    Raised for a file that is not a bayesnb model (another program's ``.npz``, a pickle,
    text), one that is truncated or corrupted, one whose checksum does not match its
    contents (modified after it was written), one written by a newer format version, and
    one whose saved state does not make a model. A ``ValueError``, so generic handlers
    catch it.
    """


class EvidenceWarning(UserWarning):
    """An empirical-Bayes optimisation of the log evidence ended on a bound or did not converge.

    ``alpha="evidence"`` (and its siblings) maximise the log marginal likelihood over
    log-hyperparameters kept within ``[1e-8, 1e8]``. When the evidence keeps increasing
    toward a bound (e.g. ``class_alpha`` grows without limit when the class counts are
    more even than multinomial sampling would make them, or a per-feature concentration
    shrinks to zero for a feature never observed), the optimum is at infinity or zero and
    the bound is returned; the fitted ``evidence_trace_`` records which parameters stopped
    there.
    """
