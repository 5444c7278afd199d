"""Warnings and errors raised by bayesnb."""

__all__ = ["ModelFileError", "ZeroLikelihoodWarning"]


class ZeroLikelihoodWarning(UserWarning):
    """A row has probability zero under every class for the chosen estimate.

    This happens with ``estimate="mle"`` (or ``"map"`` with unit concentrations) when a
    row contains a feature value never seen with any class. The class posterior is then
    0/0; bayesnb returns the class proportions for such rows (the row carries no usable
    evidence) and warns, rather than returning NaN.
    """


class ModelFileError(ValueError):
    """A file given to :func:`bayesnb.load` is not a readable bayesnb model.

    Raised for a file that is not a bayesnb model (another program's ``.npz``, a pickle,
    text), one that is truncated or corrupted, one whose checksum does not match its
    contents (modified after it was written), one written by a newer format version, and
    one whose saved state does not make a model. A ``ValueError``, so generic handlers
    catch it.
    """
