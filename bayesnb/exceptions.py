"""Warnings and errors raised by bayesnb."""

__all__ = ["EvidenceWarning", "ModelFileError", "ZeroLikelihoodWarning"]


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
