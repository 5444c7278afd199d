"""scikit-learn estimator checks that PoissonNB fails for one stated reason.

Shared by tests/estimators/test_poisson_nb.py and tests/estimators/test_sklearn_checks.py so that the list and
its justification live once.
"""

FRACTIONAL = (
    "feeds random non-integer floats as X; PoissonNB refuses non-integer counts (the "
    "Poisson distribution has mass only on the integers) instead of rounding them"
)
# Fed as PoissonNB is really tagged (positive_only), these checks pass non-integer floats
# and fail on the clear non-integer error; every one of them passes on an estimator fed
# integer counts (tests/estimators/test_poisson_nb.py's _IntegerFedPoissonNB), which proves that the
# fractional input is the only reason.
FAIL_ON_FRACTIONAL_X = (
    "check_all_zero_sample_weights_error",
    "check_classifiers_classes",
    "check_classifiers_one_label",
    "check_classifiers_regression_target",
    "check_classifiers_train",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_partial_fit_n_features",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_readonly_memmap_input",
    "check_requires_y_none",
    "check_sample_weights_list",
    "check_supervised_y_2d",
)
# These draw X with ``rng.uniform`` whatever the tags say.
ALWAYS_FRACTIONAL = (
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data",
    "check_classifiers_one_label_sample_weights",
)
