r"""The one place that knows which arviz is installed: 0.x (``InferenceData``) or 1.x (``DataTree``).

bayesnb supports both lines: arviz 0.2x on Python 3.11, whose results are
``arviz.InferenceData`` and ``ELPDData`` (a pandas Series with ``elpd_loo`` / ``loo_i``),
and arviz 1.x (Python >= 3.12; the meta package over ``arviz-base``, ``arviz-stats`` and
``arviz-plots``), whose results are ``xarray.DataTree`` and ``ELPDData`` dataclasses with
``elpd`` / ``elpd_i``. Everything version-dependent goes through these few functions, so
there is one export, one conversion of NUTS draws and one ELPD builder, and each returns
the installed arviz's native object:

* :func:`from_dict`: groups of arrays to ``InferenceData`` / ``DataTree`` (same groups,
  names, dims, coords and attributes on both);
* :func:`group_names`, :func:`get_group`, :func:`set_group`: the groups of either object;
* :func:`elpd_data` and :func:`elpd_fields`: build and read an ``ELPDData`` under
  version-neutral names (the public reader is :func:`bayesnb.analysis.elpd.elpd_values`);
* :func:`autocov` and :func:`pareto_k`: the two array statistics whose home moved
  (``az.autocov`` and ``az.psislw`` in 0.x, ``arviz_stats.base.array_stats`` in 1.x);
  ``az.ess``, ``az.rhat``, ``az.mcse`` and ``az.convert_to_dataset`` keep their names.

arviz is imported inside the functions: ``import bayesnb`` does not load it.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = [
    "major",
    "from_dict",
    "group_names",
    "get_group",
    "set_group",
    "elpd_data",
    "elpd_fields",
    "ELPD_FIELDS",
    "autocov",
    "pareto_k",
]


@functools.cache
def major():
    """The major version of the installed arviz (0 or 1).

    Returns
    -------
    int
    """
    import arviz

    return int(str(arviz.__version__).split(".")[0])


def from_dict(groups, *, dims, coords, attrs=None):
    """``az.from_dict`` of named groups, as the installed arviz's native object.

    Parameters
    ----------
    groups : dict of group name -> dict of variable name -> array
        Groups whose name contains ``data`` (``observed_data``, ``constant_data``,
        ``predictions_constant_data``) have no ``(chain, draw)`` axes; the others lead
        with them.
    dims : dict of variable name -> sequence of dim names
        The dims after ``(chain, draw)``; used for every group, ``predictions`` too.
    coords : dict of dim name -> values
    attrs : dict, optional
        Attributes of the object (``data.attrs``: the ``InferenceData``'s, the
        ``DataTree``'s root).

    Returns
    -------
    arviz.InferenceData (arviz 0.x) or xarray.DataTree (arviz 1.x)
    """
    import arviz as az

    dims = {k: list(v) for k, v in dims.items()}
    coords = dict(coords)
    attrs = dict(attrs or {})
    if major() >= 1:
        # arviz 1.x reads predictions' dims and coords from pred_dims / pred_coords only,
        # and attributes per group ("/" for the root).
        return az.from_dict(
            dict(groups), dims=dims, coords=coords, pred_dims=dims, pred_coords=coords, attrs={"/": attrs},
        )
    return az.from_dict(**groups, dims=dims, coords=coords, attrs=attrs)


def group_names(data):
    """The names of the groups of an ``InferenceData`` or ``DataTree``, in order.

    Parameters
    ----------
    data : arviz.InferenceData or xarray.DataTree

    Returns
    -------
    list of str
    """
    if hasattr(data, "children"):
        return list(data.children)
    return list(data.groups())


def get_group(data, name):
    """One group as an ``xarray.Dataset`` (a copy on arviz 1.x, where a node is a view).

    Parameters
    ----------
    data : arviz.InferenceData or xarray.DataTree
    name : str

    Returns
    -------
    xarray.Dataset
    """
    if hasattr(data, "children"):
        return data[name].to_dataset()
    return getattr(data, name)


def set_group(data, name, dataset):
    """Replace (or add) one group by an ``xarray.Dataset``, in place.

    Parameters
    ----------
    data : arviz.InferenceData or xarray.DataTree
    name : str
    dataset : xarray.Dataset
    """
    if hasattr(data, "children"):
        data[name] = dataset
    else:
        setattr(data, name, dataset)


#: The version-neutral names of :func:`elpd_fields` -> (arviz 0.x entry, arviz 1.x attribute).
ELPD_FIELDS = {
    "elpd": ("elpd_loo", "elpd"),
    "se": ("se", "se"),
    "p": ("p_loo", "p"),
    "n_samples": ("n_samples", "n_samples"),
    "n_data_points": ("n_data_points", "n_data_points"),
    "warning": ("warning", "warning"),
    "pointwise": ("loo_i", "elpd_i"),
    "scale": ("scale", "scale"),
}


def elpd_data(pointwise, *, p, n_samples, warning, extra=None):
    """An ``ELPDData`` of leave-one-out values, as ``az.loo`` of the installed arviz returns it.

    arviz 0.x: a pandas Series with entries ``elpd_loo``, ``se``, ``p_loo``,
    ``n_samples``, ``n_data_points``, ``warning``, ``loo_i``, ``scale``; arviz 1.x: an
    ``ELPDDataLOO`` with ``elpd``, ``se``, ``p``, ..., ``elpd_i`` (no Pareto
    :math:`\\hat k`: nothing was importance-sampled). Both read ``result[name]`` and are
    taken by ``az.compare``.

    Parameters
    ----------
    pointwise : xarray.DataArray of shape (n_data_points,)
        The pointwise log predictive densities.
    p : float
        Effective number of parameters.
    n_samples : int
    warning : bool
    extra : dict, optional
        Further entries (bayesnb's ``approximate``, ``approximate_reason``), readable as
        ``result[name]`` on both.

    Returns
    -------
    arviz.ELPDData
    """
    import arviz as az

    values = np.asarray(pointwise.values, dtype=np.float64)
    n = int(values.size)
    finite = bool(np.isfinite(values).all())
    with np.errstate(invalid="ignore"):
        # sqrt(n Var(loo_i)), as az.loo on both lines.
        se = float(np.sqrt(n * np.var(values))) if finite else np.nan
    extra = dict(extra or {})
    if major() >= 1:
        result = az.ELPDDataLOO(
            elpd=float(values.sum()), se=se, p=float(p), n_samples=int(n_samples), n_data_points=n, scale="log",
            warning=bool(warning), good_k=None, elpd_i=pointwise.rename("elpd_i"), pareto_k=None,
        )
        for name, value in extra.items():
            setattr(result, name, value)
        return result
    return az.ELPDData(
        data=[float(values.sum()), se, float(p), int(n_samples), n, bool(warning), pointwise.rename("loo_i"), "log",
              *extra.values()],
        index=["elpd_loo", "se", "p_loo", "n_samples", "n_data_points", "warning", "loo_i", "scale", *extra],
    )


def elpd_fields(result):
    """The entries of an ``ELPDData`` of either arviz line under the names of :data:`ELPD_FIELDS`.

    Parameters
    ----------
    result : arviz.ELPDData
        From :func:`elpd_data`, ``az.loo`` or ``az.waic`` (whose 0.x names ``elpd_waic``,
        ``p_waic``, ``waic_i`` are read too).

    Returns
    -------
    dict
    """
    out = {}
    for neutral, names in ELPD_FIELDS.items():
        candidates = list(names)
        if neutral in ("elpd", "p", "pointwise"):
            candidates += {"elpd": ["elpd_waic"], "p": ["p_waic"], "pointwise": ["waic_i"]}[neutral]
        for name in candidates:
            try:
                value = result[name]
            except (KeyError, AttributeError):
                continue
            out[neutral] = value
            break
        else:
            raise KeyError(f"{type(result).__name__} has none of the entries {candidates} ({neutral})")
    return out


def autocov(ary, axis=-1):
    """Autocovariance along ``axis`` (arviz's FFT estimator, divided by the length).

    Parameters
    ----------
    ary : ndarray
    axis : int

    Returns
    -------
    ndarray of the shape of ``ary``
    """
    if major() >= 1:
        from arviz_stats.base import array_stats

        return np.asarray(array_stats.autocov(np.asarray(ary, dtype=np.float64), axis=axis))
    import arviz as az

    return np.asarray(az.autocov(np.asarray(ary, dtype=np.float64), axis=axis))


def pareto_k(log_weights):
    """Pareto shape :math:`\\hat k` of PSIS of log weights along the last axis (arviz's ``psislw``).

    Parameters
    ----------
    log_weights : ndarray of shape (..., n)

    Returns
    -------
    ndarray of shape (...)
    """
    log_weights = np.asarray(log_weights, dtype=np.float64)
    if major() >= 1:
        from arviz_stats.base import array_stats

        return np.asarray(array_stats.psislw(log_weights, r_eff=1, axis=-1)[1], dtype=np.float64)
    import arviz as az

    return np.asarray(az.psislw(log_weights, normalize=False)[1], dtype=np.float64)
