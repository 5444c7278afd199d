"""Warnings and errors raised by bayesnb."""

__all__ = ["ApproximateLOOWarning", "EvidenceWarning", "ModelCompileError", "ModelFileError", "ZeroLikelihoodWarning"]


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

    Examples
    --------
    >>> import io
    >>> import bayesnb
    >>> try:
    ...     bayesnb.load(io.BytesIO(b"not a model"))
    ... except bayesnb.ModelFileError as err:
    ...     print(str(err)[:57])
    not a bayesnb model file: it is not a ZIP/.npz archive (i
    >>> issubclass(bayesnb.ModelFileError, ValueError)
    True
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

    Examples
    --------
    Two classes of exactly equal size are more even than multinomial sampling makes
    them, so the evidence for the class-proportion concentration increases without
    limit:

    >>> import warnings
    >>> from bayesnb import EvidenceWarning, MultinomialNB
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     clf = MultinomialNB(class_alpha="evidence").fit([[3, 0], [2, 1], [0, 3], [1, 2]], [0, 0, 1, 1])
    >>> [w.category is EvidenceWarning for w in caught]
    [True]
    >>> clf.class_alpha_ >= 1e8, clf.evidence_trace_["class_alpha"].at_bound.tolist()
    (True, [[True]])
    """


class ApproximateLOOWarning(UserWarning):
    """:func:`bayesnb.loo` of a model that learned more than its sufficient statistics from the rows.

    The closed-form leave-one-out removes each row from the sufficient statistics and
    holds everything else at its fitted value. Where that value was itself learned from
    all the rows (``alpha="evidence"`` and the other empirical-Bayes hyperparameters,
    ``class_alpha="evidence"``, the data-scaled default priors of ``GaussianNB``,
    ``GaussianBayesClassifier`` and ``ExponentialNB``, a temperature chosen with
    ``temperature="loo"``, hyperparameters integrated by NUTS), a refit without the row
    would learn it again, so the terms approximate leave-one-out (the left-out row still
    shaped what was learned; on scikit-learn's breast-cancer data GaussianNB's default
    prior moves the terms by 1e-5 nats per row on average, see :func:`bayesnb.loo`).
    The warning names each cause; the returned ``ELPDData`` has ``approximate=True``,
    the causes in ``approximate_reason``, and ``warning=True`` (the flag
    ``arviz.compare`` shows). Give the hyperparameters explicitly for an exact
    leave-one-out of that model (see ``estimator.loo_approximations()``).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import bayesnb
    >>> X = np.array([[0.1, 1.0], [0.3, 1.4], [0.2, 1.1], [2.0, 0.2], [2.4, 0.1], [2.2, 0.4]])
    >>> y = [0, 0, 0, 1, 1, 1]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = bayesnb.loo(bayesnb.GaussianNB().fit(X, y), X, y)  # default prior: scaled to X
    >>> [w.category is bayesnb.ApproximateLOOWarning for w in caught], bool(res["approximate"])
    ([True], True)
    """


class ModelCompileError(ValueError):
    """A numpyro model that :func:`bayesnb.compile_model` cannot turn into closed forms.

    Raised for a site whose likelihood is not conjugate to its prior (a Normal prior on
    a Bernoulli's logit, a Gamma prior on a Normal's scale), for a dependency outside
    the naive-Bayes shape (a feature that depends on another feature, a latent variable
    per row, a parameter shared by the classes where the family has one per class), and
    for a hyperparameter given a distribution where the estimator takes none. The
    message names the site and the reason, and points at NUTS on the model as it is.
    A ``ValueError``, so generic handlers catch it.

    Parameters
    ----------
    site : str
        The numpyro site at fault.
    reason : str
        Why it cannot be compiled.

    Attributes
    ----------
    site : str
    reason : str

    Examples
    --------
    >>> from bayesnb.exceptions import ModelCompileError
    >>> err = ModelCompileError("x", "its logit has a Normal prior")
    >>> err.site, isinstance(err, ValueError)
    ('x', True)
    >>> print(str(err).split(";")[0])
    cannot compile site 'x': its logit has a Normal prior
    """

    def __init__(self, site, reason):
        self.site = site
        self.reason = reason
        super().__init__(
            f"cannot compile site {site!r}: {reason}; bayesnb compiles naive Bayes models whose "
            "(prior, likelihood) pairs are conjugate (see the page 'Compiling numpyro models'). "
            "To fit this model as it is, run NUTS on it: numpyro.infer.MCMC(numpyro.infer.NUTS(model), ...) "
            "(bayesnb.ppl.mcmc runs and checks NUTS for the models it compiles)"
        )

    def __reduce__(self):
        return type(self), (self.site, self.reason)
