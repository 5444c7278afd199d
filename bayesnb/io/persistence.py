r"""Saving and loading estimators without pickle.

``estimator.save(path)`` (or :func:`save`, which also takes a fitted scikit-learn
``Pipeline`` of known transforms ending in a bayesnb estimator) writes one file;
``bayesnb.load(path)`` reads it back. Loading
never executes code from the file: no pickle anywhere (arrays are read with
``numpy.load(..., allow_pickle=False)``), the metadata is plain JSON, and every class a
file may name (estimators, priors, statistics) is looked up in a fixed table of
bayesnb's own types, never imported by name.

File format (``format_version`` 1, 2 and 3)
----------------------------------------
A ZIP archive, readable by ``numpy.load`` as an ``.npz`` (the suggested suffix), holding

* ``metadata.json``: UTF-8 JSON with the keys

  - ``"format"``: ``"bayesnb-model"``; ``"format_version"``: the lowest version that
    holds every field of the file: ``3`` for a pipeline, else ``2`` where the Gaussian
    statistics carry their feature ranges (``low``, ``high``), else ``1``;
  - ``"library_version"``: the bayesnb version that wrote the file;
  - ``"estimator"``: the estimator's state (below); or, in a file of a ``Pipeline``
    (version 3), ``"pipeline"`` instead (below);
  - ``"arrays"``: ``{name: {"dtype": numpy dtype string, "shape": [...]}}`` for every
    array member;
  - ``"checksum"``: ``"sha256:<hex>"``, the SHA-256 of the canonical JSON of the other
    keys (sorted keys, no whitespace) followed, for each array in name order, by its
    name, dtype string, shape and C-order bytes (each length-prefixed).

* ``<name>.npy`` for every array of ``"arrays"`` (numpy's own ``.npy`` format; never
  object dtype).

An estimator's state is ``{"class": name, "params": get_params(deep=False),
"fitted": bool, "attributes": {...}}``; ``name`` is the class's registered name (its
``__name__``, or ``"sklearn.MultinomialNB"`` etc. for the classes of
:mod:`bayesnb.sklearn`, which files written by earlier versions never name; ``bayesnb.load``
imports both estimator layers before it reads a file). Values are encoded as JSON where JSON is exact
(``None``, booleans, strings, integers, finite floats, lists) and otherwise as a
one-key object naming the type: ``{"array": name}`` (with ``"object": "str" | "int" |
"float" | "bool"`` for an object array of such Python values, e.g. string class labels),
``{"scalar": name}`` (a numpy scalar, stored as a 0-d array), ``{"float": "nan" | "inf"
| "-inf"}``, ``{"tuple": [...]}``, ``{"dict": [[key, value], ...]}``,
``{"slice": [start, stop, step]}``, ``{"namedtuple": type name, "fields": {...}}`` (a
prior or statistics pytree of :mod:`bayesnb.core.priors` / :mod:`bayesnb.core.stats`) and
``{"estimator": state}`` (nested estimators: :class:`~bayesnb.MixedNB`'s blocks,
:class:`~bayesnb.SemiSupervisedNB`'s wrapped estimator).

A class registered with ``own_state`` (:func:`register_estimator`) names its fitted
``"attributes"`` itself, encoded as above. :class:`~bayesnb.SemiSupervisedNB`'s are
``estimator_`` (the fitted wrapped estimator, nested; with several mixture components
its classes are the components), ``classes_``, ``n_components_`` (int64, one per class),
``unlabelled_weight_``, ``weight_curve_`` and ``components_curve_`` (None or dicts of
arrays), ``n_iter_``, ``converged_``, ``log_posterior_`` (EM) or ``elbo_`` (VB), and the
training rows' responsibilities: ``label_distributions_`` with one component per class,
else ``component_responsibilities_`` and ``initial_components_`` (the labelled rows'
starting components, int64). These are new attribute names of a new class, in the
encoding of version 1, so such a file still declares the lowest version its other fields
need (1, or 2 for Gaussian ranges): a bayesnb without the class refuses it as an unknown
estimator class, which is the right message, and no version bump is needed.

Pipelines (``format_version`` 3)
--------------------------------
:func:`save` takes a fitted ``sklearn.pipeline.Pipeline`` whose steps before the last are
transforms of a fixed table (:data:`bayesnb.io._sklearn_steps.SUPPORTED`:
``CountVectorizer``, ``TfidfVectorizer``, ``TfidfTransformer``, ``StandardScaler``) or
``"passthrough"``, and whose final step is a bayesnb estimator. The top-level key
``"pipeline"`` replaces ``"estimator"``: ``{"steps": [[name, step], ...], "verbose": bool}``
where a step is ``"passthrough"``, ``{"transform": {"class": "sklearn.feature_extraction.text.CountVectorizer",
"params": {...}, "attributes": {...}}}`` or, for the last, ``{"estimator": state}``. A
transform's params are its ``get_params(deep=False)`` (a ``dtype`` by its numpy name, read
back through a whitelist); its attributes are the fitted state its ``transform`` reads
(``vocabulary_`` as the UTF-8 bytes of its terms, their offsets and their columns;
``fixed_vocabulary_``; ``idf_``; ``mean_``, ``var_``, ``scale_``, ``n_samples_seen_``,
``n_features_in_``, ``feature_names_in_``). A parameter that is code (a callable
``tokenizer``, ``preprocessor``, ``analyzer``), a ``memory`` cache, or any other transform
is refused at save with a ``TypeError``. Loading builds each transform from the table (never
a class named by the file) with checked parameters and sets the checked attributes on it
(a vocabulary's columns a permutation of ``range(n)`` with distinct terms and no more terms
than its bytes can hold, an idf finite and ``>= 1``, a scale finite and positive), and
checks that each step's output width is the next step's input width. Such a file declares
version 3 because its content is new at the top level: an earlier bayesnb, which would find
no ``"estimator"``, refuses it as newer than it reads.

What is stored, and why
-----------------------
The fitted state is what cannot be recomputed: ``classes_``, ``n_features_in_``,
``feature_names_in_`` (when present), the additive sufficient statistics ``stats_`` and
a few estimator-specific fields (``n_categories_``; :class:`~bayesnb.MixedNB`'s fitted
blocks and learned categories; the private state a class registers with
:func:`register_estimator`, e.g. scikit-learn's variance floor of
``bayesnb.sklearn.GaussianNB``). Priors and posteriors are *not* stored: ``load``
recomputes them from the parameters and the statistics with the same code that
``fit`` ran, so

* the round trip is bit-identical in every prediction, evidence and posterior draw
  (same inputs, same deterministic computation);
* a file cannot hold a posterior inconsistent with its statistics;
* ``partial_fit`` after ``load`` continues exactly as without the round trip, because
  the statistics are the whole of what ``partial_fit`` updates.

:class:`~bayesnb.SemiSupervisedNB` stores its fitted wrapped estimator so (its prior as
parameters: the hyperparameters and data-scaled default prior the labelled rows gave,
which its expected statistics would not give again; a :class:`~bayesnb.MixedNB`'s blocks
conditioned on the product's statistics), and what cannot be recomputed without the
training rows: the choices of ``"auto"`` and their curves, the trace, the training rows'
responsibilities. What is a function of those is derived at load as ``fit`` derives it
(``component_class_``, ``component_weights_``, ``label_distributions_`` with components,
``transduction_``, ``initial_responsibilities_``). Everything is validated as ``fit``
would have produced it: the numbers of components are at least 1 and add up to the
wrapped estimator's classes (checked before any array is sized from them), the initial
components index those, responsibilities are finite, non-negative and sum to 1 per row,
shapes agree, the weight is finite and non-negative and is the curve's choice.

A file written by a different bayesnb version still loads (its posterior is recomputed
by the running version, with a warning if the versions differ); a newer
``format_version`` is refused. Version 2 added the smallest and largest value of every
(class, feature) to the Gaussian statistics (:class:`~bayesnb.core.stats.GaussianStats`,
:class:`~bayesnb.core.stats.MaskedGaussianStats`, :class:`~bayesnb.core.stats.ScatterStats`):
they are checked against the sums at load (finite, ``low <= high``, the mean inside, the
sum of squares within what the range allows). A version-1 file has none: they are
reconstructed from the sums as the narrowest ranges those allow
(:func:`bayesnb.core.stats.range_from_sums`), so the check that a feature spreads over
more than 2**-500 refuses such a model whenever its data could have been that narrow.

The checksum detects truncation, corruption and edits of a file; it is not a signature
(whoever can write the file can recompute it). A crafted file can at worst describe a
wrong model or fail validation: it cannot run code.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from bayesnb.exceptions import ModelFileError
from bayesnb.io._atomic import atomic_write

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_ARRAY_BYTES", "MAX_METADATA_BYTES", "MAX_METADATA_DEPTH", "ModelFileError", "save", "load", "estimator_class", "register_estimator", "register_pytree"]

FORMAT = "bayesnb-model"
#: The newest format version this bayesnb reads and writes. Version 2 added the feature
#: ranges (``low``, ``high``) of the Gaussian statistics; a file declares the lowest
#: version that holds all its fields, so a file without them is still version 1. Version 3
#: added the files of a scikit-learn ``Pipeline`` (top-level ``"pipeline"``).
FORMAT_VERSION = 3
_METADATA = "metadata.json"
_ZIP_MAGIC = b"PK\x03\x04"
# dtype kinds an array member may have: booleans, numbers, strings, dates.
_ARRAY_KINDS = "biufcUSMm"

# Fitted attributes recomputed by ``BaseNB.update_prior`` on load (never stored). The
# evidence-learned hyperparameters are among them: they are a deterministic function of
# the statistics, so the optimisation re-run on load gives the same values bit for bit.
_DERIVED = frozenset(
    {
        "prior_",
        "posterior_",
        "class_prior_",
        "class_dirichlet_",
        "class_posterior_",
        "class_count_",
        "alpha_",
        "class_alpha_",
        "evidence_trace_",
        "precision_",
    }
)
# Fitted attributes that are state: stored and restored as they are.
_STATE = (
    "classes_",
    "n_features_in_",
    "feature_names_in_",
    "stats_",
    "n_categories_",
    "estimators_",
    "categories_",
    "_user_min_categories",
    # temperature="loo" chose it from the training rows, which are not stored.
    "temperature_",
    # calibrate="loo" fitted it to the training rows' leave-one-out scores (its type is
    # registered by bayesnb.estimators).
    "calibration_",
)


# ----------------------------------------------------------------------------- type tables


# Filled by the layers that define the classes (the estimators register themselves when
# bayesnb.estimators is imported, bayesnb.sklearn's when it is imported), so that this
# module imports none of them: loading looks a class up here and never imports code
# named by a file.
_ESTIMATORS: dict[str, type] = {}
_PYTREES: dict[str, type] = {}
# Registered name -> private fitted attributes that are state of that class (saved and
# restored beside _STATE; validated by the class's own _refresh on load).
_EXTRA_STATE: dict[str, tuple] = {}
# Registered name -> (save_state, restore_state) of the classes that save and validate
# their fitted state themselves (register_estimator(..., own_state=...)): a meta-estimator
# whose fitted state is not statistics but a fitted estimator and what it chose
# (SemiSupervisedNB).
_OWN_STATE: dict[str, tuple] = {}


def _register(table, cls, what, name=None):
    name = cls.__name__ if name is None else name
    held = table.get(name)
    if held is not None and held is not cls:
        raise ValueError(f"another {what} named {name!r} is already registered")
    table[name] = cls
    return cls


def register_estimator(cls=None, *, name=None, state=(), own_state=None):
    """Allow instances of ``cls`` to be saved and loaded (a class decorator).

    Parameters
    ----------
    cls : type
        An estimator class.
    name : str, optional
        The name files give the class (default ``cls.__name__``). A class of a namespace
        with the main namespace's class names (:mod:`bayesnb.sklearn`) is registered as
        ``"<namespace>.<class>"``, e.g. ``"sklearn.MultinomialNB"``.
    state : tuple of str
        Private fitted attributes (``_name_``) that are state of this class, saved and
        restored beside the common ones (e.g. scikit-learn's variance floor of
        ``bayesnb.sklearn.GaussianNB``). The class validates them when its posterior is
        recomputed on load.
    own_state : tuple of two callables, optional
        ``(save_state, restore_state)`` for a class that saves and validates its fitted
        state itself, instead of the statistics-based state of the other estimators
        (the estimator layer hands them over here, so this module calls no private
        member of an estimator): ``save_state(estimator)`` returns None when unfitted or
        a dict of fitted attribute name -> value (values of the kinds this format
        stores, nested estimators included); ``restore_state(estimator, attributes)`` is
        called on a new instance (built from the saved parameters) with those values
        decoded (nested estimators already restored and validated), validates them as
        ``fit`` would have produced them and raises ``ValueError`` or ``TypeError``
        naming the field otherwise (the error becomes a ``ModelFileError``).

    Returns
    -------
    type
        ``cls`` itself (or, without ``cls``, a decorator).
    """
    if cls is None:
        return lambda c: register_estimator(c, name=name, state=state, own_state=own_state)
    state = tuple(state)
    for key in state:
        if not (isinstance(key, str) and key.startswith("_") and key.endswith("_") and not key.startswith("__")):
            raise ValueError(f"state names private fitted attributes such as '_epsilon_', got {key!r}")
    name = cls.__name__ if name is None else name
    if own_state is not None and not (
        isinstance(own_state, tuple) and len(own_state) == 2 and all(callable(f) for f in own_state)
    ):
        raise TypeError(f"own_state must be a pair of callables (save_state, restore_state), got {own_state!r}")
    _register(_ESTIMATORS, cls, "estimator class", name)
    _EXTRA_STATE[name] = state
    if own_state is not None:
        _OWN_STATE[name] = own_state
    else:
        _OWN_STATE.pop(name, None)
    return cls


def register_pytree(cls):
    """Allow named-tuple pytrees of type ``cls`` (statistics, priors) in model files.

    Parameters
    ----------
    cls : type
        A ``typing.NamedTuple`` class; files name it by ``cls.__name__``.

    Returns
    -------
    type
        ``cls`` itself.
    """
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
        raise TypeError(f"register_pytree takes a NamedTuple class, got {cls!r}")
    return _register(_PYTREES, cls, "pytree type")


def estimator_class(name):
    """The registered estimator class called ``name`` (see :func:`register_estimator`).

    Raises
    ------
    KeyError
        Naming the registered classes, if none is called ``name``.
    """
    try:
        return _ESTIMATORS[name]
    except KeyError:
        raise KeyError(f"no estimator class {name!r} is registered; registered: {', '.join(sorted(_ESTIMATORS))}") from None


def _estimator_types():
    return dict(_ESTIMATORS)


def _namedtuple_types():
    from bayesnb.core import priors, stats

    types = [getattr(priors, n) for n in priors.__all__ if isinstance(getattr(priors, n), type)]
    types += [getattr(stats, n) for n in stats.__all__ if isinstance(getattr(stats, n), type)]
    found = {t.__name__: t for t in types if issubclass(t, tuple) and hasattr(t, "_fields")}
    return {**found, **_PYTREES}


# ----------------------------------------------------------------------------- encoding


# (name, accepted types, excluded types) of the object arrays that can be stored.
_OBJECT_KINDS = (
    ("str", str, ()),
    ("bool", (bool, np.bool_), ()),
    ("int", (int, np.integer), (bool,)),
    ("float", (float, np.floating), ()),
)


class _Encoder:
    """Turns parameters and fitted state into JSON, collecting arrays on the side."""

    def __init__(self):
        self.arrays = {}
        # The format version the file needs (raised by fields of later versions).
        self.version = 1
        self._estimators = _estimator_types()
        self._names = {cls: name for name, cls in self._estimators.items()}
        self._namedtuples = _namedtuple_types()

    def _store(self, arr, where):
        # Numbered (unique) and named after what it holds, for whoever unzips the file.
        label = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in where)[:80]
        name = f"{len(self.arrays):03d}_{label}"
        self.arrays[name] = _c_order(arr)
        return name

    def array(self, value, where):
        arr = np.asarray(value)
        if arr.dtype.kind == "O":
            return self._object_array(arr, where)
        if arr.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"cannot save {where}: arrays of dtype {arr.dtype} are not supported")
        return {"array": self._store(arr, where)}

    def _object_array(self, arr, where):
        # Object arrays (string class labels, DataFrame column names, categories) are
        # stored as a typed array when every element is a str, a bool, an integer or a
        # float (numpy scalars of those kinds included), all of one kind, and comes back
        # equal; they are restored as an object array of Python values. Anything else
        # is refused rather than altered.
        items = arr.ravel().tolist()
        for name, kinds, exclude in _OBJECT_KINDS:
            if not all(isinstance(v, kinds) and not isinstance(v, exclude) for v in items):
                continue
            try:
                typed = np.array(items, dtype=np.str_ if name == "str" else None).reshape(arr.shape)
            except (OverflowError, ValueError):
                break
            back = typed.astype(object).ravel().tolist()
            if typed.dtype.kind != "O" and all(a == b or (a != a and b != b) for a, b in zip(back, items)):
                return {"array": self._store(typed, where), "object": name}
            break
        shown = sorted({type(v).__name__ for v in items})
        raise TypeError(
            f"cannot save {where}: an object array of {', '.join(shown)} values cannot be stored "
            "without pickle; only str, int, float or bool values of one kind are supported "
            "(e.g. convert the labels with np.asarray(y, dtype=str))"
        )

    def value(self, value, where):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            return {"float": "nan" if value != value else ("inf" if value > 0 else "-inf")}
        if isinstance(value, np.generic):
            if value.dtype.kind not in _ARRAY_KINDS:
                raise TypeError(f"cannot save {where}: numpy scalar of dtype {value.dtype}")
            return {"scalar": self._store(np.asarray(value), where)}
        if type(value) in self._names:
            return {"estimator": self.estimator(value, where)}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            name = type(value).__name__
            if self._namedtuples.get(name) is not type(value):
                raise TypeError(f"cannot save {where}: {type(value).__module__}.{name} is not a bayesnb pytree")
            # A field that a later format version introduced (FIELD_VERSIONS) is written
            # where it holds a value, and the file then declares that version; left out
            # where it is None (absent, as in the files of earlier versions).
            later = getattr(type(value), "FIELD_VERSIONS", {})
            fields = {}
            for f in value._fields:
                if f in later:
                    if getattr(value, f) is None:
                        continue
                    self.version = max(self.version, later[f])
                fields[f] = self.value(getattr(value, f), f"{where}.{f}")
            return {"namedtuple": name, "fields": fields}
        if isinstance(value, tuple):
            return {"tuple": [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {"dict": [[self.value(k, f"{where} key"), self.value(v, f"{where}[{k!r}]")] for k, v in value.items()]}
        if isinstance(value, slice):
            return {"slice": [self.value(v, f"{where}.slice") for v in (value.start, value.stop, value.step)]}
        if isinstance(value, np.ndarray) or type(value).__module__.startswith(("jax", "jaxlib")):
            return self.array(value, where)
        raise TypeError(f"cannot save {where}: values of type {type(value).__name__} are not supported")

    def estimator(self, est, where=None):
        name = self._names.get(type(est))
        where = where or type(est).__name__
        if name is None:
            raise TypeError(
                f"cannot save {where}: {type(est).__module__}.{type(est).__name__} is not one of bayesnb's "
                f"estimators ({', '.join(sorted(self._estimators))}); loading looks classes up in that table "
                "and never imports code named by a file"
            )
        if name in _OWN_STATE:
            # The class names its fitted state itself (register_estimator(own_state=...)).
            own = _OWN_STATE[name][0](est)
            return {
                "class": name,
                "params": {k: self.value(v, f"{where}.{k}") for k, v in est.get_params(deep=False).items()},
                "fitted": own is not None,
                "attributes": {} if own is None else {k: self.value(v, f"{where}.{k}") for k, v in own.items()},
            }
        fitted = hasattr(est, "stats_")
        public = [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
        unknown = sorted(set(public) - set(_STATE) - _DERIVED)
        if unknown:
            raise TypeError(
                f"cannot save {where}: fitted attribute(s) {unknown} of {name} are unknown to "
                "bayesnb.io.persistence (register them in _STATE or _DERIVED)"
            )
        attributes = {}
        if fitted:
            for key in _STATE + _EXTRA_STATE.get(name, ()):
                if key in vars(est):
                    attributes[key] = self.value(vars(est)[key], f"{where}.{key}")
        params = est.get_params(deep=False)
        return {
            "class": name,
            "params": {k: self.value(v, f"{where}.{k}") for k, v in params.items()},
            "fitted": fitted,
            "attributes": attributes,
        }


# ----------------------------------------------------------------------------- decoding


_TAGS = frozenset({"array", "scalar", "float", "tuple", "dict", "slice", "namedtuple", "estimator"})


class _Decoder:
    def __init__(self, arrays):
        self.arrays = arrays
        self._estimators = _estimator_types()
        self._namedtuples = _namedtuple_types()

    def _array(self, name):
        if not isinstance(name, str) or name not in self.arrays:
            raise ModelFileError(f"the metadata refers to an array {name!r} that the file does not hold")
        return self.arrays[name]

    def value(self, node):
        if node is None or isinstance(node, (bool, str, int, float)):
            return node
        if isinstance(node, list):
            return [self.value(v) for v in node]
        if not isinstance(node, dict) or not node:
            raise ModelFileError(f"unexpected value in the metadata: {node!r}")
        tags = set(node) & _TAGS
        if len(tags) != 1:
            raise ModelFileError(f"unexpected value in the metadata: {node!r}")
        tag = tags.pop()
        if tag == "array" and set(node) <= {"array", "object"}:
            arr = self._array(node["array"])
            kind = node.get("object")
            if kind is None:
                return arr.copy()
            if kind not in ("str", "int", "float", "bool"):
                raise ModelFileError(f"unknown object array kind {kind!r}")
            return arr.astype(object)
        if tag == "scalar" and len(node) == 1:
            arr = self._array(node["scalar"])
            # Files of bayesnb before this fix stored a scalar as a 1-element array.
            if arr.shape == (1,):
                return arr[0]
            if arr.ndim != 0:
                raise ModelFileError(f"the metadata's scalar {node['scalar']!r} is an array of shape {arr.shape}")
            return arr[()]
        if tag == "float" and len(node) == 1:
            if node["float"] not in ("nan", "inf", "-inf"):
                raise ModelFileError(f"unknown float {node['float']!r}")
            return float(node["float"])
        if tag == "tuple" and len(node) == 1:
            return tuple(self.value(v) for v in node["tuple"])
        if tag == "dict" and len(node) == 1:
            pairs = node["dict"]
            if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise ModelFileError(f"a dict in the metadata is not a list of [key, value] pairs: {str(pairs)[:80]}")
            out = {}
            for k, v in pairs:
                key = _hashable(self.value(k))
                try:
                    hash(key)
                except TypeError:
                    raise ModelFileError(f"a dict key in the metadata is not hashable: {str(k)[:80]}") from None
                out[key] = self.value(v)
            return out
        if tag == "slice" and len(node) == 1 and len(node["slice"]) == 3:
            return slice(*(self.value(v) for v in node["slice"]))
        if tag == "namedtuple" and set(node) == {"namedtuple", "fields"}:
            cls = self._namedtuples.get(node["namedtuple"])
            if cls is None:
                raise ModelFileError(f"unknown pytree type {node['namedtuple']!r} in the file")
            fields = node.get("fields")
            if not isinstance(fields, dict) or not set(fields) <= set(cls._fields):
                raise ModelFileError(f"fields {fields!r} do not match {cls.__name__}{cls._fields}")
            return cls(**{k: self.value(v) for k, v in fields.items()})
        if tag == "estimator" and len(node) == 1:
            return self.estimator(node["estimator"])
        raise ModelFileError(f"unknown value tag {tag!r} in the metadata")

    def estimator(self, state):
        if not isinstance(state, dict) or set(state) != {"class", "params", "fitted", "attributes"}:
            raise ModelFileError("the estimator entry of the metadata is malformed")
        name = state["class"]
        cls = self._estimators.get(name) if isinstance(name, str) else None
        if cls is None:
            namespace = name.split(".")[0] if isinstance(name, str) and "." in name else None
            hint = (
                f" (a class of bayesnb.{namespace}, registered when it is imported: `import bayesnb.{namespace}` "
                "before loading)"
                if namespace is not None and namespace.isidentifier()
                else ""
            )
            known = ", ".join(sorted(self._estimators))
            raise ModelFileError(
                f"unknown estimator class {name!r}{hint}; "
                + (f"a bayesnb model file names one of {known}" if known else
                   "no estimator class is registered: load through bayesnb.load, which imports them")
            )
        params = {k: self.value(v) for k, v in dict(state["params"]).items()}
        try:
            est = cls(**params)
        except TypeError as err:
            raise ModelFileError(f"parameters of {cls.__name__} do not match this bayesnb: {err}") from None
        if not state["fitted"]:
            return est
        if name in _OWN_STATE:
            attributes = {k: self.value(v) for k, v in dict(state["attributes"]).items()}
            try:
                _OWN_STATE[name][1](est, attributes)
            except (ValueError, TypeError) as err:  # ModelFileError of a nested estimator included
                raise ModelFileError(f"the saved state of {cls.__name__} is inconsistent: {err}") from None
            return est
        attributes = dict(state["attributes"])
        unknown = set(attributes) - set(_STATE) - set(_EXTRA_STATE.get(name, ()))
        if unknown or "stats_" not in attributes or "classes_" not in attributes:
            raise ModelFileError(f"fitted attributes {sorted(attributes)} of {cls.__name__} are incomplete or unknown")
        for key, node in attributes.items():
            est.__dict__[key] = self.value(node)
        try:
            _check_state(est, cls.__name__)
        except ModelFileError as err:
            raise ModelFileError(f"the saved state of {cls.__name__} is inconsistent: {err}") from None
        try:
            # Prior and posterior from the restored statistics (the public recompute).
            est.update_prior()
        except Exception as err:  # a file whose state does not make a model
            raise ModelFileError(f"the saved state of {cls.__name__} is inconsistent: {err}") from err
        return est


# Statistics that are sums of weights, of squared deviations or of log-factorials: never
# negative in a state that fit produced (a field-name convention of bayesnb.core.stats).
_NON_NEGATIVE_SUFFIXES = ("count", "m2", "log_factorial")


def _check_state(est, name):
    """Refuse a restored fitted state that ``fit`` could not have produced.

    The checksum only detects damage, so a file with a recomputed checksum may hold any
    values: they are checked here as ``fit`` checks its input, before anything is
    computed from them (NaN, infinite or negative statistics would give NaN predictions).
    """
    state = vars(est)
    classes = np.asarray(state["classes_"])
    if classes.ndim != 1 or classes.size == 0:
        raise ModelFileError(f"{name}.classes_ must be a non-empty 1-d array, got shape {classes.shape}")
    try:
        ordered = np.unique(classes)
    except TypeError:
        raise ModelFileError(f"{name}.classes_ mixes labels of different types") from None
    if ordered.shape != classes.shape or not np.array_equal(ordered, classes):
        raise ModelFileError(
            f"{name}.classes_ must be sorted and distinct, as fit makes them; the file holds {classes.tolist()[:10]}"
        )
    n_features = state.get("n_features_in_")
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 1:
        raise ModelFileError(f"{name}.n_features_in_ must be a positive integer, got {n_features!r}")
    names = state.get("feature_names_in_")
    if names is not None and np.shape(names) != (n_features,):
        raise ModelFileError(f"{name}.feature_names_in_ has shape {np.shape(names)}, expected ({n_features},)")
    stats = state["stats_"]
    if not (isinstance(stats, tuple) and hasattr(stats, "_fields")):
        raise ModelFileError(f"{name}.stats_ is not a statistics pytree")
    # Tables have the class axis first (then the features); a statistics type that also
    # holds flat lists of entries (the Polya family's (class, word, count) triples) names
    # its tables in TABLE_FIELDS, and its entries' class and feature indices are checked.
    tables = getattr(type(stats), "TABLE_FIELDS", stats._fields)
    # A product's per-block statistics are its block estimators', saved and checked as theirs.
    nested = getattr(type(stats), "NESTED_FIELDS", ())
    later = getattr(type(stats), "FIELD_VERSIONS", {})
    for field in stats._fields:
        if field in nested:
            continue
        value = getattr(stats, field)
        if value is None and field in later:
            continue  # a field of a later format version, absent from an earlier file
        arr = np.asarray(value)
        where = f"{name}.stats_.{field}"
        if arr.dtype.kind not in "biuf":
            raise ModelFileError(f"{where} must be numeric, got dtype {arr.dtype}")
        if field not in tables:
            bound = {"_class": classes.size, "_feature": n_features}.get(field[field.rfind("_") :])
            if arr.ndim != 1 or (bound is not None and arr.size and (arr.min() < 0 or arr.max() >= bound)):
                raise ModelFileError(f"{where} must be a 1-d list of entries, with indices in range")
        elif arr.ndim == 0 or arr.shape[0] != classes.size:
            raise ModelFileError(f"{where} has shape {arr.shape}; its first axis must be the {classes.size} classes")
        if arr.ndim >= 2 and arr.shape[1] != n_features:
            raise ModelFileError(f"{where} has shape {arr.shape}; its second axis must be the {n_features} features")
        if not np.all(np.isfinite(arr)):
            raise ModelFileError(f"{where} holds NaN or infinite values")
        if field.endswith(_NON_NEGATIVE_SUFFIXES) and np.any(arr < 0):
            raise ModelFileError(f"{where} holds negative values (counts and sums of squares are >= 0)")
        if field == "scatter" and np.any(np.diagonal(arr, axis1=-2, axis2=-1) < 0):
            raise ModelFileError(f"{where} has a negative diagonal (a scatter matrix is positive semi-definite)")
    if hasattr(stats, "check_consistent"):
        # Invariants between the statistics' own fields (a Gaussian range must hold its
        # mean and allow its sum of squares), which the statistics type states.
        try:
            stats.check_consistent()
        except ValueError as err:
            raise ModelFileError(f"{name}.stats_: {err}") from None
    _check_categories(state, name, classes.size, n_features)
    _check_totals(est, stats, name)


def _check_categories(state, name, n_classes, n_features):
    """Bound the size-bearing ``n_categories_`` by the limits ``fit`` enforces, before
    the prior's (class, feature, category) table is allocated from it: a file of a few
    KB must not declare a table of gigabytes."""
    from bayesnb.core._validation import check_category_table

    for key in ("n_categories_",):
        value = state.get(key)
        if value is None:
            continue
        arr = np.asarray(value)
        if arr.dtype.kind not in "iu" or arr.shape != (n_features,) or (arr.size and arr.min() < 1):
            raise ModelFileError(
                f"{name}.{key} must hold one positive integer per feature ({n_features}), got "
                f"dtype {arr.dtype} and shape {arr.shape}"
            )
        try:
            check_category_table(arr.astype(np.int64), name, n_classes=n_classes)
        except ValueError as err:
            raise ModelFileError(f"{name}.{key}: {err}") from None
    counts = getattr(state["stats_"], "category_count", None)
    n_cat = state.get("n_categories_")
    if counts is not None and n_cat is not None:
        n_cat = np.asarray(n_cat)
        counts = np.asarray(counts)
        # fit pads the counts to the widest feature, with zeros past each feature's own width.
        if counts.ndim != 3 or counts.shape[2] != int(n_cat.max()):
            raise ModelFileError(
                f"{name}.stats_.category_count has shape {counts.shape}, but n_categories_ says "
                f"{int(n_cat.max())} categories for the widest feature"
            )
        past = np.arange(counts.shape[2])[None, :] >= n_cat[:, None]
        if np.any(counts[:, past]):
            raise ModelFileError(f"{name}.stats_.category_count counts categories past n_categories_")


def _check_totals(est, stats, name):
    """The invariants between statistics that ``fit`` guarantees for binary and categorical
    data: a feature is on in at most the rows of its class (Bernoulli, ``T_cj <= N_c``),
    and a row of a class has at most one category per feature (``sum_k n_cjk <= N_c``;
    equal without missing values). Compared with a relative margin of 1e-9 for the
    rounding of weighted sums taken in different orders."""
    try:
        family = est.family_
    except AttributeError:  # a family read off the prior, not restored yet: not a binary or categorical model
        return
    support = getattr(family, "support", None)
    if support == "binary" and hasattr(stats, "feature_count"):
        per_row = np.asarray(stats.feature_count, dtype=np.float64)
        what = "feature totals"
    elif support == "codes" and hasattr(stats, "category_count"):
        per_row = np.asarray(stats.category_count, dtype=np.float64).sum(axis=2)
        what = "category counts of a feature"
    else:
        return
    class_count = np.asarray(stats.class_count, dtype=np.float64)
    if per_row.ndim != 2 or class_count.shape != per_row.shape[:1]:
        raise ModelFileError(f"{name}.stats_ has {what} of shape {per_row.shape} for {class_count.shape} class counts")
    over = per_row > class_count[:, None] * (1.0 + 1e-9) + 1e-300
    if over.any():
        c, j = (int(v[0]) for v in np.nonzero(over))
        raise ModelFileError(
            f"{name}.stats_: the {what} exceed the class's rows (class {c}, feature {j}: "
            f"{per_row[c, j]:g} > {class_count[c]:g}), which fit cannot produce for {support} data"
        )


def _hashable(key):
    return key.item() if isinstance(key, np.generic) else key


# ----------------------------------------------------------------------------- checksum


def _canonical(metadata):
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)


def _c_order(arr):
    # np.ascontiguousarray makes a 0-d array 1-d: a numpy scalar (``{"scalar": name}``) is
    # stored 0-d, so that it loads as the scalar it was.
    arr = np.asarray(arr)
    return arr.copy() if arr.ndim == 0 else np.ascontiguousarray(arr)


def _checksum(metadata, arrays):
    h = hashlib.sha256()

    def put(data):
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    put(_canonical({k: v for k, v in metadata.items() if k != "checksum"}).encode("ascii"))
    for name in sorted(arrays):
        arr = _c_order(arrays[name])
        put(name.encode("utf-8"))
        put(arr.dtype.str.encode("ascii"))
        put(json.dumps(list(arr.shape)).encode("ascii"))
        put(arr.tobytes())
    return "sha256:" + h.hexdigest()


# ----------------------------------------------------------------------------- save / load


def save(estimator, path):
    """Write ``estimator`` (fitted or not) to ``path`` in bayesnb's model format.

    Parameters
    ----------
    estimator : a bayesnb estimator, or a fitted scikit-learn ``Pipeline`` ending in one
        One of bayesnb's own estimator classes, those of :mod:`bayesnb.sklearn` included
        (not a subclass: loading looks classes up by name in a fixed table). A
        ``Pipeline`` is saved when its other steps are transforms of bayesnb's table
        (``CountVectorizer``, ``TfidfVectorizer``, ``TfidfTransformer``,
        ``StandardScaler``, without callable parameters) or ``"passthrough"``, and its
        ``memory`` is None; :func:`load` returns a fitted ``Pipeline`` whose predictions
        and transforms equal the saved one's bit for bit.
    path : str, os.PathLike or binary file object
        Written as given (no suffix is added; ``.npz`` is suggested). A path is written
        atomically: a temporary file in the same folder is renamed over it once complete,
        so an interrupted save never leaves a truncated model behind.

    Returns
    -------
    None

    Raises
    ------
    TypeError
        If the estimator, a parameter or a label cannot be stored without pickle (e.g.
        object class labels that are not all str, int, float or bool of one type), or a
        ``Pipeline`` holds a transform outside the table (the message names the step and
        says how to save the final step alone), a callable parameter, or a ``memory``.

    Examples
    --------
    >>> import tempfile, os
    >>> import bayesnb
    >>> clf = bayesnb.MultinomialNB().fit([[2, 0], [0, 3]], ["ham", "spam"])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> clf.save(path)
    >>> bayesnb.load(path).predict([[1, 0]]).tolist()
    ['ham']
    >>> from sklearn.feature_extraction.text import CountVectorizer
    >>> from sklearn.pipeline import make_pipeline
    >>> from bayesnb.io.persistence import save
    >>> pipe = make_pipeline(CountVectorizer(), bayesnb.MultinomialNB())
    >>> pipe = pipe.fit(["free money", "lunch at noon"], ["spam", "ham"])
    >>> save(pipe, path)
    >>> bayesnb.load(path).predict(["free lunch money"]).tolist()
    ['spam']
    """
    from bayesnb._version import __version__

    enc = _Encoder()
    pipeline = _pipeline_class()
    if pipeline is not None and isinstance(estimator, pipeline):
        key, state = "pipeline", _encode_pipeline(enc, estimator)
    else:
        key, state = "estimator", enc.estimator(estimator)
    metadata = {
        "format": FORMAT,
        # The lowest version that reads the file (as numpy's .npy format does): a file
        # without the fields of a later version stays readable by earlier bayesnb.
        "format_version": enc.version,
        "library_version": __version__,
        key: state,
    }
    arrays = enc.arrays
    metadata["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in arrays.items()}
    metadata["checksum"] = _checksum(metadata, arrays)
    text = json.dumps(metadata, sort_keys=True, indent=1, allow_nan=False, ensure_ascii=True)

    def write(fileobj):
        with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(_member(zf, _METADATA), text)
            for name, arr in arrays.items():
                with zf.open(_member(zf, f"{name}.npy"), "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)

    if hasattr(path, "write"):
        write(path)
        return
    # A temporary file in the same folder replaces the destination once complete.
    with atomic_write(path, "wb") as f:
        write(f)


def _member(zf, name):
    """A header for member ``name`` of ``zf``, with a fixed timestamp, so a saved file is a function of the model.

    ``ZipFile.writestr(name)`` and ``ZipFile.open(name, "w")`` stamp each member with the
    current local time (2-second resolution): two saves of one model would differ in those
    bytes, and no reader of the file uses them. 1980-01-01 is the earliest DOS date.
    """
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zf.compression  # a ZipInfo starts uncompressed, whatever the archive's default
    info.external_attr = 0o644 << 16  # rw-r--r-- for a tool that extracts the archive
    return info


def _pipeline_class():
    """scikit-learn's ``Pipeline`` if scikit-learn is importable (imported here, not with bayesnb)."""
    try:
        from sklearn.pipeline import Pipeline
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return None
    return Pipeline


