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
``n_components``, the seeded initial split of each class's labelled rows, the component
estimator, and the sum over a class's components. The EM and VB loops are
:class:`~bayesnb.SemiSupervisedNB`'s.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from sklearn.base import clone

from bayesnb.core.empirical_bayes import is_evidence

__all__ = [
    "check_n_components",
    "resolve",
    "initial_components",
    "component_estimator",
    "sum_components",
    "allowed_components",
    "refusal",
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


def initial_components(y_index, counts, random_state):
    r"""The component of every labelled row at the start: a seeded random even split of each class's rows.

    ``numpy.random.default_rng(random_state)`` draws one seed per class (always
    ``n_classes`` of them, so a class's start does not depend on the other classes'
    numbers of components); each class's labelled rows are shuffled by a generator of
    its seed and cut into :math:`K_c` parts of sizes differing by at most one
    (``numpy.array_split``); part :math:`j` starts as component :math:`j` of the class.
    A class of one component keeps all its rows in it.

    Parameters
    ----------
    y_index : int ndarray of shape (n_labelled,)
        Class index of each labelled row.
    counts : int ndarray of shape (n_classes,)
        Components per class.
    random_state : int, numpy Generator or None

    Returns
    -------
    int ndarray of shape (n_labelled,)
        Component index (``0 .. sum(counts) - 1``, grouped by class) of every row.
    """
    seeds = np.random.default_rng(random_state).integers(0, 2**63 - 1, size=len(counts))
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    comp = offsets[y_index].astype(np.int64)
    for c, k in enumerate(counts):
        if k == 1:
            continue
        rows = np.flatnonzero(y_index == c)
        if rows.size < k:
            raise ValueError(
                f"class index {c} has {rows.size} labelled row(s), fewer than its {k} components: "
                "every component starts from at least one labelled row"
            )
        for j, part in enumerate(np.array_split(np.random.default_rng(seeds[c]).permutation(rows.size), k)):
            comp[rows[part]] = offsets[c] + j
    return comp


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
        class, fixed class proportions, a calibration or temperature, which act on the
        class scores and not on the components).
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


def refusal(estimator):
    """Why ``estimator``'s settings cannot carry several components per class, or None."""
    params = estimator.get_params(deep=False)
    if params.get("class_prior") is not None or params.get("fit_prior", True) is False:
        return (
            "several components per class need a Dirichlet on the (class, component) proportions; "
            "fixed class proportions (class_prior, fit_prior=False) leave the components' shares undefined"
        )
    if params.get("calibrate") is not None:
        return "calibrate acts on the classes' scores; it is not defined over mixture components"
    temperature = params.get("temperature", 1.0)
    if isinstance(temperature, str) or temperature != 1.0:
        return "a temperature divides each component's log-likelihood, not the class mixture's; use temperature=1"
    return None


def sum_components(joint, component_class, n_classes):
    r"""Per-class log joint from per-component ones: :math:`\log\sum_{k \in c} e^{j_{ik}}`.

    Parameters
    ----------
    joint : ndarray of shape (n_samples, n_components)
    component_class : int ndarray of shape (n_components,)
    n_classes : int

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    joint = np.asarray(joint, dtype=np.float64)
    out = np.empty((joint.shape[0], n_classes))
    for c in range(n_classes):
        out[:, c] = logsumexp(joint[:, component_class == c], axis=1)
    return out
