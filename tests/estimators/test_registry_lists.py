"""A family registered at test time is picked up by every estimator list of the tests.

The throwaway counts family and its estimator are those of test_protocol_hooks.py (the
Poisson closed forms under a new name, an estimator no list names); registered here in a
copy of the registries, so nothing outlives the test. Then scikit-learn's estimator
checks, the bad-input matrix and the persistence round trips, whose lists are read off
the registry (tests/_registered.py), include it without an edit, and their checks pass
on it.
"""

from __future__ import annotations

import pytest
from _registered import expected_failed_checks, family_estimators
from sklearn.utils import estimator_checks
from test_protocol_hooks import _NEW_COUNTS, _NewCountsNB

from bayesnb.core import families
from bayesnb.core.families import protocol
from bayesnb.io import persistence


@pytest.fixture
def throwaway_family(monkeypatch):
    """``_NEW_COUNTS`` and ``_NewCountsNB`` registered for one test."""
    monkeypatch.setattr(protocol, "_REGISTRY", dict(protocol._REGISTRY))
    monkeypatch.setattr(persistence, "_ESTIMATORS", dict(persistence._ESTIMATORS))
    families.register(_NEW_COUNTS)
    persistence.register_estimator(_NewCountsNB)
    return _NEW_COUNTS.name


def test_the_sklearn_checks_list_picks_it_up(throwaway_family):
    found = [est for name, _, est in family_estimators() if name == throwaway_family]
    assert len(found) == 1 and type(found[0]) is _NewCountsNB
    est = found[0]
    # Its expected failures follow from its support and what it refuses (Poisson's
    # non-integer refusal), as the registry's list in test_estimators.py computes them.
    expected = expected_failed_checks(est)
    assert "check_classifiers_train" in expected and "check_get_params_invariance" not in expected
    for check in (
        estimator_checks.check_get_params_invariance,
        estimator_checks.check_parameters_default_constructible,
        estimator_checks.check_no_attributes_set_in_init,
        estimator_checks.check_estimator_repr,
    ):
        check(type(est).__name__, est)


def test_the_bad_input_matrix_picks_it_up(throwaway_family, monkeypatch):
    import test_bad_input_matrix as matrix

    specs = matrix.registered_specs()
    assert "_NewCountsNB" in specs and specs["_NewCountsNB"][2] == 0  # counts, first column
    monkeypatch.setattr(matrix, "SPECS", {**matrix.SPECS, **specs})
    ran = 0
    for case_id, names, action, exc, match in matrix.CASES:
        if names is matrix.NEW:  # the cases of every estimator beyond the discrete three
            with pytest.raises(exc, match=match):
                action("_NewCountsNB")
            ran += 1
    assert ran >= 15


def test_the_persistence_round_trips_pick_it_up(throwaway_family, tmp_path):
    import test_persistence

    cases = [c for c in test_persistence.registered_cases() if c[0] == f"registered-{throwaway_family}"]
    assert len(cases) == 1
    case, est, X = cases[0]
    assert type(est) is _NewCountsNB
    test_persistence.test_round_trip_is_bit_identical(case, est, X, tmp_path)


def test_after_the_tests_no_list_has_it():
    # Runs last in this module: the fixture left the registries as they were.
    assert _NEW_COUNTS.name not in families.names()
    assert not any(type(est) is _NewCountsNB for _, _, est in family_estimators())
