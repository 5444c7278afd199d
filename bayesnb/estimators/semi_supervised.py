r"""Semi-supervised naive Bayes: unlabelled rows by MAP-EM or by mean-field variational Bayes.

:class:`SemiSupervisedNB` wraps any bayesnb estimator whose family has the members the
method needs, and fits it on labelled rows and unlabelled rows together (scikit-learn's
convention: an unlabelled row has ``y = -1``). It uses the wrapped estimator's public
interface and the family protocol only: the responsibilities :math:`r_{ic} = q(y_i = c)`
of an unlabelled row enter the sufficient statistics as fractional sample weights, one
weighted copy of the row per class (``validated_stats(Xv, c, w r_{:c})``), so the
statistics stay exact, additive and sparse, and the conjugate update is the family's own.

The model
---------
:math:`\pi \sim \mathrm{Dir}(\beta)`, :math:`\theta \sim p(\theta)` (the wrapped
estimator's conjugate prior), :math:`y_i \mid \pi \sim \mathrm{Cat}(\pi)`,
:math:`x_i \mid y_i, \theta \sim p(x \mid \theta_{y_i})`. With Nigam et al.'s weight
:math:`\lambda` (``unlabelled_weight``) on the unlabelled rows, the target is

.. math::

    \log p(\theta, \pi) + \sum_{i \in L} w_i \log \pi_{y_i} p(x_i \mid \theta_{y_i})
    + \lambda \sum_{i \in U} w_i \log \sum_c \pi_c\, p(x_i \mid \theta_c).

``method="em"`` (MAP-EM)
    E-step: :math:`r_{ic} \propto \hat\pi_c p(x_i \mid \hat\theta_c)`; M-step: the MAP of
    the conjugate posterior given the expected statistics. The trace ``log_posterior_``
    is the log posterior above (up to the constant :math:`\log p(X_L, y_L, X_U)`)
    evaluated at each iteration's parameters; EM never decreases it.

    *Laplace smoothing* (``smoothing="laplace"``, the default; Nigam et al. 2000): the
    MAP under the prior with **every concentration raised by one** (Dirichlet and Beta
    concentrations, the shape of a Gamma, the Dirichlet on the class proportions). With
    the default ``alpha=1`` the MAP under :math:`\mathrm{Dir}(1)` would be the MLE,
    giving a word unseen in a class probability zero and breaking EM; raised to
    :math:`\mathrm{Dir}(2)` it is :math:`(1 + T_{cj}) / (V + T_c)`, Laplace's rule. For
    the Dirichlet, Beta and Gamma families (multinomial, Bernoulli, categorical,
    Poisson, exponential) and for the class proportions this MAP *coincides with the
    posterior mean under the unraised prior*: the mode of
    :math:`\mathrm{Dir}(\alpha + 1 + T)` is :math:`(\alpha + T) / \sum(\alpha + T)`, and
    the mode of :math:`\mathrm{Gamma}(a + 1 + T, b + N)` is :math:`(a + T)/(b + N)`; so the
    M-step is the family's ``point(prior, stats, "mean")`` and the log prior of the
    trace is ``log_density(prior, params, raise_by=1)``. ``smoothing="none"`` is the
    MAP under the prior itself (``point(..., "map")``: every concentration must be at
    least 1, and a zero likelihood stops the fit with an error).

``method="vb"`` (mean-field variational Bayes)
    :math:`q(\theta) q(\pi) \prod_{i \in U} q(y_i)` by coordinate ascent:
    :math:`q(y_i = c) \propto \exp(E_q[\log\pi_c] + E_q[\log p(x_i \mid \theta_c)])` (the
    family's ``expected_log_likelihood``; :math:`E[\log\pi_c]` by digamma differences),
    then :math:`q(\theta), q(\pi)` the conjugate posteriors given the expected
    statistics :math:`S`. Right after that update the evidence lower bound is

    .. math:: \mathcal L = \log p_S(X, y) + \lambda \sum_{i \in U} w_i H(q(y_i)),

    where :math:`\log p_S` is the log evidence of the expected statistics (the wrapped
    estimator's ``log_evidence`` with ``stats_ = S``): the maximum over :math:`q(\theta,
    \pi)` of the expected complete-data log joint minus its KL divergence from the prior
    is the log normaliser of the conjugate update. ``elbo_`` holds it per iteration;
    coordinate ascent never decreases it, and it is a lower bound on
    :math:`\log p(X_L, y_L, X_U)` (for :math:`\lambda = 1`).

After the fit, ``estimator_`` is the wrapped estimator with ``stats_`` the final
expected statistics: for ``"vb"`` its ``posterior_`` and ``class_posterior_`` are
:math:`q(\theta)` and :math:`q(\pi)`, behind ``predict_proba`` (the predictive under
:math:`q`), draws, intervals and the arviz export; for ``"em"`` its ``estimate`` is the
M-step's (``"mean"`` under Laplace smoothing, else ``"map"``), so ``predict_proba`` is
the classifier of the MAP parameters.

The weight :math:`\lambda`
--------------------------
With one component per class, EM explains the unlabelled rows by whatever clusters fit
them best; when those are not the classes, the unlabelled rows make the fit worse than
the labelled rows alone (Nigam et al. 2000, section 5.3, who down-weight them:
EM-:math:`\lambda`). The default ``unlabelled_weight="auto"`` chooses :math:`\lambda`
from the labelled rows alone by stratified K-fold cross-validation (every fold a full fit
with the fold's labelled rows and all unlabelled rows) of the held-out labelled rows'
accuracy (``weight_criterion="accuracy"``, the default; or their log
predictive :math:`\log p(y_i \mid x_i)`, ``"log_score"``), over a grid that contains 0,
falling back to 0 (exactly the labelled-only fit) unless a positive weight beats it by
``weight_margin`` standard errors of the paired per-row differences. It is cross-validation, not an approximate
leave-one-out: downdating one labelled row from an EM fixed point would leave the
responsibilities it helped to set, which is exactly the coupling under test.

Hyperparameters learned from the evidence (``alpha="evidence"``) and data-scaled default
priors are learned from the labelled rows and then held fixed, so that every iteration
targets the same posterior.

Several components per class
----------------------------
A class that is a union of sub-topics ("legitimate mail" is several kinds of mail) is
badly served by one component: EM then explains the unlabelled rows by whichever clusters
fit best (Nigam et al. 2000, section 5.4, their remedy for a heterogeneous class).
``n_components`` gives class :math:`c` a mixture of :math:`K_c` components, each a
conjugate member of the wrapped estimator's family with the same prior:

.. math::

    \pi \sim \mathrm{Dir}(\beta) \text{ over the } M = \textstyle\sum_c K_c
    \text{ (class, component) pairs}, \quad z_i \mid \pi \sim \mathrm{Cat}(\pi),
    \quad x_i \mid z_i \sim p(x \mid \theta_{z_i}), \quad y_i = \mathrm{class}(z_i),

each component's :math:`\beta_k` the ``class_alpha`` of its class. A labelled row fixes
its class, not its component: its responsibilities run over its class's components
(:math:`r_{ik} \propto \pi_k p(x_i \mid \theta_k)` for :math:`k \in y_i`, 0 elsewhere); an
unlabelled row's over all :math:`M`, its copies weighted by :math:`\lambda` as above. The
EM objective is the log posterior above with :math:`\log \pi_{y_i} p(x_i \mid
\theta_{y_i})` replaced by :math:`\log \sum_{k \in y_i} \pi_k p(x_i \mid \theta_k)`
(``log_posterior_``); VB's :math:`q(\pi)` is the Dirichlet over the :math:`M` weights,
:math:`q(\theta_k)` the conjugate posterior of each component, and the ELBO gains the
labelled rows' entropy :math:`\sum_{i \in L} w_i H(q(z_i))` (``elbo_``). Both never
decrease. The machinery is the family protocol's: the components are the classes of a
copy of the wrapped estimator (``estimator_``, whose ``classes_`` are ``0 .. M-1``,
grouped by class, ``component_class_`` mapping them back), the rows enter its
statistics as responsibility-weighted copies. A class's probability is the sum over its
components, :math:`p(y = c \mid x) = \sum_{k \in c} p(z = k \mid x)`, under the
estimate of each method (EM: the plug-in of the M-step's estimate; VB: the predictive
under :math:`q`, exact for the mixture since the components are disjoint).

*Start.* Each class's labelled rows are grouped by content (equal rows as the wrapped
estimator sees them, after ``validate_input``; a sparse row compared in canonical CSR
form), a group weighing its rows' summed ``sample_weight`` (1 per row by default). The
groups are shuffled (by a generator seeded from ``numpy.random.default_rng(random_state)``,
one seed per class, so that a class's start does not depend on the other classes'
numbers of components), the heaviest taken first, and each joins the part of least total
weight so far: :math:`K_c` parts whose weights differ by at most the heaviest group's,
part :math:`j` starting as component :math:`j` (one-hot responsibilities,
``initial_responsibilities_``); the unlabelled rows enter at the first E-step. Copies of
a row thus start in one component, as one row of their summed weight does, and as every
later step sums rows by weight, duplicating a labelled row fits as weighting it (up to
the order of floating-point sums); the start does not depend on the rows' order either.
A class needs at least :math:`K_c` distinct labelled rows. Different seeds can reach
different local optima of a mixture's objective: compare them by ``log_posterior_[-1]``
or ``elbo_[-1]``.

*Supervised.* With no unlabelled row (no ``y == -1``), ``fit`` is a class-conditional
mixture fitted to labelled rows alone by the same EM or VB. With one component per
class (the default) the fit is the plain estimator's: one iteration, no latent
variable (``estimate="mean"`` under Laplace smoothing, ``"map"`` without, for EM;
the exact predictive for VB, whose ``elbo_[-1]`` is then the log evidence). With several,
the evidence has no closed form, and ``elbo_`` (VB) is its lower bound.

*Choosing* :math:`K_c` (``n_components="auto"``). By held-out labelled likelihood, for
EM and VB alike (not by the ELBO, which is not available for EM and, as a bound, is
not comparable across :math:`K` without correcting for the :math:`K!` relabellings):
stratified ``component_cv``-fold cross-validation over the labelled rows
(``StratifiedKFold(shuffle=True, random_state=0)``), where for each fold and each
:math:`K` of ``component_grid`` this estimator, with :math:`K` components for every
class, is fitted to the fold's labelled rows alone, and each held-out row :math:`i`
scores its class-conditional log likelihood :math:`\log p(x_i \mid y_i) =
\log\sum_{k \in y_i} p(x_i, z = k) - \log \pi_{y_i}` under the method's estimate.
Fitted to labelled rows alone, a class's components, its share :math:`\pi_k/\pi_c` and
its start depend on its own rows only, so one fit per :math:`K` scores every class as if
it were varied alone (exactly at a fixed point; to the convergence tolerance ``tol`` in
practice, since the iterations stop on the summed objective), and each class takes the :math:`K` of the highest mean held-out
score (ties: the smaller :math:`K`; a :math:`K` above a class's distinct training rows in
some fold is not a candidate for it). The curve is ``components_curve_``. The chosen numbers
are then held fixed while ``unlabelled_weight="auto"`` chooses :math:`\lambda`.

*Fixed class proportions* (the wrapped estimator's ``class_prior``, or uniform under
``fit_prior=False``). The class term is fixed and each class's shares of its components
are learned: component :math:`k` of class :math:`c` weighs :math:`\pi_c\,\omega_k`, the
shares :math:`\omega_{\cdot \mid c}` of each class under their own
:math:`\mathrm{Dir}(\beta_{k \in c})` (``class_alpha`` for every component of the class).
By the Dirichlet's aggregation property this is the model above with the class totals
of :math:`\pi` held at the given values: EM's M-step for the shares is the MAP under
:math:`\mathrm{Dir}(\beta + 1)` (Laplace smoothing; :math:`\mathrm{Dir}(\beta)` without),
whose log density replaces the Dirichlet's in ``log_posterior_``; VB's
:math:`q(\omega_c) = \mathrm{Dir}(\beta_c + N_c)`, :math:`E_q[\log\pi_k] = \log\pi_c +
\psi(\beta_k + N_k) - \psi(\sum_{k' \in c} \beta_{k'} + N_{k'})`, and the label part of
the ELBO's log evidence is :math:`\sum_c N_c \log\pi_c + \sum_c \log B(\beta_c + N_c) -
\log B(\beta_c)`. Both still never decrease (:class:`~bayesnb.estimators._components.WithinClassShares`).
``estimator_`` holds :math:`\pi_c\hat\omega_k` as its fixed ``class_prior`` (EM: the
M-step's shares; VB: their mean under :math:`q`, the predictive of a new row's
component), so that its predictions are the mixture's; its own draws would hold the
shares at that estimate, while this estimator's ``predict_proba_draws`` and
``predict_proba_interval`` draw each class's shares from their posterior
:math:`\mathrm{Dir}(\beta_c + N_c)` (for VB, :math:`q`) with the class totals fixed.
``sample_posterior`` and ``to_inference_data`` are ``estimator_``'s (shares held).

*Temperature* (the wrapped estimator's ``temperature``, a number :math:`T \ge 1`). As for
one component (the tempering guide), the class's likelihood is raised to :math:`1/T`;
for a mixture that likelihood is :math:`p(x \mid y = c) = \sum_{k \in c} (\pi_k/\pi_c)\,
p(x \mid \theta_k)`, so the tempered score is :math:`\log\pi_c + \log p(x \mid y = c)/T`:
the whole mixture is tempered, not each component (tempering the components would also
reweigh them within the class, which the model's meaning of :math:`T`, a count of
repeated evidence about the class, does not ask). It acts on ``predict_joint_log_proba``
(then the tempered, unnormalised score), ``predict_proba``, ``predict``, and each
posterior draw of ``predict_proba_draws`` / ``predict_proba_interval``; not on the fit,
the trace or the responsibilities. ``estimator_`` keeps ``temperature=1`` (its joints
are the components' untempered ones). ``n_components="auto"`` then scores
:math:`\log p(x_i \mid y_i)/T` (the same choice as at :math:`T = 1`).

*Calibration* (the wrapped estimator's ``calibrate="loo"``). The map
(:mod:`bayesnb.analysis.calibration`) is fitted to the labelled rows' leave-one-out class
probabilities under the fitted mixture, and these are **approximate**, as
``calibration_approximations_`` says: a mixture fitted by EM or VB has no closed-form
exact leave-one-out (leaving a row out moves every row's responsibilities, the fixed
point itself), so each labelled row is downdated from the statistics of the fitted
responsibilities (``min(w_i, 1)`` copies, spread over its class's components as its
responsibilities; each component's predictive by the family's closed form, the
components' weights from the downdated counts) while every other responsibility is
held, under the fit's estimate and temperature. The map is ``calibration_`` and is
applied by ``predict_proba``, ``predict_log_proba``, ``predict`` and to every draw; a
model file holds it. (The one-component fit's map is the wrapped estimator's, fitted to
the same kind of approximate leave-one-out when unlabelled rows enter.)

*Limits.* ``temperature="loo"`` is refused with several components: it is defined as
the minimiser of the training rows' *exact* leave-one-out log loss, which a mixture
fitted by EM or VB does not have in closed form (see *Calibration*).
``class_alpha="evidence"`` with fixed proportions is refused (the labelled fit learns no
concentration for the shares), and so is a prior given per class (it has no
per-component value). One component for every class runs
exactly today's one-component fit.

References
----------
K. Nigam, A. McCallum, S. Thrun, T. Mitchell (2000), *Text classification from labeled
and unlabeled documents using EM*, Machine Learning 39, 103-134.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_is_fitted, column_or_1d

from bayesnb.analysis import calibration as _calibration
from bayesnb.core import class_prior as _class_prior
from bayesnb.core import missing as _missing
from bayesnb.core._validation import check_sample_weight
from bayesnb.core.empirical_bayes import is_evidence
from bayesnb.core.families import _dirichlet
from bayesnb.core.families.product import BlockRows
from bayesnb.core.stats import as_masked, is_masked, merge
from bayesnb.estimators import _components

__all__ = ["SemiSupervisedNB", "unlabelled_mask"]

_METHODS = ("em", "vb")
_SMOOTHING = ("laplace", "none")


def unlabelled_mask(y):
    """Which labels mark an unlabelled row: the number ``-1`` (int or float; in a list or an object array among string labels).

    The string ``"-1"`` is a label like any other (a NumPy string array holds no number).

    Parameters
    ----------
    y : array-like of shape (n_samples,)

    Returns
    -------
    bool ndarray of shape (n_samples,)

    Examples
    --------
    >>> unlabelled_mask(["spam", -1, "ham"]).tolist()
    [False, True, False]
    >>> unlabelled_mask([0, 1, -1]).tolist()
    [False, False, True]
    """
    # A list keeps its elements' types (np.asarray would turn ["a", -1] into strings).
    y = y if isinstance(y, np.ndarray) else np.asarray(y, dtype=object)
    if y.dtype.kind in "iuf":
        return y == -1
    return np.array(
        [isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v == -1 for v in y],
        dtype=bool,
    )


def _parts(Xv):
    """Validated rows and their mask of unobserved entries (None without NaNs)."""
    if isinstance(Xv, _missing.MaskedX):
        return Xv.X, Xv.mask
    return Xv, None


def _take_rows(Xv, rows):
    """Rows ``rows`` (with repeats) of validated input: an array, a sparse matrix, a :class:`MaskedX` or :class:`BlockRows`."""
    if isinstance(Xv, _missing.MaskedX):
        return _missing.MaskedX(_take_rows(Xv.X, rows), _take_rows(Xv.mask, rows))
    if isinstance(Xv, BlockRows):  # a product family's rows (MixedNB): each block's piece
        return BlockRows([_take_rows(p, rows) for p in Xv.parts], (len(rows), Xv.shape[1]), Xv.validated)
    if isinstance(Xv, np.ndarray) or sp.issparse(Xv):
        return Xv[rows]
    raise TypeError(f"SemiSupervisedNB cannot take rows of validated input of type {type(Xv).__name__}")


def _is_dask_array(X):
    """Whether ``X`` is a Dask array (duck-typed: Dask is not imported here)."""
    return type(X).__module__.startswith("dask") and hasattr(X, "chunks") and hasattr(X, "blocks")


def _layout(X, dask_rows):
    """Every row of ``X`` in batches, for the estimator to learn its input layout from (``_fit_with_layout``).

    A Dask array's row-chunks are computed one at a time, on demand (an estimator
    without a layout to learn reads none of them).
    """
    if not dask_rows:
        return [X]
    return (X[a : a + size].compute() for a, size in zip(np.cumsum((0,) + X.chunks[0][:-1]), X.chunks[0]))


def _held(rows):
    """A batch of validated rows held in memory."""
    return lambda: rows


def _chunk_rows(est, X, i, local):
    """The rows ``local`` of row-chunk ``i`` of the Dask array ``X``, computed and validated on each call."""

    start = int(sum(X.chunks[0][:i]))
    stop = start + int(X.chunks[0][i])

    def rows():
        return est.validate_input(_safe_indexing(X[start:stop].compute(), local))

    return rows


def _merge(a, b):
    # Batches with and without unobserved entries merge in the per-cell form (as BaseNB does).
    if is_masked(a) or is_masked(b):
        a, b = as_masked(a), as_masked(b)
    return merge(a, b)


def _refit(est, stats):
    """A copy of the fitted ``est`` conditioned on ``stats`` under its prior (``with_stats``).

    ``with_stats`` recomputes the posteriors and re-learns nothing; for a
    :class:`~bayesnb.MixedNB` it conditions every block on its part of the product's
    statistics (its ``update_prior`` would reinstate the blocks' own statistics).
    """
    return est.with_stats(stats)


def _freeze_hyperparameters(est):
    """Hold fixed what the labelled fit learned (evidence hyperparameters, data-scaled default priors)."""
    params = est.get_params(deep=False)
    fixed = {}
    for name, value in params.items():
        if is_evidence(value) and hasattr(est, name + "_"):
            fixed[name] = getattr(est, name + "_")
    if "prior" in params and params["prior"] is None and getattr(est, "prior_", None) is not None:
        fixed["prior"] = est.prior_
    if fixed:
        est.update_prior(**fixed)


def _responsibilities(joint, w, zero_likelihood):
    r"""Normalised responsibilities of rows, their weighted log normaliser and entropy.

    Parameters
    ----------
    joint : ndarray of shape (n_rows, n_slots)
        Log joint of each row with each class or component (``-inf`` where not allowed).
    w : ndarray of shape (n_rows,)
        Row weights.
    zero_likelihood : str
        What the error says of rows with zero likelihood in every slot.

    Returns
    -------
    R : ndarray of shape (n_rows, n_slots)
    total : float
        :math:`\sum_i w_i \log\sum_k e^{j_{ik}}`.
    entropy : float
        :math:`\sum_i w_i H(r_i)`, with :math:`0 \log 0 = 0`.
    """
    m = logsumexp(joint, axis=1)
    if not np.all(np.isfinite(m)):
        raise ValueError(
            f"{int((~np.isfinite(m)).sum())} {zero_likelihood}; use smoothing='laplace' or a prior with "
            "concentrations above 1"
        )
    log_r = joint - m[:, None]
    R = np.exp(log_r)
    entropy = -float(np.dot(w, (R * np.where(R > 0, log_r, 0.0)).sum(axis=1)))
    return R, float(np.dot(w, m)), entropy


def _check_weight(lam, name):
    if isinstance(lam, (bool, np.bool_)) or not isinstance(lam, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {lam!r}")
    if not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"{name} must be finite and >= 0, got {lam!r}")


#: The scores ``unlabelled_weight="auto"`` can choose the weight by (``weight_criterion``).
_WEIGHT_CRITERIA = ("accuracy", "log_score")


def _choose_index(criterion, margin, zero, curves):
    r"""Index of the chosen weight: the rule of ``unlabelled_weight="auto"``.

    Parameters
    ----------
    criterion : {"accuracy", "log_score"}
    margin : float
        ``weight_margin``.
    zero : int
        Index of the weight 0 in the grid.
    curves : dict
        ``{"accuracy": (mean, gain, gain_se), "log_score": (mean, gain, gain_se)}``, each
        an ndarray of shape (n_weights,): the cross-validated mean score per weight, its
        mean paired gain over weight 0 and that gain's standard error.

    Returns
    -------
    int
        The eligible weight of best mean ``criterion``, ties to the better mean of the
        other score, then to the first (smallest) weight. Weight 0 is always eligible;
        another weight is when its gain in ``criterion`` exceeds ``margin`` standard
        errors, or, for ``"accuracy"``, when it loses no accuracy (gain >= 0) and its
        log-score gain exceeds ``margin`` standard errors (an accuracy already at its
        ceiling cannot show a gain, but the probabilities can still improve).
    """
    mean, gain, gain_se = curves[criterion]
    other = curves["log_score" if criterion == "accuracy" else "accuracy"][0]
    eligible = gain > margin * gain_se
    if criterion == "accuracy":
        _, log_gain, log_gain_se = curves["log_score"]
        eligible |= (gain >= 0) & (log_gain > margin * log_gain_se)
    eligible[zero] = True
    best = max(np.flatnonzero(eligible), key=lambda g: (mean[g], other[g], -g))
    return int(best)


def _weighted_mean_se(values, w):
    r"""Weighted mean of ``values`` (rows on the last axis) and its standard error.

    With unit weights the standard error is the textbook :math:`s / \sqrt{n}` (``ddof=1``);
    with weights, the ratio estimator's :math:`\sqrt{n/(n-1)\,\sum_i w_i^2 (v_i - \bar v)^2} / \sum_i w_i`,
    which reduces to it.
    """
    n = values.shape[-1]
    total = w.sum()
    mean = (values * w).sum(axis=-1) / total
    if n < 2:
        return mean, np.full_like(mean, np.inf)
    dev = values - mean[..., None]
    return mean, np.sqrt(n / (n - 1) * (w**2 * dev**2).sum(axis=-1)) / total


class SemiSupervisedNB(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    r"""Naive Bayes from labelled and unlabelled rows, by MAP-EM or mean-field variational Bayes.

    See :mod:`bayesnb.estimators.semi_supervised` for the model, the objective of each
    method and Nigam's Laplace smoothing.

    Parameters
    ----------
    estimator : bayesnb estimator, default=None
        The naive Bayes model (prior, family, class proportions); cloned. None:
        :class:`~bayesnb.MultinomialNB`. Its family needs ``log_density`` for ``"em"``
        and ``expected_log_likelihood`` for ``"vb"``: multinomial, Bernoulli,
        categorical, Poisson, exponential, Gaussian (diagonal), multivariate Gaussian
        (:class:`~bayesnb.GaussianBayesClassifier`, full or shared covariance) and a
        :class:`~bayesnb.MixedNB` whose blocks all have them. An estimator with
        ``calibrate="loo"`` gets its map fitted to the labelled rows' leave-one-out
        scores under the final model (each labelled row downdated from the final
        expected statistics, the unlabelled responsibilities held: approximate); with
        several components the map is this estimator's ``calibration_``, fitted alike
        (see the module, *Calibration*). :class:`~bayesnb.PolyaNB`
        is refused by both methods, with the reason: its :math:`\alpha` is a point
        hyperparameter with no prior (no :math:`q(\alpha)`, and the
        Dirichlet-multinomial has no conjugate prior in :math:`\alpha`, so no closed-form
        expectation), and its fit sets :math:`\alpha` partly by smoothing rather than
        by maximising a fixed objective (no monotone EM). Laplace smoothing needs
        concentrations to raise: use ``smoothing="none"`` with a Gaussian family or
        block. A :class:`~bayesnb.CategoricalNB` learns its table of categories
        (``n_categories_``, a DataFrame's ``categories_``) from every row, labelled or
        not, as its own ``fit`` on all of them would: a category seen only in unlabelled
        rows is modelled, with its responsibility-weighted counts.
    method : {"em", "vb"}, default="em"
    unlabelled_weight : "auto" or float, default="auto"
        Nigam's :math:`\lambda`: the weight of every unlabelled row relative to a
        labelled one (``1``: plain EM / VB; ``0``: the labelled-only fit, the same
        estimate). ``"auto"`` chooses it from the labelled rows alone (EM-:math:`\lambda`,
        Nigam et al. 2000, section 5.3), by stratified ``weight_cv``-fold
        cross-validation: for each fold and each :math:`\lambda` in ``weight_grid``,
        this estimator with that weight is fitted on the fold's labelled rows plus *all*
        unlabelled rows, and scores each held-out labelled row by whether its predicted
        class is right and by its log predictive :math:`\log p(y_i \mid x_i)`. The
        weight with the highest mean score of ``weight_criterion`` is chosen among ``0``
        and the weights whose mean gain over ``0`` in that score exceeds
        ``weight_margin`` standard errors of the paired per-row differences; otherwise
        the fit falls back to ``0`` (unlabelled rows that do not demonstrably help are
        not used). The folds
        are ``StratifiedKFold(n_splits, shuffle=True, random_state=0)`` over the
        labelled rows, ``n_splits = min(weight_cv, smallest class count)``; with a class
        of a single labelled row no fold can hold it out, and the weight is ``0`` (with a
        warning). Cost: ``n_splits * (len(weight_grid) - 1)`` extra EM / VB fits.
    weight_grid : sequence of float, default=(0.0, 0.01, 0.1, 1.0)
        The weights ``"auto"`` compares; it must contain ``0`` (the fallback).
    weight_cv : int, default=3
        Folds of the cross-validation of ``"auto"`` (at most the smallest class count).
    weight_margin : float, default=1.0
        How many standard errors of the paired per-row score differences a weight's mean
        gain over ``0`` must exceed for ``"auto"`` to choose it.
    weight_criterion : {"accuracy", "log_score"}, default="accuracy"
        The held-out score ``"auto"`` decides by: ``"accuracy"`` (the fraction of
        held-out labelled rows whose predicted class is right; ties between weights go
        to the better mean log predictive; a weight that loses no accuracy is also
        eligible when its log-predictive gain exceeds the margin, since an accuracy at
        its ceiling cannot show a gain), or ``"log_score"`` (the mean log predictive
        :math:`\log p(y_i \mid x_i)`; ties to the better accuracy). Both are in
        ``weight_curve_`` whichever decides. Accuracy is the default because the log
        score of an uncalibrated naive Bayes on text is dominated by a few confident
        mistakes on the longest documents: on 20 Newsgroups (20 classes, two labelled
        subsets each of about 5 and 20 documents per class, 6,000 unlabelled) the
        3-fold gain of :math:`\lambda = 1` over 0 was -121 and -121 nats per row at 5
        per class and -21 and -39 at 20, while its test log loss was *lower* than the
        labelled-only model's in all four, so ``"log_score"`` declines every gain there;
        accuracy is bounded, and declines the weights that make the classes worse
        (the guide's executed example). ``"log_score"`` suits a calibrated wrapped
        estimator (``calibrate="loo"``), whose probabilities are the thing to protect.
    smoothing : {"laplace", "none"}, default="laplace"
        EM's M-step: the MAP under the prior with every concentration raised by one
        (``"laplace"``, the posterior mean under the prior), or under the prior itself.
        Ignored by ``"vb"``.
    max_iter : int, default=100
        At most this many iterations (a ``ConvergenceWarning`` when reached first).
    tol : float, default=1e-8
        Stop when an iteration raises the objective by less than
        ``tol * max(1, |objective|)``.
    batch_size : int or None, default=None
        Run each E-step over the unlabelled rows in batches of this many rows (None: all
        at once). The responsibilities' statistics and the terms of the objective are
        sums over rows, so they are summed over batches and the fit is the same to
        rounding; a batch bounds the memory of the (rows, classes) arrays and of the
        weighted row copies.
    verbose : bool or int, default=False
        Progress on stderr for long runs (no dependency): ``True`` / 1, one line per
        iteration (``iteration i/max_iter``, the objective and its change); 2, also a
        line over the batches of each E-step, rewritten in place (with ``batch_size``).
    n_components : int, dict, sequence of int or "auto", default=1
        Mixture components per class (see the module, *Several components per class*):
        an int for every class, a dict label -> int (classes it leaves out get 1), one
        int per class in the order of ``classes_``, or ``"auto"`` (each class's number
        chosen from ``component_grid`` by cross-validated held-out labelled likelihood).
        1 for every class: the one-component model. A class needs at least as many
        distinct labelled rows as components. Fixed class proportions and a numeric
        ``temperature`` on the wrapped estimator are taken (shares learned within each
        class; the class's mixture likelihood tempered), and so is ``calibrate="loo"``
        (an approximate leave-one-out, see the module, *Calibration*);
        ``temperature="loo"`` is refused (see the module, *Limits*).
    random_state : int, numpy Generator or None, default=0
        Seeds the initial split of each class's distinct labelled rows among its
        components (used only with several components): the fit is deterministic given it.
    component_grid : sequence of int, default=(1, 2, 3, 4)
        The numbers of components ``n_components="auto"`` compares for every class.
    component_cv : int, default=3
        Folds of the cross-validation of ``n_components="auto"`` (at most the smallest
        class count; with a class of one labelled row every class gets 1 component,
        with a warning).

    Attributes
    ----------
    estimator_ : the fitted wrapped estimator (statistics: the final expected ones)
    unlabelled_weight_ : float
        The weight of the final fit (``unlabelled_weight`` itself when a number).
    weight_curve_ : dict or None
        With ``"auto"`` (and unlabelled rows, and at least 2 labelled rows per class):
        ``grid`` (sorted weights), ``mean`` (mean held-out labelled log predictive per
        weight), ``se`` (its standard error), ``gain`` and ``gain_se`` (the mean paired
        per-row difference from weight ``0`` and its standard error), ``scores`` (the
        per-row scores, shape ``(len(grid), n_labelled)``); the same for accuracy:
        ``accuracy``, ``accuracy_se``, ``accuracy_gain``, ``accuracy_gain_se`` and
        ``correct`` (1 where the held-out row's predicted class is its class, else 0,
        shape ``(len(grid), n_labelled)``); ``criterion`` (``weight_criterion``),
        ``n_splits`` and ``chosen``. None otherwise.
    classes_ : ndarray of shape (n_classes,)
        The labels of the labelled rows (``-1`` excluded).
    log_posterior_ : ndarray of shape (n_iter_,)
        EM: the log posterior at each iteration's parameters (non-decreasing).
    elbo_ : ndarray of shape (n_iter_,)
        VB: the evidence lower bound after each iteration (non-decreasing).
    n_iter_ : int
    converged_ : bool
    label_distributions_ : ndarray of shape (n_samples, n_classes)
        Responsibilities of the training rows (one-hot for labelled rows); with
        components, summed over each class's components.
    n_components_ : int ndarray of shape (n_classes,)
        Components of each class (with ``"auto"``: the chosen numbers).
    components_curve_ : dict or None
        With ``n_components="auto"``: ``grid`` (the candidate numbers), ``mean`` (shape
        ``(n_classes, len(grid))``, the mean held-out class-conditional log likelihood of
        each class's labelled rows; ``-inf`` where a number is not a candidate),
        ``scores`` (the per-row scores, shape ``(len(grid), n_labelled)``, NaN where not
        a candidate), ``n_splits`` and ``chosen``. None otherwise.
    component_class_ : int ndarray of shape (n_components_total,)
        Class index of each component (components grouped by class); ``arange(n_classes)``
        with one component per class.
    component_weights_ : ndarray of shape (n_components_total,)
        With several components: the proportions :math:`\pi_k` of the (class,
        component) pairs under the fit's estimate (EM: the M-step's; VB: the mean of
        :math:`q(\pi)`), summing to 1; with fixed class proportions, each class's add
        up to its proportion.
    component_responsibilities_ : ndarray of shape (n_samples, n_components_total)
        With several components: every training row's responsibilities over the
        components (a labelled row's over its class's components only).
    initial_responsibilities_ : ndarray of shape (n_labelled, n_components_total)
        With several components: the labelled rows' one-hot start (see ``random_state``).
    calibration_ : CalibrationMap or None
        With several components: the map of the wrapped estimator's ``calibrate="loo"``
        over the classes' probabilities (None without); with one component the map is
        ``estimator_.calibration_``.
    calibration_approximations_ : tuple of str
        Why the leave-one-out scores the map was fitted to are not exact (empty: no map).

    With several components, ``estimator_`` is the wrapped estimator with one *class*
    per component (``classes_ = arange(n_components_total)``): its ``posterior_``,
    ``class_posterior_`` (the Dirichlet over the component weights) and ``stats_`` are
    per component, and so are this object's properties of those names.
    transduction_ : ndarray of shape (n_samples,)
        Labels of the training rows (the most probable class for unlabelled ones).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, SemiSupervisedNB
    >>> X = np.array([[5, 0], [4, 1], [0, 5], [1, 4], [6, 1], [0, 6]])
    >>> y = np.array([0, -1, 1, -1, -1, -1])
    >>> clf = SemiSupervisedNB(MultinomialNB(), method="vb", unlabelled_weight=1).fit(X, y)
    >>> clf.transduction_.tolist()
    [0, 0, 1, 1, 0, 1]
    >>> bool(np.all(np.diff(clf.elbo_) >= -1e-9))
    True

    The default chooses the weight from the labelled rows (here 2 per class):

    >>> y = np.array([0, 0, 1, 1, -1, -1])
    >>> clf = SemiSupervisedNB(MultinomialNB(), weight_cv=2).fit(X, y)
    >>> clf.weight_curve_["grid"].tolist(), clf.unlabelled_weight_ in clf.weight_curve_["grid"]
    ([0.0, 0.01, 0.1, 1.0], True)
    """

    def __init__(
        self,
        estimator=None,
        *,
        method="em",
        unlabelled_weight="auto",
        weight_grid=(0.0, 0.01, 0.1, 1.0),
        weight_cv=3,
        weight_margin=1.0,
        weight_criterion="accuracy",
        smoothing="laplace",
        max_iter=100,
        tol=1e-8,
        batch_size=None,
        verbose=False,
        n_components=1,
        random_state=0,
        component_grid=(1, 2, 3, 4),
        component_cv=3,
    ):
        self.estimator = estimator
        self.method = method
        self.unlabelled_weight = unlabelled_weight
        self.weight_grid = weight_grid
        self.weight_cv = weight_cv
        self.weight_margin = weight_margin
        self.weight_criterion = weight_criterion
        self.smoothing = smoothing
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.verbose = verbose
        self.n_components = n_components
        self.random_state = random_state
        self.component_grid = component_grid
        self.component_cv = component_cv

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        if self.smoothing not in _SMOOTHING:
            raise ValueError(f"smoothing must be one of {_SMOOTHING}, got {self.smoothing!r}")
        lam = self.unlabelled_weight
        if isinstance(lam, str):
            if lam != "auto":
                raise ValueError(f"unlabelled_weight must be 'auto' or a number >= 0, got {lam!r}")
            self._check_weight_search()
        else:
            _check_weight(lam, "unlabelled_weight")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an int >= 1, got {self.max_iter!r}")
        if not (isinstance(self.tol, (int, float, np.integer, np.floating)) and np.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be a finite number >= 0, got {self.tol!r}")
        b = self.batch_size
        if b is not None and (isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, np.integer)) or b < 1):
            raise ValueError(f"batch_size must be None or an int >= 1, got {b!r}")
        _components.check_n_components(self.n_components)
        if self.n_components == "auto":
            grid = self.component_grid
            if isinstance(grid, str) or np.ndim(grid) != 1 or len(grid) == 0:
                raise ValueError(f"component_grid must be a non-empty sequence of ints >= 1, got {grid!r}")
            _components.check_n_components(list(grid))
            cv = self.component_cv
            if isinstance(cv, (bool, np.bool_)) or not isinstance(cv, (int, np.integer)) or cv < 2:
                raise ValueError(f"component_cv must be an int >= 2, got {cv!r}")

    def _check_weight_search(self):
        grid = self.weight_grid
        if isinstance(grid, str) or np.ndim(grid) != 1 or len(grid) == 0:
            raise ValueError(f"weight_grid must be a non-empty sequence of numbers, got {grid!r}")
        for lam in grid:
            _check_weight(lam, "every weight_grid value")
        if not np.any(np.asarray(grid, dtype=float) == 0):
            raise ValueError(f"weight_grid must contain 0 (the labelled-only fit, the fallback), got {grid!r}")
        cv = self.weight_cv
        if isinstance(cv, (bool, np.bool_)) or not isinstance(cv, (int, np.integer)) or cv < 2:
            raise ValueError(f"weight_cv must be an int >= 2, got {cv!r}")
        margin = self.weight_margin
        if isinstance(margin, (bool, np.bool_)) or not isinstance(margin, (int, float, np.integer, np.floating)):
            raise TypeError(f"weight_margin must be a number, got {margin!r}")
        if not (np.isfinite(margin) and margin >= 0):
            raise ValueError(f"weight_margin must be finite and >= 0, got {margin!r}")
        if not isinstance(self.weight_criterion, str) or self.weight_criterion not in _WEIGHT_CRITERIA:
            raise ValueError(
                f"weight_criterion must be one of {', '.join(map(repr, _WEIGHT_CRITERIA))}, got {self.weight_criterion!r}"
            )

    def _base(self):
        if self.estimator is None:
            from bayesnb.estimators.discrete import MultinomialNB

            return MultinomialNB()
        if not (hasattr(self.estimator, "posterior_from_stats") and hasattr(self.estimator, "validated_stats")):
            raise TypeError(f"estimator must be a bayesnb naive Bayes estimator, got {type(self.estimator).__name__}")
        return clone(self.estimator)

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y, sample_weight=None):
        """Fit on labelled rows and unlabelled rows (``y == -1``) together.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Dask array of shape (n_samples, n_features)
            A Dask array's labelled rows are computed once; its unlabelled rows are read
            one chunk of rows at a time in every E-step (one batch per chunk: the
            statistics of the responsibilities add over chunks), so they need not fit
            in memory together.
        y : array-like of shape (n_samples,)
            Class labels; ``-1`` marks an unlabelled row (for string labels, ``-1`` in an
            object array). At least one row must be labelled.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights (an unlabelled row's weight is multiplied by
            ``unlabelled_weight``).

        Returns
        -------
        self
        """
        self._check_params()
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)
        if self._may_have_components():
            # Before any fit: a refusal should not wait for the cross-validations.
            reason = _components.refusal(self._base())
            if reason is not None:
                raise ValueError(f"n_components={self.n_components!r} with {type(self._base()).__name__}: {reason}")
        y = column_or_1d(y if isinstance(y, np.ndarray) else np.asarray(y, dtype=object), warn=True)
        n = y.shape[0]
        unl = unlabelled_mask(y)
        if unl.all():
            raise ValueError("every row is unlabelled (y == -1): at least one labelled row is needed")
        w = check_sample_weight(sample_weight, n)
        w = np.ones(n) if w is None else w
        lab_idx, unl_idx = np.flatnonzero(~unl), np.flatnonzero(unl)
        y_lab = y[lab_idx]
        if y_lab.dtype == object:
            y_lab = np.asarray(y_lab.tolist())
        dask_rows = _is_dask_array(X)
        X_lab = np.asarray(X[lab_idx]) if dask_rows else _safe_indexing(X, lab_idx)

        components_curve = None
        fixed_components = self.n_components
        if self.n_components == "auto":
            fixed_components, components_curve = self._choose_components(
                X_lab, y_lab, None if sample_weight is None else w[lab_idx]
            )
        curve = None
        if self.unlabelled_weight != "auto":
            lam = float(self.unlabelled_weight)
        elif unl_idx.size == 0:
            lam = 0.0  # nothing to weigh: every weight is the labelled fit
        else:
            lam, curve = self._choose_weight(X, y, X_lab, y_lab, lab_idx, unl_idx, sample_weight, fixed_components)

        est = self._base()
        if self.method == "em":
            est.set_params(estimate="mean" if self.smoothing == "laplace" else "map")
        refusal = getattr(est, "_semi_supervised_refusal", {}).get(self.method)
        if refusal is not None:
            raise ValueError(f"SemiSupervisedNB(method={self.method!r}) cannot fit {type(est).__name__}: {refusal}")
        calibrate = est.get_params(deep=False).get("calibrate")
        if calibrate == "loo":
            # The map is fitted once, at the end, to the final model's scores (below); the
            # labelled fit's own would be replaced unused, at the same cost.
            est.set_params(calibrate=None)
        # The estimator's input layout (a table of categories) is learned from every row,
        # labelled or not: the unlabelled rows' statistics must fit it.
        est._fit_with_layout(
            _layout(X, dask_rows), X_lab, y_lab, sample_weight=None if sample_weight is None else w[lab_idx]
        )
        if calibrate == "loo":
            est.set_params(calibrate=calibrate)
        _freeze_hyperparameters(est)
        fam = est.family_
        needed = "log_density" if self.method == "em" else "expected_log_likelihood"
        if getattr(fam, needed, None) is None:
            raise ValueError(
                f"method={self.method!r} needs the family's {needed}, which the {fam.name!r} family "
                f"of {type(est).__name__} does not have"
            )

        classes = est.classes_
        labelled_index = np.searchsorted(classes, y_lab)
        XL = est.validate_input(X_lab)
        wU = lam * w[unl_idx]
        XU = None
        if unl_idx.size and dask_rows:
            # A Dask array: one batch per chunk of rows, computed afresh by every E-step
            # (out of core: one chunk in memory at a time).
            XU, start = [], 0
            for i, size in enumerate(X.chunks[0]):
                local = unl_idx[(unl_idx >= start) & (unl_idx < start + size)] - start
                if local.size:
                    take = np.searchsorted(unl_idx, local + start)
                    XU.append((_chunk_rows(est, X, i, local), wU[take]))
                start += size
        elif unl_idx.size:
            # The E-step runs over batches of unlabelled rows: their statistics and their
            # terms of the objective add up (see _e_step).
            step = unl_idx.size if self.batch_size is None else int(self.batch_size)
            XU = [
                (_held(est.validate_input(_safe_indexing(X, unl_idx[a : a + step]))), wU[a : a + step])
                for a in range(0, unl_idx.size, step)
            ]
        counts = _components.resolve(fixed_components, classes)
        mixture = self._uses_components(counts)
        if mixture:
            labelled_fit = est
            with self._components_named(classes):
                est, R, trace, converged, R_L, S_R = self._fit_components(
                    est, X_lab, XL, labelled_index, None if sample_weight is None else w[lab_idx], w[lab_idx], XU,
                    counts, _layout(X, dask_rows),
                )
            self.calibration_ = None
            if labelled_fit.get_params(deep=False).get("calibrate") == "loo":
                shares = _components.within_class_shares(labelled_fit, self.component_class_)
                # Downdated from the statistics of the fitted responsibilities (EM: one
                # M-step beyond estimator_, equal to it to the convergence tolerance).
                base = est if S_R is None else _refit(est, S_R)
                with self._components_named(classes):
                    if shares is not None:
                        base = shares.conditioned(base, shares.log_weights(base.stats_.class_count, self._shares_kind()))
                    log_proba = self._mixture_loo_log_proba(base, X_lab, XL, R_L, w[lab_idx], shares, lab_idx)
                self.calibration_ = _calibration.choose(
                    log_proba, labelled_index, weight=w[lab_idx], estimate=est.estimate,
                    temperature=self._mixture_temperature(),
                )
        else:
            run = self._em if self.method == "em" else self._vb
            est, R, trace, converged = run(est, XL, labelled_index, w[lab_idx], XU)

        if not converged:
            warnings.warn(
                f"SemiSupervisedNB(method={self.method!r}) stopped at max_iter={self.max_iter} before the "
                f"objective settled to tol={self.tol:g}; raise max_iter",
                ConvergenceWarning,
                stacklevel=2,
            )
        if getattr(est, "calibrate", None) == "loo":
            # The map belongs to the final model's scores: fitted to the labelled rows'
            # leave-one-out scores under the final expected statistics (each labelled row
            # downdated; the unlabelled rows' responsibilities held at their fitted
            # values, which that row helped to set: an approximate leave-one-out).
            w_lab = w[lab_idx]
            try:
                terms = est.loo_terms(X_lab, y_lab, sample_weight=w_lab)
            except _dirichlet.MapRefusal as err:  # its row is a position among the labelled rows
                raise err.at_row(None if err.row is None else lab_idx[err.row]) from None
            est._fit_calibration(terms, w_lab)
        self.estimator_ = est
        self.classes_ = classes
        self.unlabelled_weight_ = lam
        self.weight_curve_ = curve
        self.n_iter_ = len(trace)
        self.converged_ = converged
        setattr(self, "log_posterior_" if self.method == "em" else "elbo_", np.asarray(trace))
        self.n_components_ = counts
        self.components_curve_ = components_curve
        self._mixture = mixture
        if mixture:
            cc = self.component_class_
            resp = np.zeros((n, cc.size))
            resp[lab_idx] = R_L
            if unl_idx.size:
                resp[unl_idx] = R
            self.component_responsibilities_ = resp
            with self._components_named(classes):
                self.component_weights_ = np.exp(est.class_log_prior_)
            dist = np.zeros((n, classes.size))
            np.add.at(dist.T, cc, resp.T)
        else:
            self.component_class_ = np.arange(classes.size)
            dist = np.zeros((n, classes.size))
            dist[lab_idx, labelled_index] = 1.0
            if unl_idx.size:
                dist[unl_idx] = R
        self.label_distributions_ = dist
        self.transduction_ = classes[np.argmax(dist, axis=1)]
        return self

    def _choose_weight(self, X, y, X_lab, y_lab, lab_idx, unl_idx, sample_weight, n_components=None):
        r"""``unlabelled_weight="auto"``: the weight of ``weight_grid`` chosen by cross-validation of the labelled rows.

        Each labelled row is held out once (stratified folds); for every weight this
        estimator is refitted on the other labelled rows plus all unlabelled rows, and
        the row gets two scores under that fit: its log predictive
        :math:`\log p(y_i \mid x_i)` and whether the predicted class is its class (1 or
        0). ``weight_criterion`` names the score that decides: a weight above ``0`` is
        eligible only if its mean paired gain over ``0`` in that score exceeds
        ``weight_margin`` standard errors (the labelled-only model is the safe default,
        and a small labelled set cannot tell a slight gain from noise); the eligible
        weight with the best mean of that score is chosen, ties going to the better
        mean of the other score, then to the smaller weight.

        Returns
        -------
        lam : float
        curve : dict or None
            See ``weight_curve_``.
        """
        from sklearn.model_selection import StratifiedKFold

        grid = np.unique(np.asarray(self.weight_grid, dtype=float))
        smallest = int(np.unique(y_lab, return_counts=True)[1].min())
        n_splits = min(int(self.weight_cv), smallest)
        if n_splits < 2:
            warnings.warn(
                "unlabelled_weight='auto' needs at least 2 labelled rows in every class to cross-validate "
                "the weight; a class has 1, so the unlabelled rows are not used (weight 0)",
                UserWarning,
                stacklevel=3,
            )
            return 0.0, None
        w_lab = np.ones(lab_idx.size) if sample_weight is None else np.asarray(sample_weight, float)[lab_idx]
        folds = StratifiedKFold(n_splits, shuffle=True, random_state=0).split(np.zeros(lab_idx.size), y_lab)
        scores = np.empty((grid.size, lab_idx.size))
        correct = np.empty((grid.size, lab_idx.size))
        not_converged = 0
        for train, test in folds:
            rows = np.concatenate([lab_idx[train], unl_idx])
            X_fold = X[rows] if _is_dask_array(X) else _safe_indexing(X, rows)
            w_fold = None if sample_weight is None else np.asarray(sample_weight, float)[rows]
            X_test = _safe_indexing(X_lab, test)
            for g, lam in enumerate(grid):
                sub = clone(self).set_params(unlabelled_weight=float(lam), verbose=False)
                if n_components is not None:
                    sub.set_params(n_components=n_components)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    sub.fit(X_fold, y[rows], sample_weight=w_fold)
                not_converged += any(issubclass(c.category, ConvergenceWarning) for c in caught)
                index = np.searchsorted(sub.classes_, y_lab[test])
                log_proba = sub.predict_log_proba(X_test)
                scores[g, test] = log_proba[np.arange(test.size), index]
                # predict's own rule (the first class of the largest probability)
                correct[g, test] = np.argmax(log_proba, axis=1) == index
        if not_converged:
            warnings.warn(
                f"unlabelled_weight='auto': {not_converged} cross-validation fit(s) stopped at "
                f"max_iter={self.max_iter} before the objective settled; raise max_iter",
                ConvergenceWarning,
                stacklevel=3,
            )
        zero = int(np.flatnonzero(grid == 0)[0])
        mean, se = _weighted_mean_se(scores, w_lab)
        gain, gain_se = _weighted_mean_se(scores - scores[zero], w_lab)
        accuracy, accuracy_se = _weighted_mean_se(correct, w_lab)
        accuracy_gain, accuracy_gain_se = _weighted_mean_se(correct - correct[zero], w_lab)
        gain_se[zero] = accuracy_gain_se[zero] = 0.0
        chosen = float(grid[_choose_index(
            self.weight_criterion, self.weight_margin, zero,
            {"log_score": (mean, gain, gain_se), "accuracy": (accuracy, accuracy_gain, accuracy_gain_se)},
        )])
        if self.verbose:
            for g, lam in enumerate(grid):
                print(f"SemiSupervisedNB[auto] weight {lam:g}: mean log p(y|x) {mean[g]:.6g} ± {se[g]:.2g} "
                      f"(gain over 0: {gain[g]:+.3g} ± {gain_se[g]:.2g}); accuracy {accuracy[g]:.4f} "
                      f"(gain over 0: {accuracy_gain[g]:+.4f} ± {accuracy_gain_se[g]:.2g})", file=sys.stderr, flush=True)
            print(f"SemiSupervisedNB[auto] chosen weight {chosen:g} by {self.weight_criterion}", file=sys.stderr,
                  flush=True)
        curve = {"grid": grid, "mean": mean, "se": se, "gain": gain, "gain_se": gain_se, "scores": scores,
                 "accuracy": accuracy, "accuracy_se": accuracy_se, "accuracy_gain": accuracy_gain,
                 "accuracy_gain_se": accuracy_gain_se, "correct": correct,
                 "criterion": self.weight_criterion, "n_splits": n_splits, "chosen": chosen}
        return chosen, curve

    def _choose_components(self, X_lab, y_lab, w_lab):
        r"""``n_components="auto"``: each class's number of components by held-out labelled likelihood.

        See the module (*Choosing* :math:`K_c`). Returns the chosen numbers (a list, one
        per class in sorted label order) and the curve (see ``components_curve_``).
        """
        from sklearn.model_selection import StratifiedKFold

        grid = np.unique(np.asarray(self.component_grid, dtype=np.int64))
        classes, y_idx = np.unique(y_lab, return_inverse=True)
        n_classes, n = classes.size, y_idx.size
        n_splits = min(int(self.component_cv), int(np.bincount(y_idx).min()))
        if n_splits < 2:
            warnings.warn(
                "n_components='auto' needs at least 2 labelled rows in every class to cross-validate the "
                "numbers of components; a class has 1, so every class gets 1 component",
                UserWarning,
                stacklevel=3,
            )
            return [1] * n_classes, None
        w = np.ones(n) if w_lab is None else np.asarray(w_lab, dtype=np.float64)
        scores = np.full((grid.size, n), np.nan)
        # A class starts at most as many components as it has distinct rows (copies of a
        # row start in one): the labelled rows as the estimator sees them, validated once.
        ids = _components.row_groups(self._base().fit(X_lab, y_lab, sample_weight=w_lab).validate_input(X_lab))
        folds = StratifiedKFold(n_splits, shuffle=True, random_state=0).split(np.zeros(n), y_idx)
        for train, test in folds:
            n_train = _components.distinct_per_class(ids[train], y_idx[train], n_classes)
            X_train, X_test = _safe_indexing(X_lab, train), _safe_indexing(X_lab, test)
            for g, k in enumerate(grid):
                counts = np.minimum(k, n_train)
                sub = clone(self).set_params(
                    n_components=[int(v) for v in counts], unlabelled_weight=0.0, verbose=False
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    sub.fit(X_train, y_lab[train], sample_weight=None if w_lab is None else w[train])
                cond = sub.predict_joint_log_proba(X_test) - sub._class_log_weights()
                rows = y_idx[test]
                scores[g, test] = np.where(counts[rows] == k, cond[np.arange(test.size), rows], np.nan)
        mean = np.full((n_classes, grid.size), -np.inf)
        for c in range(n_classes):
            mine = y_idx == c
            for g in range(grid.size):
                if not np.any(np.isnan(scores[g, mine])):
                    mean[c, g] = np.dot(w[mine], scores[g, mine]) / w[mine].sum()
        chosen = [int(grid[np.argmax(mean[c])]) for c in range(n_classes)]  # argmax: the first of ties
        if self.verbose:
            for c in range(n_classes):
                curve = ", ".join(f"{k}: {m:.6g}" for k, m in zip(grid, mean[c]))
                print(f"SemiSupervisedNB[auto] class {classes[c]!r} held-out log p(x|y) by components: {curve}; "
                      f"chosen {chosen[c]}", file=sys.stderr, flush=True)
        return chosen, {"grid": grid, "mean": mean, "scores": scores, "n_splits": n_splits, "chosen": np.array(chosen)}

    def _class_log_weights(self):
        r"""Log class proportions :math:`\log\pi_c` of the fitted estimate (summed over a class's components)."""
        est = self._fitted()
        if not self._has_components():
            return np.asarray(est.class_log_prior_, dtype=np.float64)
        with self._components_named(self.classes_):
            log_pi = np.asarray(est.class_log_prior_, dtype=np.float64)
        return _components.sum_components(log_pi[None, :], self.component_class_, self.classes_.size)[0]

    @contextlib.contextmanager
    def _components_named(self, classes):
        """A refusal of ``estimate='map'`` by the component model names the component and its class.

        The component model's classes are the components ``0 .. M-1``: its "class 3" is
        component 3 of this model's class ``classes[component_class_[3]]``.
        """
        try:
            yield
        except _dirichlet.MapRefusal as err:
            if err.class_index is None:
                raise
            k = int(err.class_index)
            words = f"component {k} of {_class_prior.class_words(classes, int(self.component_class_[k]))}"
            raise err.naming_class(words, "component") from None

    def _soft_stats(self, est, XU, R, wU):
        r"""Statistics of the unlabelled rows, each class's copy weighted by its responsibility.

        One call over the (row, class) pairs of positive weight: a copy of row ``i`` for
        class ``c`` with weight :math:`\lambda w_i r_{ic}`. Pairs of weight exactly zero
        (responsibilities that underflow, as they do for long documents) add nothing
        and are left out, which keeps the cost near one pass over the rows.
        """
        W = wU[:, None] * R
        rows, cls = np.nonzero(W > 0)
        if rows.size == 0:
            return None
        return est.validated_stats(_take_rows(XU, rows), cls, W[rows, cls])

    def _e_step(self, est, batches, joint_of):
        r"""One pass over the batches of unlabelled rows.

        ``joint_of(X, mask)`` is the (n_rows, n_classes) log joint of a batch's rows (the
        plug-in one for EM, the expected one for VB). Returns the responsibilities of
        every unlabelled row, :math:`\sum_i \lambda w_i \log\sum_c e^{j_{ic}}`, the
        weighted entropy :math:`\sum_i \lambda w_i H(r_i)` and the statistics of the
        responsibility-weighted rows: every one of them a sum over rows, so a sum over
        batches (the batches' statistics merge like any statistics).
        """
        Rs, total, entropy, stats = [], 0.0, 0.0, None
        for rows_of, wU in batches:
            XU = rows_of()
            XUd, mU = _parts(XU)
            R, part_total, part_entropy = _responsibilities(
                joint_of(XUd, mU), wU, "unlabelled row(s) have zero likelihood under every class with the MAP "
                f"parameters (smoothing={self.smoothing!r})"
            )
            total += part_total
            entropy += part_entropy
            part = self._soft_stats(est, XU, R, wU)
            stats = part if stats is None else (stats if part is None else _merge(stats, part))
            Rs.append(R)
            self._report_batch(len(Rs), len(batches))
        return np.vstack(Rs), total, entropy, stats

    def _condition(self, est, S_L, S_U):
        return _refit(est, S_L if S_U is None else _merge(S_L, S_U))

    def _converged(self, trace):
        if len(trace) < 2:
            return False
        return trace[-1] - trace[-2] <= self.tol * max(1.0, abs(trace[-1]))

    def _report(self, it, value, previous=None):
        """The progress line of iteration ``it`` on stderr (``verbose``)."""
        if self.verbose:
            name = "log posterior" if self.method == "em" else "ELBO"
            change = "" if previous is None else f" (change {value - previous:+.3g})"
            print(
                f"SemiSupervisedNB[{self.method}] iteration {it + 1}/{self.max_iter}: {name} {value:.10g}{change}",
                file=sys.stderr,
                flush=True,
            )

    def _report_batch(self, done, total):
        """With ``verbose >= 2`` and several batches: a progress line over the batches, rewritten in place."""
        if self.verbose >= 2 and total > 1:
            end = "\n" if done == total else ""
            print(f"\r  E-step: batch {done}/{total}", end=end, file=sys.stderr, flush=True)

    def _em(self, est, XL, yL, wL, XU):
        fam = est.family_
        kind = "mean" if self.smoothing == "laplace" else "map"
        raise_by = 1.0 if self.smoothing == "laplace" else 0.0
        S_L = est.stats_
        XLd, mL = _parts(XL)
        probe, trace, R, converged = est, [], None, False
        for it in range(self.max_iter):
            prior = probe.prior_
            theta = probe._point(kind)  # the family's point; a refusal of "map" in the user's words
            log_pi = probe.class_log_prior_
            objective = fam.log_density(prior, theta, raise_by)
            if probe.class_dirichlet_ is not None:
                objective += _dirichlet.log_density(np.asarray(probe.class_dirichlet_.concentration) + raise_by, log_pi)
            joint_L = fam.log_likelihood(theta, XLd, prior, mask=mL) + log_pi
            objective += float(np.dot(wL, joint_L[np.arange(yL.size), yL]))
            S_U = None
            if XU is not None:
                R, total, _, S_U = self._e_step(
                    est, XU, lambda X, mask: fam.log_likelihood(theta, X, prior, mask=mask) + log_pi
                )
                objective += total
            trace.append(float(objective))
            self._report(it, trace[-1], trace[-2] if len(trace) > 1 else None)
            if self._converged(trace) or XU is None:
                converged = True
                break
            probe = self._condition(est, S_L, S_U)
        return probe, R, trace, converged

    def _vb(self, est, XL, yL, wL, XU):
        fam = est.family_
        S_L = est.stats_
        probe, trace, R, converged = est, [], None, False
        for it in range(self.max_iter):
            entropy = 0.0
            if XU is not None:
                post = probe.posterior_
                if probe.class_posterior_ is not None:
                    e_log_pi = np.asarray(_dirichlet.expected_log(probe.class_posterior_.concentration))
                else:
                    e_log_pi = probe.class_log_prior_
                R, _, entropy, S_U = self._e_step(
                    est, XU, lambda X, mask: fam.expected_log_likelihood(post, X, mask=mask) + e_log_pi
                )
                probe = self._condition(est, S_L, S_U)
            trace.append(float(probe.log_evidence()) + entropy)
            self._report(it, trace[-1], trace[-2] if len(trace) > 1 else None)
            if self._converged(trace) or XU is None:
                converged = True
                break
        return probe, R, trace, converged

    # ------------------------------------------------------------------ mixture components
    def _may_have_components(self):
        """Whether ``n_components`` (or, with ``"auto"``, ``component_grid``) names more than one component anywhere."""
        k = self.n_components
        values = self.component_grid if isinstance(k, str) else (list(k.values()) if isinstance(k, dict) else k)
        return bool(np.any(np.asarray(values) > 1))

    def _uses_components(self, counts):
        """Whether the fit runs over mixture components (some class has more than one)."""
        return bool(np.any(counts > 1))

    def _fit_components(self, est, X_lab, XL, yL, w_given, wL, XU, counts, layout):
        r"""EM or VB with ``counts[c]`` components for class ``c`` (see :mod:`bayesnb.estimators._components`).

        Returns the fitted component estimator, the unlabelled rows' responsibilities
        over the components, the trace, whether it converged, the labelled rows'
        responsibilities over the components, and the statistics of those
        responsibilities (VB: the fitted estimator's; EM: those of its next M-step).
        """
        reason = _components.refusal(est)
        if reason is not None:
            raise ValueError(f"n_components={self.n_components!r} with {type(est).__name__}: {reason}")
        cc = np.repeat(np.arange(counts.size), counts)
        self.component_class_ = cc  # read by _components_named, which words a refusal of what follows
        comp = _components.initial_components(yL, counts, self.random_state, XL, wL)
        cest = _components.component_estimator(self._base(), est, X_lab, comp, w_given, cc, layout)
        if self.method == "em":
            cest.set_params(estimate=est.estimate)
        # Fixed class proportions: each class's shares of its components are learned
        # under their own Dirichlet, the class totals held (WithinClassShares).
        shares = _components.within_class_shares(est, cc)
        if shares is not None:
            cest = shares.conditioned(cest, shares.log_weights(cest.stats_.class_count, self._shares_kind()))
        R0 = np.zeros((yL.size, cc.size))
        R0[np.arange(yL.size), comp] = 1.0
        self.initial_responsibilities_ = R0
        allowed = _components.allowed_components(yL, cc)
        run = self._em_components if self.method == "em" else self._vb_components
        return run(cest, XL, allowed, wL, XU, shares)

    def _shares_kind(self):
        r"""The estimate of the components' shares: EM's M-step (Laplace: ``"mean"``, else ``"map"``); VB's mean of :math:`q`."""
        return "map" if self.method == "em" and self.smoothing == "none" else "mean"

    def _mixture_loo_log_proba(self, cest, X_lab, XL, R_L, w_lab, shares, training_rows):
        r"""The labelled rows' leave-one-out class log-probabilities under a mixture, *responsibilities held*.

        An approximate leave-one-out: row :math:`i` is downdated from the statistics of
        the fitted responsibilities (``component_responsibilities_``; ``cest`` is
        conditioned on them: for VB that is ``estimator_``, for EM one M-step beyond it,
        the same to the convergence tolerance), ``min(w_i, 1)`` copies of it as the
        single-component estimators leave one out, spread as its responsibilities
        :math:`r_{ik}` over its class's components, while every other row's
        responsibilities, which row :math:`i` helped to set, are held; an exact one would
        rerun EM / VB without the row. Then, under
        the fit's estimate and temperature,

        .. math::

            \log p(y = c \mid x_i, D_{-i}) \propto \log\pi^{-i}_c + \frac1T
            \log \sum_{k \in c} \frac{\pi^{-i}_k}{\pi^{-i}_c}\, p(x_i \mid \theta_k, D_{-i}),

        each component's predictive downdated by the family's closed form (the
        ``_loo_feature`` of the component estimator), the weights
        :math:`\pi^{-i}` those of the counts :math:`N - \min(w_i, 1)\, r_i`.

        ``training_rows`` are the labelled rows' positions in the training data, which a refusal
        of ``estimate='map'`` names.

        Returns
        -------
        ndarray of shape (n_labelled, n_classes)
        """
        cc = self.component_class_
        n_classes = int(cc.max()) + 1
        kind = cest.estimate
        v = np.minimum(np.asarray(w_lab, dtype=np.float64), 1.0)[:, None] * R_L
        take = v > 0
        empty = ~take.any(axis=1)  # a row of weight 0: downdated by nothing
        take[empty, np.argmax(R_L[empty], axis=1)] = True
        rows, comps = np.nonzero(take)
        try:
            F = np.asarray(cest._loo_feature(_take_rows(XL, rows), comps, v[rows, comps], kind), dtype=np.float64)
        except _dirichlet.UndefinedModeError as err:  # err.row is a (row, component) pair's position
            located = err if err.row is None else err.located(row=int(training_rows[rows[err.row]]))
            raise cest._feature_map_refusal(kind, located) from None
        ll = np.empty((R_L.shape[0], cc.size))
        ll[rows] = F  # the columns that are not row i's own component are not downdated
        ll[rows, comps] = F[np.arange(rows.size), comps]
        counts = np.asarray(cest.stats_.class_count, dtype=np.float64)
        # Weights without a mode on all the rows are refused as such, no row to blame.
        if shares is None:
            _class_prior.estimate_log(cest.class_dirichlet_, None, counts, kind)
        else:
            shares.log_weights(counts, kind)
        log_w = np.empty_like(ll)
        for i in range(ll.shape[0]):
            left = counts - v[i]
            try:
                if shares is None:
                    log_w[i] = _class_prior.point_log(cest.class_dirichlet_, left, kind)
                else:
                    log_w[i] = shares.log_weights(left, kind)
            except _dirichlet.UndefinedModeError as err:
                left_out = _dirichlet.UndefinedModeError(str(err), (i, *err.index), err.value)
                raise _class_prior.map_refusal(left_out, counts - v, rows=training_rows) from None
            except _dirichlet.MapRefusal as err:
                raise err.at_row(training_rows[i]) from None
        with np.errstate(invalid="ignore"):
            joint = _components.sum_components(log_w + ll, cc, n_classes)
            class_log_pi = _components.sum_components(log_w, cc, n_classes)
            joint = self._temper(joint, class_log_pi)
            return joint - logsumexp(joint, axis=1, keepdims=True)

    def _labelled_step(self, joint, allowed, wL):
        r"""Responsibilities of the labelled rows over their class's components.

        Returns the responsibilities, :math:`\sum_i w_i \log\sum_{k \in y_i} e^{j_{ik}}`
        and the weighted entropy :math:`\sum_i w_i H(r_i)`.
        """
        return _responsibilities(
            np.where(allowed, joint, -np.inf), wL,
            f"labelled row(s) have zero likelihood under every component of their class (smoothing={self.smoothing!r})",
        )

    def _em_components(self, cest, XL, allowed, wL, XU, shares=None):
        fam = cest.family_
        kind = "mean" if self.smoothing == "laplace" else "map"
        raise_by = 1.0 if self.smoothing == "laplace" else 0.0
        XLd, mL = _parts(XL)
        latent = XU is not None or bool(allowed.sum(axis=1).max() > 1)
        probe, trace, R, R_L, converged = cest, [], None, None, False
        for it in range(self.max_iter):
            prior = probe.prior_
            theta = probe._point(kind)  # the family's point; a refusal of "map" in the user's words
            log_pi = probe.class_log_prior_
            objective = fam.log_density(prior, theta, raise_by)
            if shares is None:
                objective += _dirichlet.log_density(np.asarray(probe.class_dirichlet_.concentration) + raise_by, log_pi)
            else:  # the class totals are fixed: only each class's shares have a prior
                objective += shares.log_density(probe.stats_.class_count, kind, raise_by)
            R_L, total, _ = self._labelled_step(fam.log_likelihood(theta, XLd, prior, mask=mL) + log_pi, allowed, wL)
            objective += total
            S = self._soft_stats(cest, XL, R_L, wL)
            if XU is not None:
                R, total, _, S_U = self._e_step(
                    cest, XU, lambda X, mask: fam.log_likelihood(theta, X, prior, mask=mask) + log_pi
                )
                objective += total
                S = S if S_U is None else _merge(S, S_U)
            trace.append(float(objective))
            self._report(it, trace[-1], trace[-2] if len(trace) > 1 else None)
            if self._converged(trace) or not latent:
                converged = True
                break
            probe = _refit(cest, S)
            if shares is not None:
                probe = shares.conditioned(probe, shares.log_weights(S.class_count, kind))
        return probe, R, trace, converged, R_L, S

    def _vb_components(self, cest, XL, allowed, wL, XU, shares=None):
        fam = cest.family_
        XLd, mL = _parts(XL)
        latent = XU is not None or bool(allowed.sum(axis=1).max() > 1)
        probe, trace, R, R_L, converged = cest, [], None, None, False
        for it in range(self.max_iter):
            post = probe.posterior_
            if shares is None:
                e_log_pi = np.asarray(_dirichlet.expected_log(probe.class_posterior_.concentration))
            else:
                e_log_pi = shares.expected_log_weights(probe.stats_.class_count)
            R_L, _, entropy = self._labelled_step(fam.expected_log_likelihood(post, XLd, mask=mL) + e_log_pi, allowed, wL)
            S = self._soft_stats(cest, XL, R_L, wL)
            if XU is not None:
                R, _, entropy_U, S_U = self._e_step(
                    cest, XU, lambda X, mask: fam.expected_log_likelihood(post, X, mask=mask) + e_log_pi
                )
                entropy += entropy_U
                S = S if S_U is None else _merge(S, S_U)
            probe = _refit(cest, S)
            if shares is None:
                evidence = float(probe.log_evidence())
            else:
                # q(theta) and each class's q(shares) given S; the predictions use the
                # shares' mean (the predictive under q of the component of a new row).
                probe = shares.conditioned(probe, shares.log_weights(S.class_count, "mean"))
                evidence = float(probe.family_.log_evidence(probe.prior_, probe.stats_)) + shares.log_evidence(S.class_count)
            trace.append(evidence + entropy)
            self._report(it, trace[-1], trace[-2] if len(trace) > 1 else None)
            if self._converged(trace) or not latent:
                converged = True
                break
        return probe, R, trace, converged, R_L, S

    # ------------------------------------------------------------------ the fitted model
    def _fitted(self):
        check_is_fitted(self, "estimator_")
        return self.estimator_

    def _has_components(self):
        """Whether the fitted model has several components for some class (``estimator_``'s classes are components)."""
        check_is_fitted(self, "estimator_")
        return getattr(self, "_mixture", False)

    def fitted_model(self):
        """The fitted-model pytree the analysis and ppl layers take (:meth:`bayesnb.MultinomialNB.fitted_model`).

        With one component per class it is the wrapped estimator's, fitted to the
        labelled and the weighted unlabelled rows (EM or variational posterior), so that
        :func:`~bayesnb.analysis.uncertainty.decompose_uncertainty`,
        :func:`~bayesnb.analysis.uncertainty.rank_by_epistemic` and the export take this
        estimator.

        Returns
        -------
        bayesnb.core._fitted.FittedModel

        Raises
        ------
        ValueError
            With several components for some class: the layers would read components as
            classes. This estimator's own ``predict_proba_draws`` and
            ``predict_proba_interval`` sum each class's components.
        """
        if self._has_components():
            raise ValueError(
                "the analysis and ppl layers take one component per class; this fit has "
                f"n_components_={self.n_components_.tolist()}. Use its predict_proba_draws / "
                "predict_proba_interval, which sum each class's components, or "
                "bayesnb.analysis.uncertainty.entropy_decomposition(est.predict_proba_draws(X))"
            )
        return self._fitted().fitted_model()

    @property
    def family_(self):
        """Family: the conjugate family of the wrapped estimator."""
        return self._fitted().family_

    @property
    def prior_(self):
        """The feature prior pytree (fixed by the labelled fit)."""
        return self._fitted().prior_

    @property
    def stats_(self):
        """The final expected sufficient statistics (labelled rows plus responsibility-weighted unlabelled rows)."""
        return self._fitted().stats_

    @property
    def posterior_(self):
        r"""The conjugate posterior given the expected statistics: for ``"vb"``, :math:`q(\theta)`."""
        return self._fitted().posterior_

    @property
    def class_posterior_(self):
        r"""The Dirichlet given the expected class counts (for ``"vb"``: :math:`q(\pi)`), or None for fixed proportions."""
        return self._fitted().class_posterior_

    @property
    def class_log_prior_(self):
        r"""Log class proportions :math:`\log\pi_c` of the fitted estimate (with components: summed over each class's).

        The log weights of ``predict_joint_log_proba``'s classes, as the wrapped
        estimators' ``class_log_prior_`` (:func:`bayesnb.compare` gives them to rows
        impossible under every class).
        """
        return self._class_log_weights()

    def predict_joint_log_proba(self, X):
        r"""Joint log-probability of each row and class under the fitted model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            With mixture components: :math:`\log\sum_{k \in c} p(x, z = k)`, the sum of the
            class's components' joints; with the wrapped estimator's ``temperature``
            :math:`T \ne 1`, the tempered score :math:`\log\pi_c + \log p(x \mid y = c) / T`
            of the class's mixture likelihood (see :meth:`_temper`).
        """
        if self._has_components():
            with self._components_named(self.classes_):
                joint = self.estimator_.predict_joint_log_proba(X)
            joint = _components.sum_components(joint, self.component_class_, self.classes_.size)
            return self._temper(joint, self._class_log_weights())
        return self._fitted().predict_joint_log_proba(X)

    @property
    def calibration_approximations_(self):
        """tuple of str: why the leave-one-out scores the calibration map was fitted to are not exact (empty: no map).

        A wrapped estimator's ``calibrate="loo"`` fits its map to the labelled rows'
        leave-one-out class probabilities. Under EM or VB those are approximate: each
        labelled row is downdated from the final expected statistics while the
        responsibilities it helped to set are held (an exact leave-one-out would rerun
        the whole fit without the row). With one component per class and no unlabelled
        row of positive weight the fit is the plain estimator's and its leave-one-out is
        exact.
        """
        check_is_fitted(self, "estimator_")
        if self._has_components():
            if self.calibration_ is None:
                return ()
            return (
                "responsibilities held: each labelled row is downdated from the final expected statistics of the "
                "mixture (spread over its class's components as its responsibilities), while every row's "
                "responsibilities keep the fitted values it helped to set; EM / VB is not rerun without it",
            )
        if self.estimator_.get_params(deep=False).get("calibrate") != "loo":
            return ()
        return (
            "responsibilities held (where unlabelled rows enter with a positive weight): each labelled row is "
            "downdated from the final expected statistics, while the unlabelled rows' responsibilities keep the "
            "fitted values it helped to set; EM / VB is not rerun without it",
        )

    def _mixture_temperature(self):
        """The temperature of a fit with several components: the wrapped estimator's ``temperature`` (a number)."""
        from bayesnb.estimators._base import check_temperature

        t = 1.0 if self.estimator is None else self.estimator.get_params(deep=False).get("temperature", 1.0)
        if isinstance(t, str):
            raise ValueError(f"several components per class: {_components.refusal(self.estimator)}")
        return check_temperature(t)

    def _temper(self, joint, class_log_pi):
        r"""Temper class joints of a mixture: :math:`\log\pi_c + (\log p(x, y = c) - \log\pi_c) / T`.

        The single-component estimators' tempering (the tempering guide) applied to the
        class-conditional likelihood of the mixture, :math:`p(x \mid y = c) =
        \sum_{k \in c} (\pi_k / \pi_c)\, p(x \mid \theta_k)`: the whole mixture is raised
        to :math:`1/T`, not each component (tempering the components would also reweigh
        them within the class). ``joint`` has shape (..., n_classes); ``class_log_pi``
        broadcasts against it. A class of proportion 0 keeps ``-inf``.
        """
        t = self._mixture_temperature()
        if t == 1.0:
            return joint
        finite = np.isfinite(class_log_pi)
        with np.errstate(invalid="ignore"):
            tempered = class_log_pi + (joint - class_log_pi) / t
        return np.where(finite, tempered, -np.inf)

    def predict_log_proba(self, X):
        """Log class probabilities.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if self._has_components():
            joint = self.predict_joint_log_proba(X)
            with np.errstate(invalid="ignore"):
                return self._calibrated(joint - logsumexp(joint, axis=1, keepdims=True))
        return self._fitted().predict_log_proba(X)

    def _calibrated(self, log_proba):
        """Class log-probabilities of a mixture mapped by ``calibration_`` (unchanged without one)."""
        cmap = getattr(self, "calibration_", None)
        if cmap is None:
            return log_proba
        if cmap.temperature != self._mixture_temperature():
            raise ValueError(
                f"the calibration map was fitted to the leave-one-out scores of temperature={cmap.temperature:g}, not "
                f"the wrapped estimator's temperature={self._mixture_temperature():g}: call fit again"
            )
        return _calibration.apply(cmap, log_proba)

    def predict_proba(self, X):
        """Class probabilities: the MAP classifier (EM) or the predictive under :math:`q` (VB).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if self._has_components():
            return np.exp(self.predict_log_proba(X))
        return self._fitted().predict_proba(X)

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        if self._has_components():
            # The calibrated probabilities decide where there is a map, as for one component.
            scores = self.predict_joint_log_proba(X) if self.calibration_ is None else self.predict_log_proba(X)
            return self.classes_[np.argmax(scores, axis=1)]
        return self._fitted().predict(X)

    def sample_posterior(self, n=1000, random_state=None):
        """Draws of the parameters from the fitted (for ``"vb"``: approximate) posterior.

        Parameters
        ----------
        n : int, default=1000
            Number of draws.
        random_state : int, numpy Generator, jax key or None

        Returns
        -------
        dict
            As the wrapped estimator's ``sample_posterior``: parameter name to an array
            with the draws on the first axis (with several components per class: per
            component, the class axis indexing the components).
        """
        return self._fitted().sample_posterior(n, random_state)

    def predict_proba_draws(self, X, n_draws=100, random_state=None, *, posterior="fitted"):
        """Class probabilities under posterior draws.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        n_draws : int, default=100
        random_state : int, numpy Generator, jax key or None
        posterior : {"fitted", "updated"}, default="fitted"
            The fitted (EM or variational) posterior, or that posterior updated by each
            row (see :meth:`bayesnb.MultinomialNB.predict_proba_draws`).

        Returns
        -------
        ndarray of shape (n_draws, n_samples, n_classes)
            With several components per class: each draw's class probability is the sum
            of its components' probabilities (under the same draw of every component's
            parameters and of the weights, from the EM or variational posterior).
        """
        if not self._has_components():
            return self._fitted().predict_proba_draws(X, n_draws, random_state, posterior=posterior)
        shares = _components.within_class_shares(self._base(), self.component_class_)
        if self._mixture_temperature() != 1.0 or shares is not None:
            draws = self._mixture_draws(X, n_draws, random_state, posterior, shares)
        else:
            draws = np.asarray(self._fitted().predict_proba_draws(X, n_draws, random_state, posterior=posterior))
            draws = draws @ self._component_to_class()
        if self.calibration_ is not None:
            if posterior != "fitted":
                raise ValueError("posterior='updated' needs calibrate=None (a calibrated model's probabilities are "
                                 "not the mean of a posterior); use posterior='fitted'")
            with np.errstate(divide="ignore"):
                draws = np.exp(self._calibrated(np.log(draws)))
        return draws

    def _mixture_draws(self, X, n_draws, random_state, posterior, shares):
        r"""Draws of the class probabilities of a mixture with a temperature or fixed class proportions.

        In each draw of :math:`(\pi, \theta)` the class's mixture likelihood is tempered
        as in :meth:`predict_joint_log_proba`. The components' parameters are
        ``estimator_``'s posterior draws (those of its ``sample_posterior`` with the same
        ``random_state``); the weights too, unless the class proportions are fixed: then
        each class's shares are drawn from their posterior
        :math:`\mathrm{Dir}(\beta_c + N_c)` (EM's conjugate posterior given the expected
        counts; VB's :math:`q`) and the class totals are the fixed :math:`\pi_c`
        (:meth:`~bayesnb.estimators._components.WithinClassShares.sample_log_weights`,
        with the key of the class proportions' draws). All draws and rows are held in
        memory at once (shape (n_draws, n_samples, n_components_total)).
        """
        from bayesnb.analysis.uncertainty import check_posterior, draw_source
        from bayesnb.core import _sampling
        from bayesnb.core._random import key_from_random_state

        if check_posterior(posterior) != "fitted":
            raise ValueError(
                "posterior='updated' needs temperature 1 and learned class proportions (its mean is the exact "
                "predictive of the untempered model with the Dirichlet on every weight); use posterior='fitted'"
            )
        key = key_from_random_state(random_state)
        source = draw_source(self._fitted(), X, n_draws, key)
        n = source.log_class.shape[0]
        params = source.sample(source.key, n)
        log_class = source.log_class
        if shares is not None:
            key_class, _ = _sampling.split(key)  # draw_source's split: the key its fixed proportions leave unused
            log_class = shares.sample_log_weights(key_class, self._fitted().stats_.class_count, n)
        joint = np.asarray(source.log_likelihood(params, source.X), dtype=np.float64) + log_class[:, None, :]
        cc, n_classes = self.component_class_, self.classes_.size
        class_joint = _components.sum_components(joint, cc, n_classes)
        class_log_pi = _components.sum_components(log_class, cc, n_classes)
        tempered = self._temper(class_joint, class_log_pi[:, None, :])
        return np.exp(tempered - logsumexp(tempered, axis=-1, keepdims=True))

    def _component_to_class(self):
        """The (n_components_total, n_classes) 0/1 matrix summing components into classes."""
        return (self.component_class_[:, None] == np.arange(self.classes_.size)[None, :]).astype(np.float64)

    def predict_proba_interval(
        self, X, level=0.9, *, n_draws=1000, method="equal-tailed", random_state=None, posterior="fitted",
        return_median=False,
    ):
        """Credible intervals of the class probabilities under the fitted (approximate) posterior.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        level : float, default=0.9
        n_draws : int, default=1000
        method : {"equal-tailed", "hdi"}, default="equal-tailed"
        random_state : int, numpy Generator, jax key or None
        posterior : {"fitted", "updated"}, default="fitted"
        return_median : bool, default=False
            Also return the median of the same draws (the summary that belongs beside
            the interval; see :meth:`bayesnb.MultinomialNB.predict_proba_interval`).

        Returns
        -------
        As the wrapped estimator's ``predict_proba_interval``: (lower, upper), each of
        shape (n_samples, n_classes), and the median with ``return_median=True``.
        """
        if self._has_components():
            # The quantiles of the class probabilities, each the sum of its components' in a draw.
            from bayesnb.analysis.uncertainty import credible_interval

            draws = self.predict_proba_draws(X, n_draws, random_state, posterior=posterior)
            lower, upper = credible_interval(draws, level, method)
            return (lower, upper, np.median(draws, axis=0)) if return_median else (lower, upper)
        return self._fitted().predict_proba_interval(
            X, level, n_draws=n_draws, method=method, random_state=random_state, posterior=posterior,
            return_median=return_median,
        )

    def to_inference_data(self, n_draws=500, random_state=None, X_new=None, **kwargs):
        """The fitted (for ``"vb"``: variational) posterior as an arviz ``InferenceData``.

        Parameters
        ----------
        n_draws : int, default=1000
        random_state : int, numpy Generator, jax key or None
        X_new : array-like of shape (n_new, n_features), optional
            Rows whose predictions are exported too.
        **kwargs
            Passed to the wrapped estimator's ``to_inference_data``.

        Returns
        -------
        arviz.InferenceData
            With several components per class, the export is ``estimator_``'s: its
            ``class`` coordinate indexes the components (``component_class_`` maps them to
            classes), its class proportions are the component weights, and its
            ``predictions`` group (with ``X_new``) holds the components' probabilities,
            untempered (the wrapped estimator's temperature acts on each class's
            mixture, which the export does not form).
        """
        return self._fitted().to_inference_data(n_draws, random_state, X_new, **kwargs)

    # ------------------------------------------------------------------ persistence
    #: The scikit-learn convention of this estimator's labels: which rows of ``y`` are
    #: unlabelled (``-1``). :func:`bayesnb.compare` reads it (duck-typed) to keep those
    #: rows unlabelled in every training set and out of every score.
    unlabelled_mask = staticmethod(unlabelled_mask)

    def save(self, path):
        """Write this estimator (fitted or not) to ``path``; read it back with :func:`bayesnb.load`.

        No pickle (see :mod:`bayesnb.io.persistence`). The fitted state saved is the
        fitted wrapped estimator (``estimator_``: its parameters with the prior the
        labelled fit learned, and the final expected statistics, from which ``load``
        recomputes its posterior), what the fit chose (``unlabelled_weight_``,
        ``weight_curve_``, ``n_components_``, ``components_curve_``), its trace and the
        training rows' responsibilities; ``load`` validates all of it as ``fit`` would
        have produced it and derives the rest (``component_class_``,
        ``component_weights_``, ``transduction_``). Predictions, draws (same
        ``random_state``) and ``fitted_model()`` of the loaded estimator equal this
        one's bit for bit.

        Parameters
        ----------
        path : str, os.PathLike or binary file object

        Returns
        -------
        None

        Examples
        --------
        >>> import io
        >>> import numpy as np
        >>> import bayesnb
        >>> X = np.array([[5, 0], [4, 1], [0, 5], [1, 4], [6, 1], [0, 6]])
        >>> clf = bayesnb.SemiSupervisedNB(unlabelled_weight=1).fit(X, [0, 0, 1, 1, -1, -1])
        >>> buf = io.BytesIO(); clf.save(buf); _ = buf.seek(0)
        >>> bool(np.array_equal(bayesnb.load(buf).predict_proba(X), clf.predict_proba(X)))
        True
        """
        from bayesnb.io.persistence import save

        # The wrapped estimator's own refusal (the archive cannot hold a distribution), not
        # the encoder's "values of type Gamma are not supported".
        refuse = getattr(self.estimator, "_refuse_unsavable_hyperprior", None)
        if refuse is not None:
            refuse(within=type(self).__name__)
        save(self, path)

    def _saved_state(self):
        """The fitted state a model file holds (None when unfitted); see :meth:`save`."""
        if "estimator_" not in vars(self):
            return None
        trace = "log_posterior_" if self.method == "em" else "elbo_"
        state = {
            "estimator_": _portable(self.estimator_),
            "classes_": self.classes_,
            "n_components_": np.asarray(self.n_components_, dtype=np.int64),
            "unlabelled_weight_": float(self.unlabelled_weight_),
            "weight_curve_": self.weight_curve_,
            "components_curve_": self.components_curve_,
            "n_iter_": int(self.n_iter_),
            "converged_": bool(self.converged_),
            trace: np.asarray(getattr(self, trace), dtype=np.float64),
        }
        if self._mixture:
            state["component_responsibilities_"] = self.component_responsibilities_
            # The one-hot start as each labelled row's component (M times smaller).
            state["initial_components_"] = np.argmax(self.initial_responsibilities_, axis=1).astype(np.int64)
            if self.calibration_ is not None:
                state["calibration_"] = self.calibration_
        else:
            state["label_distributions_"] = self.label_distributions_
        return state

    def _restore_state(self, state):
        """Validate a model file's fitted state (:meth:`_saved_state`) and set it; ``ValueError`` naming the field."""
        _check_restored(self, state)
        est = state["estimator_"]
        counts = np.asarray(state["n_components_"])
        mixture = self._uses_components(counts)
        trace = "log_posterior_" if self.method == "em" else "elbo_"
        self.estimator_ = est
        self.classes_ = state["classes_"]
        self.unlabelled_weight_ = state["unlabelled_weight_"]
        self.weight_curve_ = state["weight_curve_"]
        self.n_iter_ = state["n_iter_"]
        self.converged_ = state["converged_"]
        setattr(self, trace, state[trace])
        self.n_components_ = counts
        self.components_curve_ = state["components_curve_"]
        self._mixture = mixture
        # Derived as fit derives them: the same computation on the same arrays.
        self.component_class_ = np.repeat(np.arange(counts.size), counts) if mixture else np.arange(counts.size)
        if mixture:
            cc = self.component_class_
            resp = state["component_responsibilities_"]
            self.component_responsibilities_ = resp
            with self._components_named(self.classes_):
                self.component_weights_ = np.exp(est.class_log_prior_)
            start = state["initial_components_"]
            R0 = np.zeros((start.size, cc.size))
            R0[np.arange(start.size), start] = 1.0
            self.initial_responsibilities_ = R0
            self.calibration_ = state.get("calibration_")
            dist = np.zeros((resp.shape[0], self.classes_.size))
            np.add.at(dist.T, cc, resp.T)
        else:
            dist = state["label_distributions_"]
        self.label_distributions_ = dist
        self.transduction_ = self.classes_[np.argmax(dist, axis=1)]


def _portable(est):
    r"""A copy of the fitted ``est`` that a model file restores exactly (:meth:`SemiSupervisedNB.save`).

    Loading recomputes an estimator's prior from its parameters and statistics, and
    ``estimator_``'s statistics are the final expected ones, while its prior was learned
    from the labelled rows (``_freeze_hyperparameters``; :func:`_components.component_estimator`)
    and held by ``with_stats``. The copy's parameters say that prior: a hyperparameter set
    to ``"evidence"`` takes its fitted value, a data-scaled default (``prior=None``) the
    ``prior_`` it gave. The blocks of a product (:class:`~bayesnb.MixedNB`, whose
    ``with_stats`` conditions the product's statistics and leaves each block's) are
    replaced by each block conditioned on its part of the product's statistics, made
    portable alike, so that the product restored from its blocks holds those
    statistics. Nothing is recomputed here beyond those blocks' conditioning (the same
    ``with_stats`` the fit's ``posterior_from_stats`` runs).
    """
    import copy

    work = copy.copy(est)
    params = est.get_params(deep=False)
    for name, value in params.items():
        if is_evidence(value) and hasattr(est, name + "_"):
            setattr(work, name, getattr(est, name + "_"))
    if "prior" in params and params["prior"] is None and getattr(est, "prior_", None) is not None:
        work.prior = est.prior_
    blocks = est.__dict__.get("estimators_")
    if blocks is not None:
        parts = est.stats_.blocks
        work.estimators_ = [(name, _portable(block.with_stats(parts[name])), idx) for name, block, idx in blocks]
    return work


def _as_array(state, name, kinds, ndim):
    value = state.get(name)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in kinds or value.ndim != ndim:
        shown = type(value).__name__ if not isinstance(value, np.ndarray) else f"dtype {value.dtype}, {value.ndim}-d"
        raise ValueError(f"{name} must be a {ndim}-d array of kind {kinds!r}, got {shown}")
    return value


def _check_int(state, name, low, high=None, where=None):
    value = state.get(name)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low or (
        high is not None and value > high
    ):
        raise ValueError(
            f"{where or name} must be an integer in [{low}, {high if high is not None else 'inf'}], got {value!r}"
        )
    return int(value)


def _check_distributions(name, R, n_cols):
    """Rows of responsibilities: shape (n, n_cols), finite, >= 0, each summing to 1."""
    if R.shape[1] != n_cols:
        raise ValueError(f"{name} has shape {R.shape}; its second axis must be the {n_cols} classes or components")
    if not np.all(np.isfinite(R)) or np.any(R < 0):
        raise ValueError(f"{name} holds negative, NaN or infinite responsibilities")
    if R.shape[0] and np.max(np.abs(R.sum(axis=1) - 1.0)) > 1e-9:
        raise ValueError(f"{name}: every row's responsibilities must sum to 1 (to 1e-9)")


_WEIGHT_CURVE = frozenset({"grid", "mean", "se", "gain", "gain_se", "scores", "accuracy", "accuracy_se", "accuracy_gain",
                           "accuracy_gain_se", "correct", "criterion", "n_splits", "chosen"})
_COMPONENTS_CURVE = frozenset({"grid", "mean", "scores", "n_splits", "chosen"})


def _check_restored(semi, state):
    r"""Refuse a restored fitted state of ``semi`` that its ``fit`` could not have produced.

    Shapes agree with one another and with the wrapped estimator (restored and validated
    by the model file's own checks), every number of components is at least 1 and they
    add up to the wrapped estimator's classes before any array is sized from them,
    responsibilities are finite, non-negative and normalised, the initial components are
    in range, the weight and the curves are what the parameters say. Raises
    ``ValueError`` naming the field.
    """
    semi._check_params()
    trace_name = "log_posterior_" if semi.method == "em" else "elbo_"
    keys = {"estimator_", "classes_", "n_components_", "unlabelled_weight_", "weight_curve_", "components_curve_",
            "n_iter_", "converged_", trace_name}
    est = state.get("estimator_")
    counts = state.get("n_components_")
    mixture = isinstance(counts, np.ndarray) and counts.dtype.kind in "iu" and counts.ndim == 1 and bool(np.any(counts > 1))
    keys |= {"component_responsibilities_", "initial_components_"} if mixture else {"label_distributions_"}
    if mixture and semi._base().get_params(deep=False).get("calibrate") == "loo":
        keys.add("calibration_")
    if set(state) != keys:
        raise ValueError(f"the fitted attributes are {sorted(state)}, expected {sorted(keys)}")
    if not (hasattr(est, "posterior_from_stats") and "stats_" in vars(est)):
        raise ValueError(f"estimator_ must be a fitted bayesnb estimator, got {type(est).__name__}")
    if semi.method == "em":
        expected = "mean" if semi.smoothing == "laplace" else "map"
        if est.get_params(deep=False).get("estimate") != expected:
            raise ValueError(f"estimator_.estimate must be {expected!r} (EM's M-step under smoothing={semi.smoothing!r})")
    classes = state["classes_"]
    if not isinstance(classes, np.ndarray) or classes.ndim != 1 or classes.size == 0:
        raise ValueError("classes_ must be a non-empty 1-d array")
    ordered = np.unique(classes)
    if ordered.shape != classes.shape or not np.array_equal(ordered, classes):
        raise ValueError("classes_ must be sorted and distinct, as fit makes them")
    n_classes = classes.size
    counts = _as_array(state, "n_components_", "iu", 1)
    if counts.size != n_classes or np.any(counts < 1):
        raise ValueError(f"n_components_ must hold one integer >= 1 per class ({n_classes}), got {counts.tolist()[:10]}")
    n_slots = est.classes_.size
    # Summed in Python integers (no overflow) before anything is sized from them.
    if sum(int(k) for k in counts) != n_slots:
        raise ValueError(
            f"n_components_ adds up to {sum(int(k) for k in counts)} components, but estimator_ has {n_slots} "
            "(one class per component)"
        )
    if mixture:
        if not np.array_equal(est.classes_, np.arange(n_slots)):
            raise ValueError("estimator_.classes_ must be the components 0 .. M-1 with several components per class")
        reason = _components.refusal(est)
        if reason is not None:
            raise ValueError(f"estimator_ cannot carry several components per class: {reason}")
        if "calibration_" in keys:
            cmap = state["calibration_"]
            if not isinstance(cmap, _calibration.CalibrationMap):
                raise ValueError(f"calibration_ must be a CalibrationMap, got {type(cmap).__name__}")
            if cmap.estimate != est.estimate or cmap.temperature != semi._mixture_temperature():
                raise ValueError(
                    f"calibration_ was fitted to estimate={cmap.estimate!r}, temperature={cmap.temperature:g}, not "
                    f"estimator_'s estimate={est.estimate!r} and the temperature {semi._mixture_temperature():g}"
                )
        if est.get_params(deep=False).get("calibrate") is not None:
            raise ValueError("estimator_ must have calibrate=None with several components (the wrapper calibrates "
                             "the classes' probabilities)")
        if est.get_params(deep=False).get("temperature", 1.0) != 1.0:
            raise ValueError("estimator_ must have temperature=1 with several components (the wrapper tempers each "
                             "class's mixture likelihood)")
        _check_fixed_proportions(semi, est, np.repeat(np.arange(n_classes), counts))
    elif not np.array_equal(est.classes_, classes):
        raise ValueError("classes_ must equal estimator_.classes_ with one component per class")
    n_components = semi.n_components
    if n_components != "auto":
        try:
            given = _components.resolve(n_components, classes)
        except (ValueError, TypeError) as err:
            raise ValueError(f"n_components_ does not match n_components={n_components!r}: {err}") from None
        if not np.array_equal(given, counts):
            raise ValueError(f"n_components_ {counts.tolist()} does not match n_components={n_components!r}")

    lam = state["unlabelled_weight_"]
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"unlabelled_weight_ must be a finite number >= 0, got {lam!r}")
    if semi.unlabelled_weight != "auto" and lam != float(semi.unlabelled_weight):
        raise ValueError(f"unlabelled_weight_ {lam!r} differs from unlabelled_weight={semi.unlabelled_weight!r}")

    n_iter = _check_int(state, "n_iter_", 1, int(semi.max_iter))
    if not isinstance(state["converged_"], bool):
        raise ValueError(f"converged_ must be a bool, got {state['converged_']!r}")
    trace = _as_array(state, trace_name, "f", 1)
    if trace.size != n_iter or not np.all(np.isfinite(trace)):
        raise ValueError(f"{trace_name} must hold n_iter_={n_iter} finite values, got {trace.size}")

    if mixture:
        resp = _as_array(state, "component_responsibilities_", "f", 2)
        _check_distributions("component_responsibilities_", resp, n_slots)
        start = _as_array(state, "initial_components_", "iu", 1)
        if start.size > resp.shape[0]:
            raise ValueError(f"initial_components_ has {start.size} labelled rows, more than the {resp.shape[0]} rows")
        if start.size and (start.min() < 0 or start.max() >= n_slots):
            raise ValueError(f"initial_components_ must index the {n_slots} components (0 .. {n_slots - 1})")
        n_rows, n_labelled = resp.shape[0], start.size
    else:
        dist = _as_array(state, "label_distributions_", "f", 2)
        _check_distributions("label_distributions_", dist, n_classes)
        n_rows, n_labelled = dist.shape[0], None

    curve = state["weight_curve_"]
    if curve is not None:
        if semi.unlabelled_weight != "auto" or not isinstance(curve, dict) or set(curve) != _WEIGHT_CURVE:
            raise ValueError(f"weight_curve_ must be None or, with unlabelled_weight='auto', a dict of {sorted(_WEIGHT_CURVE)}")
        grid = _as_array(curve, "grid", "f", 1)
        if not (np.all(np.isfinite(grid)) and np.all(grid >= 0) and np.all(np.diff(grid) > 0) and np.any(grid == 0)):
            raise ValueError("weight_curve_['grid'] must be increasing finite weights >= 0 including 0")
        for key in ("mean", "se", "gain", "gain_se", "accuracy", "accuracy_se", "accuracy_gain", "accuracy_gain_se"):
            if _as_array(curve, key, "f", 1).shape != grid.shape or np.any(np.isnan(curve[key])):
                raise ValueError(f"weight_curve_[{key!r}] must hold one number per weight of the grid")
        scores = _as_array(curve, "scores", "f", 2)
        if scores.shape[0] != grid.size or scores.shape[1] > n_rows or np.any(np.isnan(scores)) or np.any(scores > 0):
            raise ValueError("weight_curve_['scores'] must be log probabilities (<= 0), one row per weight, one column per labelled row")
        correct = _as_array(curve, "correct", "f", 2)
        if correct.shape != scores.shape or not np.all((correct == 0) | (correct == 1)):
            raise ValueError("weight_curve_['correct'] must hold 0 or 1, one row per weight, one column per labelled row")
        if curve["criterion"] != semi.weight_criterion:
            raise ValueError(f"weight_curve_['criterion'] must be weight_criterion={semi.weight_criterion!r}")
        zero = int(np.flatnonzero(grid == 0)[0])
        again = grid[_choose_index(semi.weight_criterion, semi.weight_margin, zero, {
            "log_score": (curve["mean"], curve["gain"], curve["gain_se"]),
            "accuracy": (curve["accuracy"], curve["accuracy_gain"], curve["accuracy_gain_se"]),
        })]
        if again != curve["chosen"]:
            raise ValueError("weight_curve_['chosen'] is not the weight its own curve and weight_criterion choose")
        if n_labelled is not None and scores.shape[1] != n_labelled:
            raise ValueError("weight_curve_['scores'] and initial_components_ disagree on the number of labelled rows")
        _check_int(curve, "n_splits", 2, scores.shape[1], "weight_curve_['n_splits']")
        if curve["chosen"] != lam or lam not in grid:
            raise ValueError("weight_curve_['chosen'] must be unlabelled_weight_, a weight of the grid")
    elif semi.unlabelled_weight == "auto" and lam != 0:
        raise ValueError("unlabelled_weight='auto' without a weight_curve_ falls back to unlabelled_weight_ = 0")

    curve = state["components_curve_"]
    if curve is not None:
        if n_components != "auto" or not isinstance(curve, dict) or set(curve) != _COMPONENTS_CURVE:
            raise ValueError(f"components_curve_ must be None or, with n_components='auto', a dict of {sorted(_COMPONENTS_CURVE)}")
        grid = _as_array(curve, "grid", "iu", 1)
        if grid.size == 0 or np.any(grid < 1) or np.any(np.diff(grid) <= 0):
            raise ValueError("components_curve_['grid'] must be increasing integers >= 1")
        mean = _as_array(curve, "mean", "f", 2)
        if mean.shape != (n_classes, grid.size) or np.any(np.isnan(mean)) or np.any(mean == np.inf):
            raise ValueError(f"components_curve_['mean'] must have shape ({n_classes}, {grid.size}), no NaN or +inf")
        scores = _as_array(curve, "scores", "f", 2)
        if scores.shape[0] != grid.size or scores.shape[1] > n_rows or np.any(scores == np.inf):
            raise ValueError("components_curve_['scores'] must have one row per grid value, one column per labelled row")
        _check_int(curve, "n_splits", 2, scores.shape[1], "components_curve_['n_splits']")
        chosen = _as_array(curve, "chosen", "iu", 1)
        if not np.array_equal(chosen, counts) or not np.all(np.isin(chosen, grid)):
            raise ValueError("components_curve_['chosen'] must be n_components_, each a value of the grid")
    elif n_components == "auto" and mixture:
        raise ValueError("n_components='auto' without a components_curve_ gives every class 1 component")


def _check_fixed_proportions(semi, est, component_class):
    """With fixed class proportions, ``estimator_``'s component weights must add up to them in every class."""
    base = semi._base()
    if not _components.is_fixed(base):
        if est.class_posterior_ is None:
            raise ValueError("estimator_ has fixed component weights, but the wrapped estimator learns its class "
                             "proportions")
        return
    if est.class_posterior_ is not None:
        raise ValueError("estimator_ learns its component weights freely, but the wrapped estimator fixes the class "
                         "proportions (class_prior / fit_prior=False)")
    n_classes = int(component_class.max()) + 1
    target = base.get_params(deep=False).get("class_prior")
    from bayesnb.core._validation import check_class_prior

    target = np.full(n_classes, 1.0 / n_classes) if target is None else check_class_prior(target, n_classes)
    totals = np.bincount(component_class, weights=np.asarray(est.class_prior_, np.float64), minlength=n_classes)
    if not np.allclose(totals, target, rtol=0, atol=1e-9):
        raise ValueError(f"estimator_'s component weights add up to {totals.tolist()} per class, not the fixed class "
                         f"proportions {target.tolist()}")
