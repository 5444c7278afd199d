r"""Several mixture components per class for :class:`~bayesnb.SemiSupervisedNB` (``n_components``).

With :math:`K_c` components for class :math:`c`, the class-conditional density is the
mixture :math:`p(x \mid y = c) = \sum_{k \in c} (\pi_k / \pi_c)\, p(x \mid \theta_k)`, each
:math:`\theta_k` a conjugate member of the wrapped estimator's family, and
:math:`\pi \sim \mathrm{Dir}(\beta)` over the :math:`M = \sum_c K_c` (class, component)
pairs, :math:`\pi_c = \sum_{k \in c} \pi_k`. The machinery needs nothing from the family
beyond its protocol: the components are the *classes* of a copy of the wrapped estimator
(its ``classes_`` are ``0 .. M-1``, components grouped by class, ``component_class_[k]``
the class of component ``k``), whose statistics are the responsibility-weighted rows
(``validated_stats``) and whose fitted state is ``with_stats`` of them. A labelled row
fixes its class, not its component: its responsibilities run over its class's
components only; an unlabelled row's over all :math:`M`.

This module holds the pieces that do not iterate: checking and resolving
``n_components``, the seeded initial split of each class's distinct labelled rows, the component
estimator, the sum over a class's components, what the wrapped estimator's settings
refuse (:func:`refusal`), and the component shares within each class when the class
proportions are fixed (:class:`WithinClassShares`). The EM and VB loops, the tempering
of a class's mixture and the approximate leave-one-out of ``calibrate="loo"`` are
:class:`~bayesnb.SemiSupervisedNB`'s.
"""

from __future__ import annotations

import heapq
import pickle
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from bayesnb.core import class_prior as _class_prior
from bayesnb.core.empirical_bayes import is_evidence
from bayesnb.core.families import _dirichlet
from bayesnb.core.families.product import BlockRows
from bayesnb.core.missing import MaskedX
from bayesnb.core.priors import Dirichlet, dirichlet_from_alpha

__all__ = [
    "check_n_components",
    "resolve",
    "initial_components",
    "row_groups",
    "distinct_per_class",
    "component_estimator",
    "sum_components",
    "allowed_components",
    "refusal",
    "is_fixed",
    "WithinClassShares",
    "within_class_shares",
]


def _is_count(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) and k >= 1


def check_n_components(n_components):
    """Check the form of ``n_components``: an int >= 1, ``"auto"``, a dict label -> int, or a sequence of ints.

    Raises
    ------
    ValueError, TypeError
        Naming what is wrong.
    """
    if isinstance(n_components, str):
        if n_components != "auto":
            raise ValueError(f"n_components must be an int >= 1, 'auto', a dict or a sequence of ints, got {n_components!r}")
        return
    if isinstance(n_components, dict):
        values = list(n_components.values())
    elif np.ndim(n_components) == 0:
        values = [n_components]
    elif np.ndim(n_components) == 1:
        values = list(n_components)
    else:
        raise ValueError(f"n_components must be an int, 'auto', a dict or a 1-d sequence, got {n_components!r}")
    if not values:
        raise ValueError("n_components must not be empty")
    for k in values:
        if not _is_count(k):
            raise ValueError(f"every number of components must be an int >= 1, got {k!r} in n_components={n_components!r}")


def resolve(n_components, classes):
    """The number of components of each class, an int array of shape (n_classes,).

    Parameters
    ----------
    n_components : int, dict or sequence (not ``"auto"``)
        An int: the same for every class. A dict: label -> int, classes it leaves out
        get 1. A sequence: one int per class, in the order of ``classes``.
    classes : ndarray of shape (n_classes,)

    Returns
    -------
    int ndarray of shape (n_classes,)
    """
    n = classes.size
    if isinstance(n_components, dict):
        out = np.ones(n, dtype=np.int64)
        known = {c.item() if hasattr(c, "item") else c: i for i, c in enumerate(classes)}
        for label, k in n_components.items():
            key = label.item() if hasattr(label, "item") else label
            if key not in known:
                raise ValueError(f"n_components names label {label!r}, which is not a class of the labelled rows {classes.tolist()!r}")
            out[known[key]] = int(k)
        return out
    if np.ndim(n_components) == 0:
        return np.full(n, int(n_components), dtype=np.int64)
    if len(n_components) != n:
        raise ValueError(
            f"n_components has {len(n_components)} entries but there are {n} classes {classes.tolist()!r} "
            "(one int per class, in the order of classes_)"
        )
    return np.asarray([int(k) for k in n_components], dtype=np.int64)


