"""The test lists of estimators, read off the family registry (issue 41).

``families.names()`` -> :func:`bayesnb.estimators.estimator_for`: a family registered
later (``tests/estimators/test_registry_lists.py`` registers a throwaway one at test
time) is checked by every list built here, without an edit: scikit-learn's estimator
checks (``tests/estimators/test_estimators.py``), the bad-input matrix
(``tests/estimators/test_bad_input_matrix.py``) and the persistence round trips
(``tests/io/test_persistence.py``). The few things a test must know of a family are
asked of the family (its ``support``) or of the estimator (what it refuses), never of
its class.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from _sklearn_expected import ALWAYS_FRACTIONAL, FAIL_ON_FRACTIONAL_X, FRACTIONAL
from sklearn.base import clone

from bayesnb.core import families
from bayesnb.estimators import estimator_for

__all__ = ["expected_failed_checks", "family_estimators", "refuses_fractions", "rows_in_support"]


def family_estimators():
    """``[(family name, support, unfitted estimator)]`` of every registered family, in registration order."""
    return [(name, families.get(name).support, estimator_for(name)) for name in families.names()]


def rows_in_support(support, rng, n):
    """``(X, y)``: ``n`` rows in a family's ``support`` (3 features, classes "a" and "b" told
    apart by their scale), or a :class:`~bayesnb.MixedNB`'s three columns for ``"mixed"``."""
    y = np.repeat(["a", "b"], n // 2)
    shift = (y == "b")[:, None]
    if support == "binary":
        X = (rng.random((n, 3)) < np.where(shift, 0.7, 0.3)).astype(np.int64)
    elif support == "codes":
        X = rng.integers(0, 3, (n, 3))
    elif support == "positive":
        X = rng.exponential(np.where(shift, 2.0, 1.0), (n, 3))
    elif support == "real":
        X = rng.normal(np.where(shift, 1.0, 0.0), 1.0, (n, 3))
    elif support == "counts":
        X = rng.poisson(np.where(shift, 4.0, 2.0), (n, 3))
    else:  # a MixedNB: one Gaussian, one Bernoulli and one categorical column
        X = pd.DataFrame(
            {
                "length": rng.normal(size=n) + shift[:, 0],
                "has_link": rng.random(n) < np.where(shift[:, 0], 0.8, 0.2),
                "sender": pd.Categorical(np.where(rng.random(n) < 0.5, "unknown", "contact")),
            }
        )
    return X, y


def refuses_fractions(estimator):
    """Whether ``estimator`` refuses non-integer values where its family's support allows
    integers (e.g. Poisson counts), asked of the estimator by fitting it on 0.5, 1.5, ..."""
    X = np.array([[0.5, 1.5], [1.5, 0.5], [2.5, 1.5], [0.5, 2.5]])
    try:
        clone(estimator).fit(X, [0, 0, 1, 1])
    except ValueError as exc:
        return "integer" in str(exc)
    return False


# Category codes: CategoricalNB-like estimators take integer codes and refuse anything
# else instead of silently casting it (scikit-learn's own CategoricalNB truncates floats
# to int). These checks feed random floats / an object array of floats.
CODES_EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": (
        "feeds random floats as X; an estimator of category codes refuses non-integer codes "
        "instead of silently casting them to int"
    ),
    "check_dtype_object": (
        "feeds an object array of random floats; an estimator of category codes refuses "
        "non-integer codes (and object dtype) instead of silently casting them to int"
    ),
    "check_classifiers_one_label_sample_weights": (
        "feeds random floats as X, so the non-integer-code error comes before the "
        "one-class error the check looks for; codes are not cast from floats"
    ),
}


def expected_failed_checks(estimator):
    """The scikit-learn checks ``estimator`` fails by design, with the reason, from its
    family's support and what it refuses (``{}`` for an estimator of no family)."""
    family = getattr(type(estimator), "_family", None)
    support = getattr(family, "support", None)
    if support == "codes":
        return dict(CODES_EXPECTED_FAILURES)
    if support == "counts" and refuses_fractions(estimator):
        return {name: FRACTIONAL for name in ALWAYS_FRACTIONAL + FAIL_ON_FRACTIONAL_X}
    return {}