# A step name as scikit-learn allows it (no "__", which set_params splits on).
def _step_name_ok(name):
    return isinstance(name, str) and name != "" and "__" not in name


def _encode_pipeline(enc, pipe):
    """The state of a fitted ``Pipeline`` of table transforms ending in a bayesnb estimator."""
    from bayesnb.io import _sklearn_steps

    if pipe.memory is not None:
        raise TypeError(
            f"cannot save a Pipeline with memory={pipe.memory!r}: a cache location is not part of the "
            "model; set pipeline.memory = None before saving"
        )
    if getattr(pipe, "transform_input", None) is not None:
        raise TypeError("cannot save a Pipeline with transform_input set (metadata routing is not stored)")
    steps = list(pipe.steps)
    if len(steps) < 1:
        raise TypeError("cannot save an empty Pipeline")
    names = [n for n, _ in steps]
    if not all(_step_name_ok(n) for n in names) or len(set(names)) != len(names):
        raise TypeError(f"cannot save a Pipeline whose step names {names} are not distinct strings without '__'")
    supported = ", ".join(_sklearn_steps.SUPPORTED)
    out = []
    for i, (name, step) in enumerate(steps[:-1]):
        where = f"pipeline step {name!r}"
        if step is None or (isinstance(step, str) and step == "passthrough"):
            out.append([name, "passthrough"])
            continue
        table = _sklearn_steps.table_name(step)
        if table is None:
            raise TypeError(
                f"cannot save {where}: {type(step).__module__}.{type(step).__name__} is not one of the "
                f"transforms bayesnb's model format stores ({supported}); any other transform could "
                "only be stored with pickle, which bayesnb never uses (loading a pickle runs code from "
                f"the file). Save the final step alone, pipeline.named_steps[{names[-1]!r}].save(path), "
                "and rebuild the transforms where the model is loaded: "
                "bayesnb.load(path).predict(pipeline[:-1].transform(X))"
            )
        try:
            params, attributes = _sklearn_steps.saved_state(table, step, f"{where} ({type(step).__name__})")
        except ValueError as err:
            raise TypeError(
                f"cannot save the Pipeline: {err} (or save the final step alone: "
                f"pipeline.named_steps[{names[-1]!r}].save(path))"
            ) from None
        out.append(
            [
                name,
                {
                    "transform": {
                        "class": table,
                        "params": {k: enc.value(v, f"{name}.{k}") for k, v in params.items()},
                        "attributes": {k: enc.value(v, f"{name}.{k}") for k, v in attributes.items()},
                    }
                },
            ]
        )
    name, last = steps[-1]
    state = enc.estimator(last, f"pipeline step {name!r}")
    if not state["fitted"]:
        raise TypeError(f"cannot save the Pipeline: its final step {name!r} is not fitted; fit the pipeline first")
    out.append([name, {"estimator": state}])
    # A new kind of top-level content: a bayesnb before version 3 must refuse the file
    # (it would find no "estimator") rather than misread it.
    enc.version = max(enc.version, 3)
    return {"steps": out, "verbose": bool(pipe.verbose)}