def initial_components(y_index, counts, random_state, X, sample_weight=None):
    r"""The component of every labelled row at the start: a seeded split of each class's distinct rows, balanced by weight.

    The start depends on the rows' content and weights, not on their order or
    multiplicity, so that ``m`` copies of a row start as one row of weight ``m`` does
    (and EM and VB, whose every other step sums rows by weight, reach the same fixed
    point). Within each class the labelled rows are grouped by content (equal rows, as
    the estimator sees them: see :func:`row_groups`), a group weighing the sum of its
    rows' ``sample_weight``; every group starts in one component.
    ``numpy.random.default_rng(random_state)`` draws one seed per class (always
    ``n_classes`` of them, so a class's start does not depend on the other classes'
    numbers of components); a generator of its seed shuffles the class's groups (taken
    in an order of their content), a stable sort puts the heaviest first, and each group
    in turn joins the part of the least total weight so far (ties: the part of fewer
    groups, then the first), part :math:`j` starting as component :math:`j` of the
    class. Every part gets a group, and the parts' total weights differ by at most the
    heaviest group's weight; with distinct rows of equal weight it is a random split
    into parts of sizes differing by at most one. A class of one component keeps all
    its rows in it.

    Parameters
    ----------
    y_index : int ndarray of shape (n_labelled,)
        Class index of each labelled row.
    counts : int ndarray of shape (n_classes,)
        Components per class.
    random_state : int, numpy Generator or None
    X : ndarray, sparse matrix, MaskedX or BlockRows of shape (n_labelled, n_features)
        The labelled rows, validated (``validate_input``).
    sample_weight : float ndarray of shape (n_labelled,), optional
        Row weights; None: 1 for every row.

    Returns
    -------
    int ndarray of shape (n_labelled,)
        Component index (``0 .. sum(counts) - 1``, grouped by class) of every row.

    Raises
    ------
    ValueError
        When a class has fewer distinct labelled rows than components.
    """
    y_index = np.asarray(y_index)
    w = np.ones(y_index.size) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    seeds = np.random.default_rng(random_state).integers(0, 2**63 - 1, size=len(counts))
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    comp = offsets[y_index].astype(np.int64)
    if not np.any(np.asarray(counts) > 1):
        return comp
    ids = row_groups(X)
    for c, k in enumerate(counts):
        if k == 1:
            continue
        rows = np.flatnonzero(y_index == c)
        group, of_row = np.unique(ids[rows], return_inverse=True)
        of_row = of_row.reshape(-1)
        if group.size < k:
            raise ValueError(
                f"class index {c} has {group.size} distinct labelled row(s) ({rows.size} in all), fewer than its "
                f"{k} components: every component starts from at least one distinct labelled row (copies of a "
                "row start in the same component)"
            )
        weight = np.bincount(of_row, weights=w[rows], minlength=group.size)
        order = np.random.default_rng(seeds[c]).permutation(group.size)
        order = order[np.argsort(-weight[order], kind="stable")]
        # Least total weight first; (weight, groups, index) makes an empty part the least,
        # so the first k groups open the k parts even when weights are zero.
        heap = [(0.0, 0, j) for j in range(k)]
        part = np.empty(group.size, dtype=np.int64)
        for g in order:
            load, n, j = heapq.heappop(heap)
            part[g] = j
            heapq.heappush(heap, (load + weight[g], n + 1, j))
        comp[rows] = offsets[c] + part[of_row]
    return comp


