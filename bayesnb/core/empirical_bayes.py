r"""Empirical Bayes: prior hyperparameters that maximise the log evidence.

With conjugate priors the log marginal likelihood :math:`\log p(D \mid \eta)` of the
training data is a closed-form, differentiable function of the hyperparameters
:math:`\eta` (a Dirichlet/Beta concentration, the Normal-Inverse-Gamma
:math:`\kappa_0, b_0`) and of the sufficient statistics only. Type-II maximum likelihood
picks

.. math:: \hat\eta = \arg\max_\eta \log p(D \mid \eta)

(MacKay 1992; for the Dirichlet, Minka 2000, "Estimating a Dirichlet distribution").
Because the evidence depends on the data through the additive statistics, re-optimising
from the accumulated statistics after ``partial_fit`` gives what ``fit`` on all rows
gives, and a row of weight ``w`` counts like ``w`` copies.

How it is maximised: Newton's method on :math:`u = \log\eta` (positivity for free, and
the evidence is much closer to quadratic in :math:`\log\eta`), with the exact gradient
taken by ``jax.grad`` of the family's own ``log_evidence(prior, stats)`` through the
family protocol (:mod:`bayesnb.core.families.protocol`), or of its ``tied_log_evidence``
where the learned prior is tied and the family offers that faster form, in float64 —
there is no second copy of the evidence here, and nothing here asks which family it
holds. The optimum is where that exact gradient vanishes; the
curvature only sets the step, and is taken by central differences of the gradient
(compiling second derivatives of log-Gamma functions costs several times more, for
every new shape). The Hessian is never formed densely:

* ``"blocks"``: the evidence is a sum of independent terms, one per row of ``u`` (one
  block per class, per feature, or a single block); a perturbation of column ``i`` of
  every block at once gives column ``i`` of every block's :math:`k \times k` Hessian;
* ``"simplex"``: one Dirichlet over the coordinates of ``u`` (the multinomial's
  per-word :math:`\alpha_j`), where every coordinate is coupled through
  :math:`A = \sum_j \alpha_j`: the Hessian in :math:`\alpha` is a diagonal plus a constant
  (Minka's observation), so in :math:`u` it is
  :math:`\mathrm{diag}(d) + z\,\alpha\alpha^\top`, read off two gradient differences and
  inverted in :math:`O(n)` by the Sherman–Morrison formula.

Far from the optimum the evidence can be convex in :math:`\log\eta`: such directions get
the absolute value of their curvature. A step moves each :math:`\log\eta` by at most
:data:`MAX_STEP`, a backtracking line search makes every accepted step increase the
evidence, and a step that gains more than its quadratic model predicts (a slope that
flattens toward a supremum at zero or infinity, where Newton steps stay of size ~1) is
doubled while the evidence keeps increasing. The iteration stops after a Newton step
whose predicted gain is below :math:`10^{-12}` of the evidence (that step is exact to
working precision), when the step vanishes, or at ``max_iter``. Hyperparameters are kept within
[:data:`LOWER`, :data:`UPPER`]; when the evidence still increases toward a bound (the
supremum is at zero or infinity) the bound is returned and
:class:`bayesnb.exceptions.EvidenceWarning` says so.

Two entry points, both for any registered family. :func:`learn_prior` runs the Newton
iteration above over positive prior fields tied by a scope (one value for every cell,
one per class or one per feature): ``alpha="evidence"`` of ``MultinomialNB``,
``BernoulliNB`` and ``CategoricalNB`` and ``prior="evidence"`` of ``GaussianNB`` (and
:func:`class_alpha`, the class proportions' concentration) go through it;
:func:`alpha_layout` puts its values in the layout the estimators' ``alpha`` accepts.
:func:`maximize_evidence` maximises any continuous fields (shifts of a mean, fields
bounded below, untied blocks) by L-BFGS-B on the exact ``jax.grad`` gradient and
Newton polishing on the exact ``jax.hessian``; ``GaussianBayesClassifier``
("full"/"shared") and ``PoissonNB`` learn their priors with it. Both return an
:class:`EvidenceTrace` of the iterates.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesnb.core._threads import one_blas_thread
from bayesnb.core._x64 import enable_x64
from bayesnb.exceptions import EvidenceWarning

__all__ = [
    "EvidenceTrace",
    "SCOPES",
    "LOWER",
    "UPPER",
    "MAX_STEP",
    "is_evidence",
    "check_scope",
    "maximize",
    "learn_prior",
    "alpha_layout",
    "BLOCK_TRANSFORMS",
    "class_alpha",
]

#: Which hyperparameters are tied: one value for every class and feature, one per class,
#: or one per feature.
SCOPES = ("shared", "class", "feature")
#: Bounds of every optimised hyperparameter.
LOWER, UPPER = 1e-8, 1e8
#: Largest change of a log-hyperparameter in one iteration (a factor of e^3, about 20).
MAX_STEP = 3.0
# Largest move of a log-hyperparameter when a step is extended along a flattening slope.
_MAX_EXPAND = 24.0
_MAX_ITER = 100
_MAX_HALVINGS = 40


class EvidenceTrace(NamedTuple):
    """The iterates of one empirical-Bayes optimisation, for plotting and diagnosis.

    Attributes
    ----------
    names : tuple of str
        The hyperparameters optimised, one per column of ``values`` (e.g. ``("alpha",)``,
        ``("a", "b")``, ``("kappa", "rate_scale")``).
    values : ndarray of shape (n_iter + 1, n_blocks, len(names))
        Hyperparameter values at each iterate, the starting point first; ``n_blocks`` is
        1 (shared), the number of classes or the number of features.
    log_evidence : ndarray of shape (n_iter + 1,)
        The log evidence of the part of the model these hyperparameters enter (the
        feature part given the labels, or the label part), at each iterate.
    grad_norm : ndarray of shape (n_iter + 1,)
        Largest :math:`|\\partial \\log p / \\partial \\log\\eta|` over the parameters not
        held at a bound.
    converged : bool
    at_bound : bool ndarray of shape (n_blocks, len(names))
        Parameters left at :data:`LOWER` or :data:`UPPER` because the evidence still
        increases beyond.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import families
    >>> from bayesnb.core.empirical_bayes import learn_prior
    >>> fam = families.get("multinomial")
    >>> stats = fam.stats(np.array([[5, 0, 1], [4, 1, 0], [0, 6, 2], [1, 5, 1]]), np.array([0, 0, 1, 1]), 2)
    >>> prior, trace = learn_prior(fam, fam.default_prior(stats), stats, ["concentration"])
    >>> bool(trace.converged), trace.n_iter < 10
    (True, True)
    >>> bool(trace.log_evidence[-1] >= trace.log_evidence.max() - 1e-12)
    True
    """

    names: tuple
    values: np.ndarray
    log_evidence: np.ndarray
    grad_norm: np.ndarray
    converged: bool
    at_bound: np.ndarray

    @property
    def n_iter(self):
        """int: number of Newton iterations taken."""
        return len(self.log_evidence) - 1


def is_evidence(value):
    """Whether a hyperparameter is set to ``"evidence"`` (learned by maximising the evidence).

    Parameters
    ----------
    value : object
        A hyperparameter as passed to an estimator.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_evidence("evidence"), is_evidence(1.0)
    (True, False)
    """
    return isinstance(value, str) and value == "evidence"


# Where empirical Bayes is implemented: an estimator that does not learn a hyperparameter
# names these in its refusal, so a user knows what to use instead.
_LEARNED = (
    "alpha='evidence' of MultinomialNB, BernoulliNB, CategoricalNB and PoissonNB "
    "(beta='evidence' too), prior='evidence' of GaussianNB, GaussianBayesClassifier and "
    "PoissonNB, class_alpha='evidence' of every estimator; any registered family's prior "
    "through bayesnb.core.empirical_bayes.maximize_evidence"
)


def refuse_evidence(value, name, owner):
    """Raise a clear error where ``value`` asks for a hyperparameter this estimator cannot learn.

    Parameters
    ----------
    value : object
        The hyperparameter as passed to the estimator.
    name : str
        Its parameter name, for the message.
    owner : str
        The estimator's class name, for the message.

    Raises
    ------
    ValueError
        If ``value`` is ``"evidence"``.

    Examples
    --------
    >>> refuse_evidence(1.0, "alpha", "MyNB")  # numbers pass
    >>> refuse_evidence("evidence", "alpha", "MyNB")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: MyNB cannot learn alpha from the evidence...
    """
    if is_evidence(value):
        raise ValueError(
            f"{owner} cannot learn {name} from the evidence (not implemented for its prior); "
            f"pass a value instead, and compare candidates with log_evidence(). Learned from "
            f"the evidence: {_LEARNED}"
        )


def check_scope(scope, name="alpha_scope"):
    """Validate a scope name (see :data:`SCOPES`).

    Parameters
    ----------
    scope : str
    name : str
        Parameter name used in the error message.

    Returns
    -------
    str
        ``scope``, unchanged.

    Raises
    ------
    ValueError
        If ``scope`` is not in :data:`SCOPES`.
    """
    if not isinstance(scope, str) or scope not in SCOPES:
        raise ValueError(f"{name} must be one of {SCOPES}, got {scope!r}")
    return scope


# ----------------------------------------------------------------------------- objective
# One module-level objective (hashable, so ``jax.jit`` compiles it once per family, fields
# and shapes): ``objective(u, data, layout)`` with ``u`` of shape (n_blocks, k), the log
# hyperparameters, ``data`` the pytrees ``(prior, stats)`` and ``layout`` the static
# description of how ``u`` fills the prior (see :func:`learn_prior`).


def _protocol_objective(u, data, layout):
    """The family's own log evidence at the prior that ``u`` sets (through the protocol).

    ``layout`` is ``(family, spec, tie, tied)``: ``spec`` one ``(fields, transform)`` per
    column of ``u``, ``tie`` the shape of the blocks over the leading (class, feature)
    axes, ``tied``: ``data[1]`` is ``family.tied_log_evidence(stats)`` rather than the
    statistics.
    """
    family, spec, tie, tied = layout
    prior, stats = data
    theta = jnp.exp(u)
    fields = {}
    for i, (names, transform) in enumerate(spec):
        for name in names:
            start = getattr(prior, name)
            value = theta[:, i].reshape(tie + (1,) * (start.ndim - len(tie)))
            fields[name] = start * value if transform == "log_multiplier" else jnp.broadcast_to(value, start.shape)
    prior = prior._replace(**fields)
    return stats(prior) if tied else family.log_evidence(prior, stats)


@partial(jax.jit, static_argnames=("objective", "layout"))
def _value(u, data, objective, layout):
    return objective(u, data, layout)


@partial(jax.jit, static_argnames=("objective", "layout"))
def _grad(u, data, objective, layout):
    return jax.grad(objective)(u, data, layout)


# Forward differences of the exact gradient give the Hessian: compiling the gradient alone
# takes a fraction of the time of compiling second derivatives of log-Gamma functions
# (seconds for every new shape), and the maximiser is where the *exact* gradient
# vanishes, so the Hessian only needs to be accurate enough for fast Newton convergence
# (relative error ~ h from truncation, ~ 1e-16 / h from round-off).
_FD_STEP = 1e-6


def _curvature(grad_at, u, g0, valid, structure):
    """Hessian of the blocks, or (d, z, θ) of the simplex, from differences of gradients.

    ``g0`` is the gradient at ``u``.
    """
    h = _FD_STEP

    def column(tangent):
        return (grad_at(u + h * tangent) - g0) / h

    if structure == "blocks":
        k = u.shape[1]
        cols = [column(np.where(valid, np.eye(k)[i][None, :], 0.0)) for i in range(k)]
        return np.stack(cols, axis=-1)  # (n_blocks, k, k): [b, :, i] = column i of block b
    # "simplex": H = diag(d) + z θθᵀ over the valid coordinates. Column i of H (i: the
    # largest θ, for the best-scaled entries) gives z from its off-diagonal entries, H·1
    # gives d.
    theta = np.where(valid[:, 0], np.exp(u[:, 0]), 0.0)
    i = int(np.argmax(theta))
    one_hot = np.zeros_like(u)
    one_hot[i] = 1.0
    col = column(one_hot)[:, 0]
    row_sums = column(valid.astype(np.float64))[:, 0]
    others = theta.copy()
    others[i] = 0.0
    z = float(np.sum(col * others) / (theta[i] * np.sum(others * others)))
    d = row_sums - z * theta * np.sum(theta)
    return d, z, theta


# ----------------------------------------------------------------------------- Newton


def _direction(grad, curv, free, structure):
    """Ascent direction: the Newton step with |curvature| (0 on coordinates held at a bound).

    In log space the evidence is concave near its maximum but often convex far from it
    (where a hyperparameter should grow by orders of magnitude); such directions get the
    absolute value of their curvature. Steps are capped at :data:`MAX_STEP` per block
    (blocks are independent) or per coordinate (simplex), so that one coordinate with a
    flat curvature does not shrink the step of all the others.
    """
    g = np.where(free, grad, 0.0)
    if structure == "blocks":
        neg = -np.asarray(curv)
        neg = 0.5 * (neg + np.swapaxes(neg, -1, -2))
        both = free[:, :, None] & free[:, None, :]
        eye = np.broadcast_to(np.eye(neg.shape[-1], dtype=bool), neg.shape)
        neg = np.where(both, neg, np.where(eye, 1.0, 0.0))
        lam, vec = np.linalg.eigh(neg)
        scale = np.max(np.abs(lam), axis=-1, keepdims=True)
        lam = np.maximum(np.abs(lam), 1e-12 * scale + 1e-300)
        coef = np.einsum("bki,bk->bi", vec, g) / lam
        step = np.einsum("bki,bi->bk", vec, coef)
        size = np.max(np.abs(step), axis=1, keepdims=True)
        return step * np.minimum(1.0, MAX_STEP / np.maximum(size, 1e-300))
    d, z, theta = (np.asarray(v) for v in curv)
    g1 = g[:, 0]
    D = np.where(free[:, 0], -d, 1.0)
    th = np.where(free[:, 0], theta, 0.0)
    D = np.maximum(np.abs(D), 1e-12 * np.max(np.abs(D)) + 1e-300)
    diagonal = np.clip(g1 / D, -MAX_STEP, MAX_STEP)
    s = z * np.sum(th * th / D)
    if s < 1.0 - 1e-12:
        # Sherman–Morrison: (diag(D) - z θθᵀ)⁻¹ g, positive definite here.
        gd = g1 / D
        step = np.clip(gd + z * (th / D) * np.dot(th, gd) / (1.0 - s), -MAX_STEP, MAX_STEP)
        if np.dot(g1, step) > 0:
            return step[:, None]
    return diagonal[:, None]


def _as_jax(a):
    # Real leaves in float64; booleans (masks) and integers (indices, category counts) kept.
    a = np.asarray(a)
    return jnp.asarray(a) if a.dtype == bool or np.issubdtype(a.dtype, np.integer) else jnp.asarray(a, dtype=jnp.float64)


def maximize(objective, data, u0, layout, *, names, valid=None, structure="blocks", max_iter=_MAX_ITER):
    """Maximise ``objective`` over log-hyperparameters by safeguarded Newton steps.

    Parameters
    ----------
    objective : callable
        Module-level ``objective(u, data, layout)`` returning the log evidence as a JAX
        scalar, differentiable in ``u``.
    data : pytree of arrays
        Passed through to ``objective`` (e.g. a prior and statistics; real leaves
        converted to float64 JAX arrays, boolean and integer leaves kept).
    u0 : ndarray of shape (n_blocks, k)
        Starting log-hyperparameters.
    layout : tuple of int
        Static shape handed to ``objective``.
    names : tuple of str
        One name per column of ``u``.
    valid : bool ndarray of shape (n_blocks, k), optional
        False for padding parameters that enter no term (their gradient is zero).
    structure : {"blocks", "simplex"}
        Shape of the Hessian (see the module docstring).
    max_iter : int

    Returns
    -------
    u : ndarray of shape (n_blocks, k)
        The maximiser found, within ``[log LOWER, log UPPER]``.
    trace : EvidenceTrace
        Over all ``n_blocks`` rows (padding included).

    Examples
    --------
    The objective must be a module-level function (``jax.jit`` compiles it once per shape):

    >>> import numpy as np
    >>> import jax.numpy as jnp
    >>> from jax.scipy.special import gammaln
    >>> from bayesnb.core.empirical_bayes import maximize
    >>> def evidence(u, counts, layout):  # a symmetric Dirichlet over each row of counts
    ...     a = jnp.exp(u[0, 0])
    ...     return (gammaln(a + counts) - gammaln(a)).sum() - (gammaln(3 * a + counts.sum(1)) - gammaln(3 * a)).sum()
    >>> counts = np.array([[5.0, 0.0, 1.0], [0.0, 6.0, 2.0]])
    >>> u, trace = maximize(evidence, counts, np.zeros((1, 1)), (), names=("alpha",))
    >>> bool(trace.converged), bool(trace.grad_norm[-1] < 1e-6)
    (True, True)
    """
    lo, hi = np.log(LOWER), np.log(UPPER)
    u = np.clip(np.asarray(u0, dtype=np.float64), lo, hi)
    valid = np.ones(u.shape, bool) if valid is None else np.asarray(valid, bool)
    with enable_x64():
        data = jax.tree_util.tree_map(_as_jax, data)

        def value(v):
            return float(_value(v, data, objective, layout))

        def grad_at(v):
            return np.where(valid, np.asarray(_grad(v, data, objective, layout)), 0.0)

        def free_of(v, g):
            return valid & ~(((v <= lo) & (g < 0)) | ((v >= hi) & (g > 0)))

        f, grad = value(u), grad_at(u)
        values, logev, gnorm = [np.exp(u)], [f], []
        converged = False
        while True:
            free = free_of(u, grad)
            g_free = np.where(free, grad, 0.0)
            gnorm.append(float(np.max(np.abs(g_free), initial=0.0)))
            if len(logev) > max_iter or not free.any():
                converged = not free.any()
                break
            step = _direction(grad, _curvature(grad_at, u, grad, valid, structure), free, structure)
            gain = float(np.sum(g_free * step))
            biggest = float(np.max(np.abs(step), initial=0.0))
            if biggest < 1e-10 or gain <= 0.0:
                converged = True
                break
            # Close enough that this Newton step is exact to working precision: take it
            # (if it does not lose evidence) and stop.
            last = gain <= 1e-12 * (1.0 + abs(f))
            if biggest > MAX_STEP:
                step, gain = step * (MAX_STEP / biggest), gain * (MAX_STEP / biggest)
            t, accepted = 1.0, False
            tolerance = 1e-13 * (1.0 + abs(f))
            for _ in range(_MAX_HALVINGS):
                u_new = np.clip(u + t * step, lo, hi)
                f_new = value(u_new)
                if np.isfinite(f_new) and f_new >= f + 1e-4 * t * gain - tolerance:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                # No increase above round-off along an ascent direction: at the optimum
                # to working precision if the predicted gain is itself that small.
                converged = gain <= 1e-8 * (1.0 + abs(f))
                break
            # A full step that gained more than the quadratic model predicts (gain / 2)
            # is heading up a slope that flattens out (toward a supremum at 0 or
            # infinity, where Newton steps stay of size ~1 in log): go further while the
            # evidence still increases.
            while t >= 1.0 and f_new - f > 0.6 * t * gain and 2.0 * t * min(biggest, MAX_STEP) <= _MAX_EXPAND:
                u_far = np.clip(u + 2.0 * t * step, lo, hi)
                f_far = value(u_far)
                if not (np.isfinite(f_far) and f_far > f_new):
                    break
                t, u_new, f_new = 2.0 * t, u_far, f_far
            u, f = u_new, f_new
            grad = grad_at(u)
            values.append(np.exp(u))
            logev.append(f)
            if last:
                converged = True
                free = free_of(u, grad)
                gnorm.append(float(np.max(np.abs(np.where(free, grad, 0.0)), initial=0.0)))
                break
    trace = EvidenceTrace(
        names=tuple(names),
        values=np.stack(values),
        log_evidence=np.asarray(logev),
        grad_norm=np.asarray(gnorm),
        converged=bool(converged),
        at_bound=valid & ~free_of(u, grad),
    )
    return u, trace


def _warn(trace, what):
    if not trace.converged:
        warnings.warn(
            f"the evidence maximisation for {what} did not converge in {trace.n_iter} "
            f"iterations (largest gradient {trace.grad_norm[-1]:.3g}); the last iterate is used",
            EvidenceWarning,
            stacklevel=4,
        )
    n_bound = int(trace.at_bound.sum())
    if n_bound:
        top = trace.values[-1][trace.at_bound]
        where = "above" if np.all(top >= UPPER) else "below" if np.all(top <= LOWER) else "beyond"
        warnings.warn(
            f"the log evidence still increases {where} the bounds [{LOWER:g}, {UPPER:g}] for "
            f"{n_bound} of {trace.at_bound.size} {what} hyperparameter(s); they are left at the "
            "bound (the evidence has its supremum at 0 or infinity, see evidence_trace_)",
            EvidenceWarning,
            stacklevel=4,
        )


def alpha_layout(trace, scope, column=0):
    """The learned values of one column of ``trace`` in the layout the estimators' ``alpha`` accepts.

    Parameters
    ----------
    trace : EvidenceTrace
        Of :func:`learn_prior` (or :func:`maximize`) with blocks tied by ``scope``.
    scope : {"shared", "class", "feature"}
    column : int
        Which learned hyperparameter (a column of ``trace.values``).

    Returns
    -------
    float, ndarray of shape (n_classes, 1) or ndarray of shape (n_features,)
        Broadcastable to (n_classes, n_features): a float (``"shared"``), one value per
        class or one per feature.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb.core.empirical_bayes import EvidenceTrace, alpha_layout
    >>> trace = EvidenceTrace(("alpha",), np.array([[[1.0], [2.0]]]), np.zeros(1), np.zeros(1), True, np.zeros((2, 1), bool))
    >>> alpha_layout(trace, "class").tolist()
    [[1.0], [2.0]]
    """
    theta = np.asarray(trace.values[-1][:, column], dtype=np.float64)
    if check_scope(scope) == "shared":
        return float(theta[0])
    if scope == "class":
        return theta.reshape(-1, 1)
    return theta.copy()


#: How :func:`learn_prior` reads a learned field from ``u``: ``"log"`` sets it to
#: :math:`e^u` (one value filling the block), ``"log_multiplier"`` to :math:`x_0 e^u` (a
#: positive factor of the start :math:`x_0`, which keeps its pattern within the block).
BLOCK_TRANSFORMS = ("log", "log_multiplier")


def _is_tied(a):
    """Whether ``a`` is constant along every axis but the first."""
    a = np.asarray(a)
    if a.ndim < 2:
        return True
    first = a.reshape(a.shape[0], -1)
    return bool(np.all(first == first[:, :1]))


def learn_prior(family, prior, stats, fields, scope="shared", *, transforms=None, names=None, what=None, max_iter=_MAX_ITER):
    r"""Positive prior fields of any registered family, tied by ``scope``, that maximise its evidence.

    Maximises :math:`\log p(D \mid \eta)`, the family's own ``log_evidence(prior, stats)``
    (or, where the learned prior is tied and the family offers it, its
    ``tied_log_evidence(stats)``, the same evidence evaluated over the distinct counts),
    over one value of each learned field for every cell (``"shared"``), one per class
    (``"class"``) or one per feature (``"feature"``), by the safeguarded Newton
    iteration of :func:`maximize` on :math:`u = \log\eta` with the exact ``jax.grad``
    gradient. This is what ``alpha="evidence"`` of the Dirichlet and Beta families and
    ``prior="evidence"`` of the diagonal Gaussian run; :func:`maximize_evidence` serves
    fields that are not positive (a shift of a mean, a bounded degrees of freedom) or
    not tied over the leading axes.

    The evidence is a sum of independent terms per class (the statistics are per
    class), and per feature for every family whose features are independent given the
    class; one learned field per feature of a family whose features share a simplex
    (the multinomial's words) couples the features only through the total
    concentration, so the Hessian in :math:`u` is taken as a diagonal plus a rank-one
    term (exact for a Dirichlet over the features, Minka 2000; the rank-one term
    vanishes where the features are independent). Several fields per block get the
    block's dense :math:`k \times k` Hessian.

    Parameters
    ----------
    family : Family or str
        A registered family (:func:`bayesnb.core.families.get`).
    prior : the family's prior type
        The start: each learned field's starting value (the mean of its log over each
        block for ``"log"``; the pattern kept by ``"log_multiplier"``). Fields of shape
        (n_classes, n_features, ...).
    stats : the family's statistics
    fields : sequence of str or of tuples of str
        The learned fields, each in ``family.hyperparameters``; a tuple of fields is one
        learned value that sets all of them (a symmetric Beta :math:`a = b`:
        ``[("concentration1", "concentration0")]``).
    scope : {"shared", "class", "feature"}
    transforms : dict, optional
        Per entry of ``fields`` (keyed by its first field name), a member of
        :data:`BLOCK_TRANSFORMS`; default ``"log"``.
    names : tuple of str, optional
        The names of the learned values in the trace (default: the fields, joined by
        ``"="`` for a tuple).
    what : str, optional
        What the warnings call the learned values (default: the names).
    max_iter : int

    Returns
    -------
    prior : the family's prior type
        ``prior`` with the learned fields (arrays of the start's shapes).
    trace : EvidenceTrace
        One block per value of ``scope`` (1, n_classes or n_features), one column per
        entry of ``fields``; ``values`` are :math:`e^u` (the field, or its multiplier).

    Raises
    ------
    ValueError
        If a field is not a hyperparameter of the family, is not of shape (n_classes,
        n_features, ...), or a transform or the scope is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import families
    >>> from bayesnb.core.empirical_bayes import learn_prior
    >>> fam = families.get("multinomial")
    >>> X = np.array([[5, 0, 1], [4, 1, 0], [0, 6, 2], [1, 5, 1]])
    >>> stats = fam.stats(X, np.array([0, 0, 1, 1]), 2)
    >>> prior, trace = learn_prior(fam, fam.default_prior(stats), stats, ["concentration"])
    >>> bool(trace.converged), prior.concentration.shape
    (True, (2, 3))
    >>> per_word, _ = learn_prior(fam, fam.default_prior(stats), stats, ["concentration"], "feature")
    >>> bool(np.all(per_word.concentration[0] == per_word.concentration[1]))
    True
    """
    from bayesnb.core.families import get as _get_family

    family = _get_family(family)
    check_scope(scope, "scope")
    entries = tuple((f,) if isinstance(f, str) else tuple(f) for f in fields)
    if not entries or not all(entries):
        raise ValueError("learn_prior needs at least one field to learn")
    transforms = dict(transforms or {})
    for name in (*(n for e in entries for n in e), *transforms):
        if name not in family.hyperparameters:
            raise ValueError(
                f"{name!r} is not a hyperparameter of the {family.name} family ({', '.join(family.hyperparameters)})"
            )
    spec = tuple((e, transforms.get(e[0], "log")) for e in entries)
    for e, transform in spec:
        if transform not in BLOCK_TRANSFORMS:
            raise ValueError(f"the transform of {e[0]!r} must be one of {BLOCK_TRANSFORMS}, got {transform!r}")
    starts = {n: np.asarray(getattr(prior, n), dtype=np.float64) for e in entries for n in e}
    lead = {s.shape[:2] for s in starts.values() if s.ndim >= 2}
    if len(lead) != 1 or any(s.ndim < 2 for s in starts.values()):
        raise ValueError(
            f"learn_prior learns fields of shape (n_classes, n_features, ...); got shapes "
            f"{ {n: s.shape for n, s in starts.items()} }"
        )
    C, F = lead.pop()
    tie = {"shared": (1, 1), "class": (C, 1), "feature": (1, F)}[scope]
    axes = tuple(i for i, t in enumerate(tie) if t == 1)
    u0 = []
    for e, transform in spec:
        if transform == "log_multiplier":
            u0.append(np.zeros(int(np.prod(tie))))
        else:
            logs = np.log(starts[e[0]])
            logs = logs.reshape(logs.shape[:2] + (-1,)).mean(axis=2)
            u0.append(logs.mean(axis=axes, keepdims=True).reshape(-1))
    u0 = np.stack(u0, axis=1)
    learned = {n for e in entries for n in e}
    # The tied form holds for a prior constant along every axis but the first: every
    # learned field is (one value per block, blocks no finer than the classes), and so
    # must be every field that stays.
    tied = (
        scope != "feature"
        and family.tied_log_evidence is not None
        and all(t == "log" for _, t in spec)
        and all(_is_tied(v) for f, v in zip(prior._fields, prior) if f not in learned and np.ndim(v) >= 2)
    )
    if tied:
        # A tied prior is constant along every axis but the first, so its first entry
        # along the others says all of it: handed over cut to length 1 there, the
        # objective's shapes are the classes and the padded distinct counts, and one
        # compiled program serves every number of features.
        cut = {f: v[:, :1] for f, v in zip(prior._fields, prior) if np.ndim(v) >= 2}
        data = (prior._replace(**{f: np.asarray(v) for f, v in cut.items()}), family.tied_log_evidence(stats))
    else:
        data = (prior, stats)
    structure = "simplex" if scope == "feature" and len(spec) == 1 and F > 1 else "blocks"
    names = tuple(names) if names is not None else tuple("=".join(e) for e in entries)
    if len(names) != len(entries):
        raise ValueError(f"names must name each of the {len(entries)} learned values, got {names!r}")
    u, trace = maximize(
        _protocol_objective, data, u0, (family, spec, tie, tied), names=names, structure=structure, max_iter=max_iter
    )
    _warn(trace, what or ", ".join(names))
    theta = np.exp(u)
    out = {}
    for i, (e, transform) in enumerate(spec):
        for name in e:
            start = starts[name]
            value = theta[:, i].reshape(tie + (1,) * (start.ndim - 2))
            out[name] = start * value if transform == "log_multiplier" else np.broadcast_to(value, start.shape).copy()
    return prior._replace(**out), trace


def class_alpha(class_count):
    r"""Symmetric concentration :math:`\beta` of the Dirichlet on the class proportions.

    Maximises :math:`\log B(\beta\mathbf 1 + N) - \log B(\beta\mathbf 1)`, the evidence
    of the label sequence (:func:`bayesnb.core.class_prior.log_evidence`). The labels,
    given nothing, are one sequence of categorical draws under one Dirichlet: the
    multinomial family's evidence of a single "class" whose counts are :math:`N`, so
    :func:`learn_prior` maximises that family's (tied) evidence. It comes from one
    draw of the proportions, so the supremum is often at a bound: :math:`\beta \to
    \infty` when the classes are more even than multinomial sampling would make them
    (uniform proportions), :math:`\beta \to 0` when only one class occurs.

    Parameters
    ----------
    class_count : ndarray of shape (n_classes,)

    Returns
    -------
    beta : float
    trace : EvidenceTrace

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb.core.empirical_bayes import class_alpha
    >>> beta, trace = class_alpha(np.array([10.0, 30.0, 5.0]))
    >>> round(beta, 3), bool(trace.converged)
    (1.515, True)
    """
    from bayesnb.core.families import multinomial

    counts = np.asarray(class_count, dtype=np.float64).reshape(1, -1)
    family = multinomial.family
    stats = family.stats(counts, np.zeros(1, dtype=np.intp), 1)
    prior = family.prior_type(np.ones(counts.shape))
    _, trace = learn_prior(family, prior, stats, ["concentration"], names=("class_alpha",))
    return alpha_layout(trace, "shared"), trace


# ----------------------------------------------------------------------------- generic


#: How :func:`maximize_evidence` reads its unconstrained variables ``u`` (one per tied
#: block of a field), with ``x0`` the field's starting value: ``"log"`` sets the field to
#: :math:`e^u` (a positive field; starts at the geometric mean of ``x0`` over the tied
#: cells), ``"log_multiplier"`` to :math:`x_0 e^u` (a positive factor of the start, e.g.
#: of a scale matrix :math:`\Psi_0`, which keeps its shape), ``"shift"`` to :math:`x_0 + u`
#: and ``"identity"`` to :math:`u` (a real field), and ``("above", lo)`` to
#: :math:`lo + e^u` (a field bounded below, e.g. the Wishart degrees of freedom
#: :math:`\nu_0 > F - 1`).
TRANSFORMS = ("log", "log_multiplier", "shift", "identity", "above")


def _is_matrix_field(name, value):
    # The priors use numpyro's names: ``scale`` of a Normal-Inverse-Wishart is a field of
    # symmetric positive-definite matrices (the trailing two axes).
    return (
        name == "scale"
        and value.ndim >= 2
        and value.shape[-1] == value.shape[-2]
        and np.allclose(value, np.swapaxes(value, -1, -2))
    )


def _default_transform(name, value):
    """``"shift"`` for ``loc``, ``"log_multiplier"`` for a field of matrices, ``"log"`` otherwise."""
    if name == "loc":
        return "shift"
    if _is_matrix_field(name, value):
        return "log_multiplier"
    return "log"


def _check_transform(name, transform):
    if isinstance(transform, tuple) and len(transform) == 2 and transform[0] == "above":
        return ("above", float(transform[1]))
    if transform in TRANSFORMS and transform != "above":
        return transform
    raise ValueError(
        f"the transform of {name!r} must be one of 'log', 'log_multiplier', 'shift', 'identity' or "
        f"('above', lower), got {transform!r}"
    )


def _tied_mean(a, shape):
    """Mean of ``a`` over the axes that a block of ``shape`` (broadcast against ``a``) ties."""
    lead = a.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"a tied shape {shape} has more axes than the field ({a.shape})")
    a = a.mean(axis=tuple(range(lead))) if lead else a
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and a.shape[i] != 1)
    out = a.mean(axis=axes, keepdims=True) if axes else a
    return np.broadcast_to(out, shape)


def _read(spec, x0, u):
    """The field values of the unconstrained vector ``u`` (jax.numpy, traceable)."""
    fields, at = {}, 0
    for (name, transform, shape, matrix), start in zip(spec, x0):
        size = int(np.prod(shape, dtype=np.int64))
        v = u[at : at + size].reshape(shape)
        at += size
        # A multiplier or shift of a field of matrices acts on whole matrices: its tied
        # shape broadcasts against the leading (batch) axes only.
        expand = (lambda w: w.reshape(w.shape + (1, 1))) if matrix else (lambda w: w)
        if transform == "log":
            value = jnp.broadcast_to(expand(jnp.exp(v)), start.shape)
        elif transform == "log_multiplier":
            value = start * expand(jnp.exp(v))
        elif transform == "shift":
            value = start + expand(v)
        elif transform == "identity":
            value = jnp.broadcast_to(expand(v), start.shape)
        else:
            value = jnp.broadcast_to(expand(transform[1] + jnp.exp(v)), start.shape)
        fields[name] = value
    return fields


@partial(jax.jit, static_argnames=("family", "spec"))
def _generic_value_and_grad(u, x0, prior, stats, family, spec):
    def objective(v):
        return family.log_evidence(prior._replace(**_read(spec, x0, v)), stats)

    return jax.value_and_grad(objective)(u)


@partial(jax.jit, static_argnames=("family", "spec"))
def _generic_hessian(u, x0, prior, stats, family, spec):
    def objective(v):
        return family.log_evidence(prior._replace(**_read(spec, x0, v)), stats)

    return jax.hessian(objective)(u)


def _initial(spec, x0):
    """Starting ``u`` of each field: the start itself (multipliers and shifts at 0)."""
    parts = []
    for (name, transform, shape, matrix), start in zip(spec, x0):
        if matrix and transform in ("log", "identity", "above"):
            raise ValueError(f"{name!r} is a field of matrices: learn it through 'log_multiplier' or 'shift'")
        if transform in ("log_multiplier", "shift"):
            parts.append(np.zeros(shape))
        elif transform == "log":
            parts.append(_tied_mean(np.log(start), shape))
        elif transform == "identity":
            parts.append(_tied_mean(start, shape))
        else:
            excess = start - transform[1]
            if np.any(excess <= 0):
                raise ValueError(f"the start of {name!r} must exceed its lower bound {transform[1]:g}")
            parts.append(_tied_mean(np.log(excess), shape))
    return np.concatenate([np.ravel(p) for p in parts]) if parts else np.zeros(0)


def _bounds(spec):
    out = []
    for _, transform, shape, _ in spec:
        size = int(np.prod(shape, dtype=np.int64))
        positive = transform not in ("shift", "identity")
        out += [(np.log(LOWER), np.log(UPPER)) if positive else (None, None)] * size
    return out


def _shown(spec, u):
    """Values recorded in the trace: the field value (a scalar tie), the multiplier, or the shift."""
    out, at = [], 0
    for _, transform, shape, _ in spec:
        size = int(np.prod(shape, dtype=np.int64))
        v = u[at : at + size]
        at += size
        if transform in ("log", "log_multiplier"):
            out.append(np.exp(v))
        elif transform in ("shift", "identity"):
            out.append(v)
        else:
            out.append(transform[1] + np.exp(v))
    return np.concatenate(out) if out else np.zeros(0)


def _names(spec):
    suffix = {"log_multiplier": "_multiplier", "shift": "_shift"}
    names = []
    for name, transform, shape, _ in spec:
        label = name + suffix.get(transform if isinstance(transform, str) else "", "")
        size = int(np.prod(shape, dtype=np.int64))
        names += [label] if size == 1 and shape == () else [f"{label}[{i}]" for i in range(size)]
    return tuple(names)


# Largest number of variables for which maximize_evidence forms the exact Hessian.
_NEWTON_MAX = 64


def maximize_evidence(family, prior, stats, fields, *, transforms=None, shapes=None, max_iter=_MAX_ITER):
    r"""Prior hyperparameters of any registered family that maximise its log evidence.

    Maximises :math:`\log p(D \mid \eta)` (``family.log_evidence(prior, stats)``, the
    family's own closed form, differentiated by ``jax.grad`` in float64) over the
    continuous fields ``fields`` of ``prior``; the other fields keep their values. Each
    field is read from unconstrained variables :math:`u` through a transform (see
    :data:`TRANSFORMS`): positive fields on the log scale, a field of matrices through
    one positive multiplier of its start (:math:`\Psi_0 \to s\Psi_0`: the shape of the
    matrix is kept, its size learned), ``loc`` through a shift of its start, a field
    bounded below (the Wishart :math:`\nu_0`) as ``lower + exp(u)``. By default each
    field is one scalar tied over every class and feature (``shapes`` unties it).

    The optimiser is L-BFGS-B (:func:`scipy.optimize.minimize`) on the exact gradient,
    with :math:`\log` variables within [:data:`LOWER`, :data:`UPPER`]; its result is
    polished by Newton steps on the exact Hessian (``jax.hessian``, for at most 64
    variables, which also precondition L-BFGS-B by their diagonal) with a backtracking
    line search, so that the gradient vanishes to working precision. The objective is compiled once per family, fields and shapes.
    For positive fields tied over classes or features, :func:`learn_prior` (Newton
    on structured curvature, and the family's tied evidence where it offers one) is
    faster.

    Parameters
    ----------
    family : Family or str
        A registered family (:func:`bayesnb.core.families.get`).
    prior : the family's prior type
        The start; its fields in canonical shapes (e.g. ``family.default_prior(stats)``).
    stats : the family's statistics
    fields : sequence of str
        Fields of ``prior`` to learn, each in ``family.hyperparameters``.
    transforms : dict of str to transform, optional
        Per field; default ``"shift"`` for ``loc``, ``"log_multiplier"`` for a field of
        symmetric matrices, ``"log"`` otherwise.
    shapes : dict of str to tuple of int, optional
        Shape of the variables of a field, broadcast against the field (against its
        leading axes for a field of matrices); default ``()``: one value for every cell.
    max_iter : int
        Iterations of L-BFGS-B.

    Returns
    -------
    prior : the family's prior type
        ``prior`` with the learned fields (arrays of the start's shapes).
    trace : EvidenceTrace
        One block; ``names`` are the fields (``kappa``, ``df``, ``scale_multiplier``,
        ``loc_shift``, ``name[i]`` for untied variables) and ``values`` the field value,
        multiplier or shift at each L-BFGS-B and Newton iterate; ``log_evidence`` the
        evidence of the features given the labels there; ``grad_norm`` the largest
        :math:`|\partial\log p/\partial u|` over variables not held at a bound.

    Raises
    ------
    ValueError
        If a field is not a hyperparameter of the family, or a transform is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import families
    >>> from bayesnb.core.empirical_bayes import maximize_evidence
    >>> fam = families.get("poisson")
    >>> X = np.random.default_rng(0).poisson([[2.0, 5.0]], (50, 2))
    >>> stats = fam.stats(X, np.arange(50) % 2, 2)
    >>> prior, trace = maximize_evidence(fam, fam.default_prior(stats), stats, ["concentration", "rate"])
    >>> trace.names, bool(trace.converged)
    (('concentration', 'rate'), True)
    >>> bool(trace.log_evidence[-1] > trace.log_evidence[0])
    True
    """
    from scipy.optimize import minimize

    from bayesnb.core.families import get as _get_family

    family = _get_family(family)
    fields = tuple(fields)
    if not fields:
        raise ValueError("maximize_evidence needs at least one field to learn")
    transforms, shapes = dict(transforms or {}), dict(shapes or {})
    unknown = [f for f in (*fields, *transforms, *shapes) if f not in family.hyperparameters]
    if unknown:
        raise ValueError(
            f"{unknown[0]!r} is not a hyperparameter of the {family.name} family "
            f"({', '.join(family.hyperparameters)})"
        )
    x0 = tuple(np.asarray(getattr(prior, f), dtype=np.float64) for f in fields)
    spec = tuple(
        (
            f,
            _check_transform(f, transforms.get(f, _default_transform(f, x))),
            tuple(int(s) for s in shapes.get(f, ())),
            _is_matrix_field(f, x),
        )
        for f, x in zip(fields, x0)
    )
    u = _initial(spec, x0)
    bounds = _bounds(spec)
    lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
    hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])

    with enable_x64():
        x0_j = tuple(jnp.asarray(x) for x in x0)

        def evaluate(v):
            f, g = _generic_value_and_grad(jnp.asarray(v, dtype=jnp.float64), x0_j, prior, stats, family, spec)
            return float(f), np.asarray(g, dtype=np.float64)

        history = []

        def hessian(v):
            return np.asarray(_generic_hessian(jnp.asarray(v), x0_j, prior, stats, family, spec), dtype=np.float64)

        # Variables of very different curvature (a shift of a mean in the data's units
        # next to log-scales) are put on one footing by the diagonal of the Hessian at
        # the start (Jacobi preconditioning): L-BFGS-B works on w = d * u.
        newton = u.size <= _NEWTON_MAX
        d = np.ones_like(u)
        if newton:
            diag = np.abs(np.diag(hessian(u)))
            if np.all(np.isfinite(diag)):
                d = np.sqrt(np.where(diag > 0, diag, 1.0))
                d = np.clip(d, 1e-8 * d.max(), None)

        def negative(w):
            f, g = evaluate(w / d)
            if not np.isfinite(f):
                return np.inf, np.zeros_like(g)
            return -f, -g / d

        def record(v):
            history.append(np.array(v, dtype=np.float64))

        record(u)
        with one_blas_thread():  # level-1 BLAS on a short vector: threads only wait (core/_threads.py)
            result = minimize(
                negative,
                u * d,
                jac=True,
                method="L-BFGS-B",
                bounds=[(None if a is None else a * k, None if b is None else b * k) for (a, b), k in zip(bounds, d)],
                callback=lambda w: record(w / d),
                options={"maxiter": int(max_iter), "ftol": 1e-15, "gtol": 1e-10, "maxcor": 20},
            )
        u = np.clip(np.asarray(result.x, dtype=np.float64) / d, lo, hi)
        f, g = evaluate(u)
        # Newton polish on the exact Hessian: L-BFGS-B stops on a relative decrease that
        # can leave the gradient at ~1e-6; a few Newton steps make it vanish.
        if newton:
            for _ in range(_MAX_ITER):
                free = ~(((u <= lo) & (g < 0)) | ((u >= hi) & (g > 0)))
                if not free.any() or np.max(np.abs(g[free])) <= 1e-12 * (1.0 + abs(f)):
                    break
                H = hessian(u)[np.ix_(free, free)]
                lam, vec = np.linalg.eigh(-0.5 * (H + H.T))
                lam = np.maximum(np.abs(lam), 1e-12 * np.max(np.abs(lam)) + 1e-300)
                step = np.zeros_like(u)
                step[free] = vec @ ((vec.T @ g[free]) / lam)
                size = np.max(np.abs(step))
                step *= min(1.0, MAX_STEP / max(size, 1e-300))
                t, moved = 1.0, False
                for _ in range(_MAX_HALVINGS):
                    u_new = np.clip(u + t * step, lo, hi)
                    f_new, g_new = evaluate(u_new)
                    if np.isfinite(f_new) and f_new >= f - 1e-13 * (1.0 + abs(f)):
                        moved = True
                        break
                    t *= 0.5
                if not moved:
                    break
                u, f, g = u_new, f_new, g_new
                record(u)
        if not np.array_equal(history[-1], u):
            record(u)
        values, logev, gnorm = [], [], []
        for v in history:
            fv, gv = evaluate(v)
            free = ~(((v <= lo) & (gv < 0)) | ((v >= hi) & (gv > 0)))
            values.append(_shown(spec, v)[None, :])
            logev.append(fv)
            gnorm.append(float(np.max(np.abs(np.where(free, gv, 0.0)), initial=0.0)))
        learned = {k: np.asarray(v, dtype=np.float64) for k, v in _read(spec, x0_j, jnp.asarray(u)).items()}
    free = ~(((u <= lo) & (g < 0)) | ((u >= hi) & (g > 0)))
    # Converged where the gradient over the free variables vanishes to working precision.
    converged = bool(gnorm[-1] <= 1e-8 * (1.0 + abs(f)))
    trace = EvidenceTrace(
        names=_names(spec),
        values=np.stack(values),
        log_evidence=np.asarray(logev),
        grad_norm=np.asarray(gnorm),
        converged=converged,
        at_bound=~free[None, :],
    )
    _warn(trace, "prior")
    return prior._replace(**learned), trace


__all__ += ["maximize_evidence", "TRANSFORMS"]
