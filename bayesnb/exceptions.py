"""Warnings and errors raised by bayesnb."""

__all__ = ["EvidenceWarning", "ZeroLikelihoodWarning"]


class ZeroLikelihoodWarning(UserWarning):
    """A row has probability zero under every class for the chosen estimate.

    This happens with ``estimate="mle"`` (or ``"map"`` with unit concentrations) when a
    row contains a feature value never seen with any class. The class posterior is then
    0/0; bayesnb returns the class proportions for such rows (the row carries no usable
    evidence) and warns, rather than returning NaN.
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
