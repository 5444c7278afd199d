"""Warnings and errors raised by bayesnb."""

__all__ = ["ZeroLikelihoodWarning"]


class ZeroLikelihoodWarning(UserWarning):
    """A row has probability zero under every class for the chosen estimate.

    This happens with ``estimate="mle"`` (or ``"map"`` with unit concentrations) when a
    row contains a feature value never seen with any class. The class posterior is then
    0/0; bayesnb returns the class proportions for such rows (the row carries no usable
    evidence) and warns, rather than returning NaN.
    """