def _decode_pipeline(decoder, node):
    """A fitted ``Pipeline`` from its state; every step checked, the widths chained."""
    from sklearn.pipeline import Pipeline

    from bayesnb.io import _sklearn_steps

    if not isinstance(node, dict) or set(node) != {"steps", "verbose"} or not isinstance(node["verbose"], bool):
        raise ModelFileError("the pipeline entry of the metadata is malformed (expected steps and verbose)")
    steps = node["steps"]
    if not isinstance(steps, list) or not steps or not all(isinstance(s, list) and len(s) == 2 for s in steps):
        raise ModelFileError("pipeline.steps must be a non-empty list of [name, step] pairs")
    names = [s[0] for s in steps]
    if not all(_step_name_ok(n) for n in names) or len(set(names)) != len(names):
        raise ModelFileError(f"pipeline.steps: step names {str(names)[:200]} must be distinct non-empty strings without '__'")
    built, width = [], None  # width: the columns the previous step gives (None: raw input)
    for name, step in steps[:-1]:
        where = f"pipeline step {name!r}"
        if step == "passthrough":
            built.append((name, "passthrough"))
            continue
        if not isinstance(step, dict) or set(step) != {"transform"} or not isinstance(step["transform"], dict) or set(
            step["transform"]
        ) != {"class", "params", "attributes"}:
            raise ModelFileError(f"{where} is malformed (expected a transform with class, params and attributes)")
        spec = step["transform"]
        if not isinstance(spec["params"], dict) or not isinstance(spec["attributes"], dict):
            raise ModelFileError(f"{where}: params and attributes must be objects")
        params = {k: decoder.value(v) for k, v in spec["params"].items()}
        attributes = {k: decoder.value(v) for k, v in spec["attributes"].items()}
        cls_name = spec["class"]
        try:
            est = _sklearn_steps.restore(cls_name, params, attributes, f"{where} ({str(cls_name).rsplit('.', 1)[-1]})")
        except ModelFileError:
            raise
        except (ValueError, TypeError) as err:
            raise ModelFileError(str(err)) from None
        out_width, in_width = _sklearn_steps.width(cls_name, est)
        if in_width is not None and width is not None and in_width != width:
            raise ModelFileError(f"{where} takes {in_width} columns but the step before it gives {width}")
        built.append((name, est))
        width = out_width
    name, last = steps[-1]
    if not isinstance(last, dict) or set(last) != {"estimator"}:
        raise ModelFileError(f"pipeline step {name!r} (the final step) must be a bayesnb estimator")
    if not isinstance(last["estimator"], dict) or last["estimator"].get("fitted") is not True:
        raise ModelFileError(f"pipeline step {name!r} (the final step) is not a fitted estimator")
    est = decoder.estimator(last["estimator"])
    n_in = getattr(est, "n_features_in_", None)
    if width is not None and n_in is not None and n_in != width:
        raise ModelFileError(f"pipeline step {name!r} takes {n_in} features but the step before it gives {width}")
    built.append((name, est))
    return Pipeline(built, memory=None, verbose=node["verbose"])