def _piece_ids(piece):
    """Row ids of one validated piece: equal ids for equal rows, ordered by the rows' content.

    A dense array's rows are compared as their bytes (after turning ``-0.0`` into
    ``0.0``); a sparse matrix's as canonical CSR (duplicates summed, explicit zeros
    dropped, indices sorted: the same row however it was stored); a
    :class:`~bayesnb.core.missing.MaskedX` by its values and its mask; a
    :class:`~bayesnb.core.families.product.BlockRows` by every block's piece.
    Both comparisons are exact (``numpy.unique`` on the rows' bytes, a dict of the
    sparse rows' bytes: a hash, then an equality check).

    Returns
    -------
    int ndarray of shape (n_samples,)
    """
    if isinstance(piece, MaskedX):
        return _combine([_piece_ids(piece.X), _piece_ids(piece.mask)])
    if isinstance(piece, BlockRows):
        return _combine([_piece_ids(p) for p in piece.parts])
    if sp.issparse(piece):
        m = sp.csr_matrix(piece, copy=True)
        m.sum_duplicates()
        m.eliminate_zeros()
        m.sort_indices()
        keys = [
            m.indices[a:b].tobytes() + m.data[a:b].tobytes() for a, b in zip(m.indptr[:-1], m.indptr[1:])
        ]
        return _ids_of_keys(keys)
    a = np.asarray(piece)
    if a.ndim == 1:
        a = a[:, None]
    a = a.reshape(a.shape[0], -1)
    if a.dtype.kind == "O":
        return _ids_of_keys([pickle.dumps(tuple(row)) for row in a])
    if a.shape[1] == 0 or a.dtype.itemsize == 0:
        return np.zeros(a.shape[0], dtype=np.int64)
    if a.dtype.kind in "fc":
        a = a + 0  # -0.0 + 0 is 0.0: equal rows get equal bytes
    a = np.ascontiguousarray(a)
    rows = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    return np.unique(rows, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _ids_of_keys(keys):
    """Ids of byte keys, numbered in the keys' sorted order (a content order, not the rows')."""
    order = {key: i for i, key in enumerate(sorted(set(keys)))}
    return np.fromiter((order[key] for key in keys), dtype=np.int64, count=len(keys))


def _combine(ids):
    """Row ids equal where every piece's id is equal, ordered lexicographically by the pieces' ids."""
    if len(ids) == 1:
        return ids[0]
    return np.unique(np.column_stack(ids), axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def row_groups(X):
    """Which rows are equal: an id per row, the same for equal rows, ordered by the rows' content.

    Parameters
    ----------
    X : ndarray, sparse matrix, MaskedX or BlockRows of shape (n_samples, n_features)
        Validated input (``validate_input``: the rows as the estimator sees them).

    Returns
    -------
    int ndarray of shape (n_samples,)
        ``0 .. n_distinct - 1``; the numbering depends on the rows' content only (not on
        their order or multiplicity).
    """
    return _piece_ids(X)


def distinct_per_class(ids, y_index, n_classes):
    """The number of distinct rows of each class: an int ndarray of shape (n_classes,).

    Parameters
    ----------
    ids : int ndarray of shape (n_samples,)
        Row ids (:func:`row_groups`).
    y_index : int ndarray of shape (n_samples,)
        Class index of each row.
    n_classes : int
    """
    pairs = np.unique(np.column_stack([np.asarray(y_index), np.asarray(ids)]), axis=0)
    return np.bincount(pairs[:, 0], minlength=n_classes).astype(np.int64)


def allowed_components(y_index, component_class):
    """Bool array (n_labelled, n_components): True where a component belongs to the row's class."""
    return component_class[None, :] == np.asarray(y_index)[:, None]


def component_estimator(base, fitted, X_lab, comp, w_lab, component_class, layout=None):
    r"""The wrapped estimator with one class per component, fitted on the initial split.

    ``base`` is an unfitted clone of the user's estimator, ``fitted`` the labelled-only
    fit of it (one class per label). What the labelled fit learned is held: a
    hyperparameter set to ``"evidence"`` takes its fitted value, the class
    proportions' ``class_alpha`` is repeated for every component of a class. A
    data-scaled default prior (``prior=None``) is rebuilt from the same labelled rows
    (such priors are pooled over the rows, the same for any split into classes).
    Under ``with_stats`` the result keeps that prior for every later iteration.
    ``layout`` (batches of every training row, labelled or not) is what the estimator
    learns its input layout from, as the labelled fit did (``_fit_with_layout``: a
    table of categories that holds the unlabelled rows' codes too); None: ``X_lab``.

    Raises
    ------
    ValueError
        When the estimator cannot have one class per component (a prior given per
        class). Fixed class proportions get a placeholder ``class_prior`` of one entry
        per component, which the caller replaces; the temperature is set to 1.
    """
    params = base.get_params(deep=False)
    fixed = {}
    for name, value in params.items():
        if is_evidence(value) and hasattr(fitted, name + "_"):
            fixed[name] = getattr(fitted, name + "_")
    if "estimate" in params:
        fixed["estimate"] = fitted.estimate
    n_classes = fitted.classes_.size
    if "class_alpha" in params:
        ca = fixed.get("class_alpha", params["class_alpha"])
        if ca is not None and np.ndim(ca) == 1 and np.size(ca) == n_classes:
            fixed["class_alpha"] = np.asarray(ca, dtype=np.float64)[component_class]
    if params.get("class_prior") is not None:
        # One entry per component; the caller replaces it by the fixed class proportions
        # times the shares the initial split gives (WithinClassShares.conditioned).
        fixed["class_prior"] = np.full(component_class.size, 1.0 / component_class.size)
    if "calibrate" in params:
        # A calibration maps the classes' probabilities, which the wrapper forms from the
        # components (SemiSupervisedNB._fit_mixture_calibration); the copy has none.
        fixed["calibrate"] = None
    if "temperature" in params:
        # A temperature tempers the class's mixture likelihood, which the wrapper forms
        # from the components' untempered joints (SemiSupervisedNB.predict_joint_log_proba).
        fixed["temperature"] = 1.0
    base.set_params(**fixed)
    try:
        if layout is None:
            base.fit(X_lab, comp, sample_weight=w_lab)
        else:
            base._fit_with_layout(layout, X_lab, comp, sample_weight=w_lab)
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"n_components: {type(base).__name__} cannot be refitted with one class per mixture component "
            f"({err}); a prior given per class has no per-component value (give it for one class, broadcast)"
        ) from err
    return base


def is_fixed(estimator):
    """Whether ``estimator``'s class proportions are fixed (``class_prior`` given, or ``fit_prior=False``)."""
    params = estimator.get_params(deep=False)
    return params.get("class_prior") is not None or params.get("fit_prior", True) is False


def refusal(estimator):
    """Why ``estimator``'s settings cannot carry several components per class, or None.

    Fixed class proportions, a numeric temperature and ``calibrate="loo"`` (fitted to an
    approximate leave-one-out that says so) are taken (see :class:`WithinClassShares` and
    :class:`~bayesnb.SemiSupervisedNB`); ``temperature="loo"``, which is defined as the
    minimiser of the *exact* leave-one-out log loss, is not, since a mixture fitted by EM
    or VB has none in closed form.
    """
    params = estimator.get_params(deep=False)
    temperature = params.get("temperature", 1.0)
    if isinstance(temperature, str):
        return (
            "temperature='loo' is chosen by the training rows' exact leave-one-out log loss, and a class-"
            "conditional mixture fitted by EM or VB has none in closed form: leaving a row out moves every row's "
            "responsibilities (the fixed point itself). Give a number T >= 1 (the class's mixture likelihood "
            "p(x | y = c) is raised to 1/T)"
        )
    if is_fixed(estimator) and is_evidence(params.get("class_alpha")):
        return (
            "class_alpha='evidence' with fixed class proportions (class_prior / fit_prior=False): with several "
            "components class_alpha is the concentration of each class's Dirichlet on its components' shares, "
            "and the labelled fit, whose proportions are fixed, learns none; give class_alpha a number"
        )
    return None


class WithinClassShares(NamedTuple):
    r"""Fixed class proportions with learned component shares inside each class.

    With the class proportions :math:`\pi_c` fixed (``class_prior``, or uniform under
    ``fit_prior=False``), component :math:`k` of class :math:`c` has weight
    :math:`\pi_k = \pi_c\,\omega_k`, the shares :math:`\omega_{\cdot \mid c}` of each
    class under their own :math:`\mathrm{Dir}(\beta_{k \in c})` (``class_alpha`` per
    component), independent across classes. By the Dirichlet's aggregation property
    this is the free model's prior on :math:`\pi` with the class totals replaced by the
    fixed :math:`\pi_c`: given component counts :math:`N_k` the posterior of each
    class's shares is :math:`\mathrm{Dir}(\beta_{k \in c} + N_{k \in c})`, and the
    label part of the evidence is

    .. math::

        \sum_c N_c \log\pi_c + \sum_c \log\frac{B(\beta_{k \in c} + N_{k \in c})}{B(\beta_{k \in c})},
        \quad N_c = \textstyle\sum_{k \in c} N_k.

    A class of one component has :math:`\omega = 1` (no term).

    Attributes
    ----------
    class_log_pi : ndarray of shape (n_classes,)
        :math:`\log\pi_c`, fixed.
    alpha : ndarray of shape (n_components_total,)
        :math:`\beta_k`, the concentration of each component's share.
    component_class : int ndarray of shape (n_components_total,)
    """

    class_log_pi: np.ndarray
    alpha: np.ndarray
    component_class: np.ndarray

    def _classes(self):
        """(class index, its components) for every class of two or more components."""
        for c in range(self.class_log_pi.size):
            idx = np.flatnonzero(self.component_class == c)
            if idx.size > 1:
                yield c, idx

    def _within(self, fn):
        out = np.zeros(self.component_class.size)
        for _, idx in self._classes():
            out[idx] = fn(idx)
        return out

    def _point_log(self, idx, counts, kind):
        r"""One class's :math:`\log\hat\omega` at the estimate ``kind``; ``"map"`` without a mode is refused by component."""
        try:
            return _class_prior.point_log(Dirichlet(self.alpha[idx]), counts[idx], kind)
        except _dirichlet.UndefinedModeError as err:
            k = int(idx[err.index[-1]])
            counted = float(counts[k])
            # The component model's class k is component k (SemiSupervisedNB names its class).
            words = f"component {k}"
            raise _dirichlet.map_refusal_in_words(
                f"the share of {words} within its class", err.value,
                f"class_alpha {err.value - counted:.4g} plus {counted:.4g} weighted rows of that component",
                "class_alpha", k, words,
            ) from None

    def log_weights(self, counts, kind):
        r""":math:`\log\pi_c + \log\hat\omega_k` for the estimate ``kind`` of each class's shares given ``counts``."""
        counts = np.asarray(counts, dtype=np.float64)
        log_omega = self._within(lambda idx: self._point_log(idx, counts, kind))
        return self.class_log_pi[self.component_class] + log_omega

    def expected_log_weights(self, counts):
        r""":math:`\log\pi_c + E[\log\omega_k]` under each class's :math:`\mathrm{Dir}(\beta + N)` (VB's E-step)."""
        counts = np.asarray(counts, dtype=np.float64)
        e_log = self._within(lambda idx: np.asarray(_dirichlet.expected_log(self.alpha[idx] + counts[idx])))
        return self.class_log_pi[self.component_class] + e_log

    def log_density(self, counts, kind, raise_by):
        r""":math:`\sum_c \log\mathrm{Dir}(\hat\omega_{\cdot \mid c};\ \beta_{k \in c} + \text{raise\_by})` at the estimate ``kind``.

        The log prior of the shares in EM's objective (Laplace smoothing raises every
        concentration by one).
        """
        counts = np.asarray(counts, dtype=np.float64)
        total = 0.0
        for _, idx in self._classes():
            log_omega = self._point_log(idx, counts, kind)
            total += _dirichlet.log_density(self.alpha[idx] + raise_by, log_omega)
        return total

    def log_evidence(self, counts):
        """The label part of the log evidence of component counts ``counts`` (see the class)."""
        counts = np.asarray(counts, dtype=np.float64)
        lp = self.class_log_pi[self.component_class]
        with np.errstate(invalid="ignore"):
            total = float(np.sum(np.where(counts > 0, counts * lp, 0.0)))
        for _, idx in self._classes():
            total += float(_dirichlet.log_evidence(self.alpha[idx], counts[idx]))
        return total

    def sample_log_weights(self, key, counts, n):
        r"""``n`` posterior draws of :math:`\log\pi_c + \log\omega_k`, shape (n, n_components_total).

        Each class's shares from :math:`\mathrm{Dir}(\beta_{k \in c} + N_{k \in c})`
        (independent across classes, one key each, split from ``key``); the class
        totals are :math:`\pi_c` in every draw.
        """
        from bayesnb.core import _sampling

        counts = np.asarray(counts, dtype=np.float64)
        keys = _sampling.split(key, self.class_log_pi.size) if self.class_log_pi.size > 1 else (key,)
        out = np.tile(self.class_log_pi[self.component_class], (n, 1))
        for c, idx in self._classes():
            post = _class_prior.posterior(Dirichlet(self.alpha[idx]), counts[idx])
            out[:, idx] += np.asarray(_class_prior.sample_log(keys[c], post, n), dtype=np.float64)
        return out

    def conditioned(self, est, log_weights):
        r"""A copy of the fitted component estimator ``est`` whose fixed proportions are ``exp(log_weights)``.

        Its ``class_prior`` (parameter and fitted ``class_prior_``) is the vector of
        :math:`\pi_c\,\hat\omega_k`, so that its predictions, draws and a model file
        hold the fitted shares (its own draws hold them at that estimate; the wrapper's
        draw them, :meth:`sample_log_weights`).
        """
        import copy

        from bayesnb.core._validation import check_class_prior

        work = copy.copy(est)
        pi = np.exp(np.asarray(log_weights, dtype=np.float64))
        work.class_prior = pi
        work.class_prior_ = check_class_prior(pi, pi.size)
        return work


def within_class_shares(base, component_class):
    r"""The :class:`WithinClassShares` of an estimator with fixed class proportions, or None when they are learned.

    Parameters
    ----------
    base : bayesnb estimator (fitted or not)
        Its ``class_prior`` (or, under ``fit_prior=False``, uniform proportions) gives the
        fixed :math:`\pi_c`, its ``class_alpha`` (a number, or one per class) every
        component's :math:`\beta_k`. Everything is read from its parameters, so a
        loaded estimator rebuilds the same object.
    component_class : int ndarray of shape (n_components_total,)
    """
    if not is_fixed(base):
        return None
    from bayesnb.core._validation import check_class_prior

    component_class = np.asarray(component_class)
    n_classes = int(component_class.max()) + 1
    params = base.get_params(deep=False)
    given = params.get("class_prior")
    pi = np.full(n_classes, 1.0 / n_classes) if given is None else check_class_prior(given, n_classes)
    ca = np.asarray(params.get("class_alpha", 1.0), dtype=np.float64)
    if ca.ndim == 1 and ca.size == n_classes:
        ca = ca[component_class]
    alpha = np.asarray(dirichlet_from_alpha(ca, (component_class.size,), "class_alpha").concentration, np.float64)
    with np.errstate(divide="ignore"):
        return WithinClassShares(np.log(pi), alpha, component_class)


def sum_components(joint, component_class, n_classes):
    r"""Per-class log joint from per-component ones: :math:`\log\sum_{k \in c} e^{j_{ik}}`.

    Parameters
    ----------
    joint : ndarray of shape (..., n_components)
        Leading axes (rows, draws) are kept.
    component_class : int ndarray of shape (n_components,)
    n_classes : int

    Returns
    -------
    ndarray of shape (..., n_classes)
    """
    joint = np.asarray(joint, dtype=np.float64)
    out = np.empty(joint.shape[:-1] + (n_classes,))
    for c in range(n_classes):
        out[..., c] = logsumexp(joint[..., component_class == c], axis=-1)
    return out