def _read(source, max_bytes):
    """Metadata dict and arrays of a model file; ``ModelFileError`` for anything else.

    Nothing is held in memory before it is checked against a limit: the zip directory's
    declared sizes bound the metadata (:data:`MAX_METADATA_BYTES`) and every array
    member, each ``.npy`` header's dtype and shape must agree with the metadata and with
    the member's size, their total is bounded by ``max_bytes``, and the checksum is
    computed while the members are streamed, so an array is materialised only after the
    whole file has been verified.
    """
    head = source.read(len(_ZIP_MAGIC))
    source.seek(0)
    if head != _ZIP_MAGIC:
        raise ModelFileError(
            "not a bayesnb model file: it is not a ZIP/.npz archive "
            f"(it starts with {head!r}); bayesnb.load reads files written by estimator.save"
        )
    try:
        with zipfile.ZipFile(source) as zf:
            infos = zf.infolist()
            names = [i.filename for i in infos]
            if len(set(names)) != len(names):
                raise ModelFileError("the archive holds two members of the same name")
            members = {i.filename: i for i in infos}
            if _METADATA not in members:
                raise ModelFileError(
                    f"not a bayesnb model file: the archive has no {_METADATA} "
                    f"(members: {sorted(names)[:5]}...); bayesnb.load reads files written by estimator.save"
                )
            metadata = _read_metadata(zf, members[_METADATA])
            _check_header(metadata)
            listed = metadata.get("arrays")
            if not isinstance(listed, dict) or not all(isinstance(v, dict) for v in listed.values()):
                raise ModelFileError("the metadata has no valid 'arrays' entry")
            expected = {f"{n}.npy" for n in listed} | {_METADATA}
            if set(names) != expected:
                extra, absent = sorted(set(names) - expected), sorted(expected - set(names))
                raise ModelFileError(
                    f"the archive's members do not match its metadata (unexpected: {extra[:5]}, missing: {absent[:5]})"
                )
            layout, total = {}, 0
            for name in sorted(listed):
                dtype, shape, offset = _array_header(zf, members[f"{name}.npy"], name, listed[name])
                total += math.prod(shape) * dtype.itemsize
                if total > max_bytes:
                    raise ModelFileError(
                        f"the model file's arrays declare more than max_bytes={max_bytes:,} bytes "
                        f"(array {name!r} has shape {list(shape)} of {dtype.str}); pass a larger "
                        "max_bytes to bayesnb.load if the file is trusted"
                    )
                layout[name] = (dtype, shape, offset)
            checksum = _streamed_checksum(zf, metadata, layout)
            if metadata.get("checksum") != checksum:
                raise ModelFileError(
                    "checksum mismatch: the model file was modified or corrupted after it was written "
                    f"(stored {str(metadata.get('checksum'))[:80]!r})"
                )
            arrays = {}
            for name in layout:
                with zf.open(f"{name}.npy") as member:
                    arrays[name] = np.lib.format.read_array(member, allow_pickle=False)
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError, NotImplementedError, zlib.error) as err:
        raise ModelFileError(f"the model file is truncated or corrupted and cannot be read: {err}") from None
    return metadata, arrays


MAX_METADATA_BYTES = 64 * 2**20
"""Largest ``metadata.json`` that :func:`load` reads (its size as declared in the zip directory)."""
MAX_METADATA_DEPTH = 64
"""Deepest nesting of lists and objects in the metadata (a saved estimator needs about 10)."""
MAX_ARRAY_BYTES = 4 * 2**30
"""Default bound of :func:`load` on the arrays' total size (from their declared shapes)."""


def _read_metadata(zf, info):
    if info.file_size > MAX_METADATA_BYTES:
        raise ModelFileError(
            f"the model file's {_METADATA} declares {info.file_size:,} bytes, more than the limit of "
            f"{MAX_METADATA_BYTES:,} (MAX_METADATA_BYTES): not a file written by estimator.save"
        )
    raw = zf.read(_METADATA)  # at most the declared size: zipfile stops (and checks the CRC) there
    try:
        metadata = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise ModelFileError(
            f"the metadata of the model file is nested deeper than {MAX_METADATA_DEPTH} levels"
        ) from None
    except (UnicodeDecodeError, ValueError) as err:
        raise ModelFileError(f"the metadata of the model file is not valid JSON: {err}") from None
    _check_depth(metadata)
    return metadata


def _check_depth(node):
    # Iterative, so that the check itself cannot overflow the stack.
    stack = [(node, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise ModelFileError(f"the metadata of the model file is nested deeper than {MAX_METADATA_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


_NPY_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _array_header(zf, info, name, spec):
    """dtype, shape and data offset of an array member, checked before any data is read."""
    with zf.open(info) as member:
        version = np.lib.format.read_magic(member)
        reader = _NPY_HEADER_READERS.get(version)
        if reader is None:
            raise ModelFileError(f"array {name!r}: .npy format version {version} is not one estimator.save writes")
        shape, fortran_order, dtype = reader(member)
        offset = member.tell()
    if dtype.hasobject:
        raise ModelFileError(
            f"the model file is truncated or corrupted and cannot be read: array {name!r} holds Python "
            "objects (a pickle), which load never reads (allow_pickle=False)"
        )
    if dtype.names is not None or dtype.kind not in _ARRAY_KINDS:
        raise ModelFileError(f"array {name!r} has an unsupported dtype {dtype.str}")
    if fortran_order and len(shape) > 1:
        raise ModelFileError(f"array {name!r} is stored in Fortran order, which estimator.save never writes")
    if dtype.str != spec.get("dtype") or list(shape) != spec.get("shape"):
        raise ModelFileError(
            f"array {name!r} is {dtype.str}{list(shape)} but the metadata says {spec.get('dtype')}{spec.get('shape')}"
        )
    nbytes = math.prod(shape) * dtype.itemsize
    if offset + nbytes != info.file_size:
        raise ModelFileError(
            f"array {name!r} declares shape {list(shape)} of {dtype.str} ({nbytes:,} bytes) but its member "
            f"holds {max(info.file_size - offset, 0):,} bytes of data"
        )
    return dtype, tuple(shape), offset


def _streamed_checksum(zf, metadata, layout, chunk=2**20):
    """:func:`_checksum` of the file's arrays, read member by member in ``chunk`` bytes."""
    h = hashlib.sha256()

    def put(data):
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    put(_canonical({k: v for k, v in metadata.items() if k != "checksum"}).encode("ascii"))
    for name in sorted(layout):
        dtype, shape, offset = layout[name]
        put(name.encode("utf-8"))
        put(dtype.str.encode("ascii"))
        put(json.dumps(list(shape)).encode("ascii"))
        left = math.prod(shape) * dtype.itemsize
        h.update(left.to_bytes(8, "little"))
        with zf.open(f"{name}.npy") as member:
            member.read(offset)
            while left:
                block = member.read(min(chunk, left))
                if not block:
                    raise ModelFileError(f"array {name!r} is truncated")
                h.update(block)
                left -= len(block)
    return "sha256:" + h.hexdigest()


def _no_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def _check_header(metadata):
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        found = metadata.get("format") if isinstance(metadata, dict) else type(metadata).__name__
        raise ModelFileError(f"not a bayesnb model file: format is {found!r}, expected {FORMAT!r}")
    version = metadata.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ModelFileError(f"invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"the model file has format_version {version}, newer than this bayesnb reads "
            f"(up to {FORMAT_VERSION}); upgrade bayesnb to load it"
        )


def load(path, *, max_bytes=None):
    """Read an estimator written by :meth:`~bayesnb.estimators.BaseNB.save`.

    Never executes code from the file (no pickle; classes come from a fixed table of
    bayesnb's own types). Priors and posteriors are recomputed from the saved parameters
    and statistics, so every prediction, evidence and posterior draw (same
    ``random_state``) equals the saved estimator's bit for bit, and ``partial_fit``
    continues from the saved statistics.

    The file is verified before it is trusted with memory: the metadata's size
    (:data:`MAX_METADATA_BYTES`) and nesting (:data:`MAX_METADATA_DEPTH`), every array's
    declared dtype and shape against the metadata and the archive's directory, their
    total against ``max_bytes``, and the checksum (streamed), before any array is
    read; then the restored state is validated as ``fit`` validates its input (finite
    statistics, non-negative counts, shapes that agree, sorted distinct classes).

    Parameters
    ----------
    path : str, os.PathLike or binary file object
    max_bytes : int, optional
        Largest total size of the file's arrays (default :data:`MAX_ARRAY_BYTES`, 4 GiB).

    Returns
    -------
    estimator or sklearn.pipeline.Pipeline
        A new estimator of the saved class, fitted if the saved one was; for a file of a
        ``Pipeline``, a fitted ``Pipeline`` of new transforms and estimator.

    Raises
    ------
    bayesnb.exceptions.ModelFileError
        (a ``ValueError``) if the file is not a bayesnb model, is truncated or corrupted,
        exceeds a limit, fails its checksum, was written by a newer format version, or
        holds a state that does not make a model. The checksum detects damage, not
        tampering: whoever can write the file can recompute it, so a crafted file that
        passes it is still validated like the input of ``fit``.
    FileNotFoundError
        If ``path`` does not exist.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import bayesnb
    >>> X, y = np.array([[3, 0, 1], [0, 2, 2], [4, 1, 0]]), np.array(["ham", "spam", "ham"])
    >>> clf = bayesnb.MultinomialNB(alpha=0.5).fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> clf.save(path)
    >>> loaded = bayesnb.load(path)
    >>> loaded.get_params() == clf.get_params()
    True
    >>> bool(np.array_equal(loaded.predict_proba(X), clf.predict_proba(X)))  # bit for bit
    True
    >>> loaded.partial_fit([[0, 1, 3]], ["spam"]).stats_.class_count.tolist()
    [2.0, 2.0]
    """
    from bayesnb._version import __version__

    max_bytes = MAX_ARRAY_BYTES if max_bytes is None else int(max_bytes)
    if hasattr(path, "read"):
        seekable = getattr(path, "seekable", lambda: False)()
        metadata, arrays = _read(path if seekable else io.BytesIO(path.read()), max_bytes)
    else:
        with open(path, "rb") as f:
            metadata, arrays = _read(f, max_bytes)
    written_by = metadata.get("library_version")
    if written_by != __version__:
        warnings.warn(
            f"model file written by bayesnb {written_by}, loaded by bayesnb {__version__}: its "
            "posterior is recomputed from the saved statistics by this version",
            UserWarning,
            stacklevel=2,
        )
    try:
        if "pipeline" in metadata:
            if "estimator" in metadata or metadata["format_version"] < 3:
                raise ModelFileError("a pipeline file holds no 'estimator' entry and declares format_version 3 or later")
            return _decode_pipeline(_Decoder(arrays), metadata["pipeline"])
        return _Decoder(arrays).estimator(metadata.get("estimator"))
    except ModelFileError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, RecursionError) as err:
        # Whatever a crafted metadata tree makes the decoder trip on is a malformed file.
        raise ModelFileError(f"the model file's metadata is malformed: {type(err).__name__}: {err}") from None
