r"""Saving and loading estimators without pickle.

``estimator.save(path)`` writes one file; ``bayesnb.load(path)`` reads it back. Loading
never executes code from the file: no pickle anywhere (arrays are read with
``numpy.load(..., allow_pickle=False)``), the metadata is plain JSON, and every class a
file may name (estimators, priors, statistics) is looked up in a fixed table of
bayesnb's own types, never imported by name.

File format (``format_version`` 1)
----------------------------------
A ZIP archive, readable by ``numpy.load`` as an ``.npz`` (the suggested suffix), holding

* ``metadata.json``: UTF-8 JSON with the keys

  - ``"format"``: ``"bayesnb-model"``; ``"format_version"``: ``1``;
  - ``"library_version"``: the bayesnb version that wrote the file;
  - ``"estimator"``: the estimator's state (below);
  - ``"arrays"``: ``{name: {"dtype": numpy dtype string, "shape": [...]}}`` for every
    array member;
  - ``"checksum"``: ``"sha256:<hex>"``, the SHA-256 of the canonical JSON of the other
    keys (sorted keys, no whitespace) followed, for each array in name order, by its
    name, dtype string, shape and C-order bytes (each length-prefixed).

* ``<name>.npy`` for every array of ``"arrays"`` (numpy's own ``.npy`` format; never
  object dtype).

An estimator's state is ``{"class": name, "params": get_params(deep=False),
"fitted": bool, "attributes": {...}}``. Values are encoded as JSON where JSON is exact
(``None``, booleans, strings, integers, finite floats, lists) and otherwise as a
one-key object naming the type: ``{"array": name}`` (with ``"object": "str" | "int" |
"float" | "bool"`` for an object array of such Python values, e.g. string class labels),
``{"scalar": name}`` (a numpy scalar, stored as a 0-d array), ``{"float": "nan" | "inf"
| "-inf"}``, ``{"tuple": [...]}``, ``{"dict": [[key, value], ...]}``,
``{"slice": [start, stop, step]}``, ``{"namedtuple": type name, "fields": {...}}`` (a
prior or statistics pytree of :mod:`bayesnb.core.priors` / :mod:`bayesnb.core.stats`) and
``{"estimator": state}`` (nested estimators: :class:`~bayesnb.MixedNB`'s blocks).

What is stored, and why
-----------------------
The fitted state is what cannot be recomputed: ``classes_``, ``n_features_in_``,
``feature_names_in_`` (when present), the additive sufficient statistics ``stats_`` and
a few estimator-specific fields (``n_categories_``; :class:`~bayesnb.MixedNB`'s fitted
blocks and learned categories). Priors and posteriors are *not* stored: ``load``
recomputes them from the parameters and the statistics with the same code that
``fit`` ran, so

* the round trip is bit-identical in every prediction, evidence and posterior draw
  (same inputs, same deterministic computation);
* a file cannot hold a posterior inconsistent with its statistics;
* ``partial_fit`` after ``load`` continues exactly as without the round trip, because
  the statistics are the whole of what ``partial_fit`` updates.

A file written by a different bayesnb version still loads (its posterior is recomputed
by the running version, with a warning if the versions differ); a newer
``format_version`` is refused.

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
import tempfile
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from bayesnb.exceptions import ModelFileError

__all__ = ["FORMAT", "FORMAT_VERSION", "ModelFileError", "save", "load", "estimator_class", "register_estimator", "register_pytree"]

FORMAT = "bayesnb-model"
FORMAT_VERSION = 1
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
)


# ----------------------------------------------------------------------------- type tables


# Filled by the layers that define the classes (the estimators register themselves when
# bayesnb.estimators is imported), so that this module imports none of them: loading
# looks a class up here and never imports code named by a file.
_ESTIMATORS: dict[str, type] = {}
_PYTREES: dict[str, type] = {}


def _register(table, cls, what):
    held = table.get(cls.__name__)
    if held is not None and held is not cls:
        raise ValueError(f"another {what} named {cls.__name__!r} is already registered")
    table[cls.__name__] = cls
    return cls


def register_estimator(cls):
    """Allow instances of ``cls`` to be saved and loaded (a class decorator).

    Parameters
    ----------
    cls : type
        An estimator class; files name it by ``cls.__name__``.

    Returns
    -------
    type
        ``cls`` itself.
    """
    return _register(_ESTIMATORS, cls, "estimator class")


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
        self._estimators = _estimator_types()
        self._namedtuples = _namedtuple_types()

    def _store(self, arr, where):
        # Numbered (unique) and named after what it holds, for whoever unzips the file.
        label = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in where)[:80]
        name = f"{len(self.arrays):03d}_{label}"
        self.arrays[name] = np.ascontiguousarray(arr)
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
        if type(value) in self._estimators.values():
            return {"estimator": self.estimator(value, where)}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            name = type(value).__name__
            if self._namedtuples.get(name) is not type(value):
                raise TypeError(f"cannot save {where}: {type(value).__module__}.{name} is not a bayesnb pytree")
            return {
                "namedtuple": name,
                "fields": {f: self.value(getattr(value, f), f"{where}.{f}") for f in value._fields},
            }
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
        name = type(est).__name__
        where = where or name
        if self._estimators.get(name) is not type(est):
            raise TypeError(
                f"cannot save {where}: {type(est).__module__}.{name} is not one of bayesnb's estimators "
                f"({', '.join(sorted(self._estimators))}); loading looks classes up in that table and "
                "never imports code named by a file"
            )
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
            for key in _STATE:
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
            return self._array(node["scalar"])[()]
        if tag == "float" and len(node) == 1:
            if node["float"] not in ("nan", "inf", "-inf"):
                raise ModelFileError(f"unknown float {node['float']!r}")
            return float(node["float"])
        if tag == "tuple" and len(node) == 1:
            return tuple(self.value(v) for v in node["tuple"])
        if tag == "dict" and len(node) == 1:
            return {_hashable(self.value(k)): self.value(v) for k, v in node["dict"]}
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
        cls = self._estimators.get(state["class"])
        if cls is None:
            raise ModelFileError(
                f"unknown estimator class {state['class']!r}; a bayesnb model file names one of "
                f"{', '.join(sorted(self._estimators))}"
            )
        params = {k: self.value(v) for k, v in dict(state["params"]).items()}
        try:
            est = cls(**params)
        except TypeError as err:
            raise ModelFileError(f"parameters of {cls.__name__} do not match this bayesnb: {err}") from None
        if not state["fitted"]:
            return est
        attributes = dict(state["attributes"])
        unknown = set(attributes) - set(_STATE)
        if unknown or "stats_" not in attributes or "classes_" not in attributes:
            raise ModelFileError(f"fitted attributes {sorted(attributes)} of {cls.__name__} are incomplete or unknown")
        for key, node in attributes.items():
            est.__dict__[key] = self.value(node)
        try:
            # Prior and posterior from the restored statistics (the public recompute).
            est.update_prior()
        except Exception as err:  # a file whose state does not make a model
            raise ModelFileError(f"the saved state of {cls.__name__} is inconsistent: {err}") from err
        return est


def _hashable(key):
    return key.item() if isinstance(key, np.generic) else key


# ----------------------------------------------------------------------------- checksum


def _canonical(metadata):
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)


def _checksum(metadata, arrays):
    h = hashlib.sha256()

    def put(data):
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    put(_canonical({k: v for k, v in metadata.items() if k != "checksum"}).encode("ascii"))
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
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
    estimator : a bayesnb estimator
        One of bayesnb's own estimator classes (not a subclass: loading looks classes up
        by name in a fixed table).
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
        object class labels that are not all str, int, float or bool of one type).

    Examples
    --------
    >>> import tempfile, os
    >>> import bayesnb
    >>> clf = bayesnb.MultinomialNB().fit([[2, 0], [0, 3]], ["ham", "spam"])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> clf.save(path)
    >>> bayesnb.load(path).predict([[1, 0]]).tolist()
    ['ham']
    """
    from bayesnb._version import __version__

    enc = _Encoder()
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": enc.estimator(estimator),
    }
    arrays = enc.arrays
    metadata["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in arrays.items()}
    metadata["checksum"] = _checksum(metadata, arrays)
    text = json.dumps(metadata, sort_keys=True, indent=1, allow_nan=False, ensure_ascii=True)

    def write(fileobj):
        with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(_METADATA, text)
            for name, arr in arrays.items():
                with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)

    if hasattr(path, "write"):
        write(path)
        return
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read(source):
    """Metadata dict and arrays of a model file; ``ModelFileError`` for anything else."""
    head = source.read(len(_ZIP_MAGIC))
    source.seek(0)
    if head != _ZIP_MAGIC:
        raise ModelFileError(
            "not a bayesnb model file: it is not a ZIP/.npz archive "
            f"(it starts with {head!r}); bayesnb.load reads files written by estimator.save"
        )
    try:
        with np.load(source, allow_pickle=False) as npz:
            names = set(npz.zip.namelist())
            if _METADATA not in names:
                raise ModelFileError(
                    f"not a bayesnb model file: the archive has no {_METADATA} "
                    f"(members: {sorted(names)[:5]}...); bayesnb.load reads files written by estimator.save"
                )
            raw = npz.zip.read(_METADATA)
            try:
                metadata = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
            except (UnicodeDecodeError, ValueError) as err:
                raise ModelFileError(f"the metadata of the model file is not valid JSON: {err}") from None
            _check_header(metadata)
            listed = metadata.get("arrays")
            if not isinstance(listed, dict):
                raise ModelFileError("the metadata has no valid 'arrays' entry")
            expected = {f"{n}.npy" for n in listed} | {_METADATA}
            if names != expected:
                extra, absent = sorted(names - expected), sorted(expected - names)
                raise ModelFileError(
                    f"the archive's members do not match its metadata (unexpected: {extra}, missing: {absent})"
                )
            arrays = {}
            for name, spec in listed.items():
                arr = npz[name]
                if not isinstance(arr, np.ndarray) or arr.dtype.kind not in _ARRAY_KINDS:
                    raise ModelFileError(f"array {name!r} has an unsupported type")
                if arr.dtype.str != spec.get("dtype") or list(arr.shape) != spec.get("shape"):
                    raise ModelFileError(
                        f"array {name!r} is {arr.dtype.str}{list(arr.shape)} but the metadata says "
                        f"{spec.get('dtype')}{spec.get('shape')}"
                    )
                arrays[name] = arr
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError, zlib.error) as err:
        raise ModelFileError(f"the model file is truncated or corrupted and cannot be read: {err}") from None
    if metadata.get("checksum") != _checksum(metadata, arrays):
        raise ModelFileError(
            "checksum mismatch: the model file was modified or corrupted after it was written "
            f"(stored {metadata.get('checksum')!r})"
        )
    return metadata, arrays


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


def load(path):
    """Read an estimator written by :meth:`~bayesnb.estimators.BaseNB.save`.

    Never executes code from the file (no pickle; classes come from a fixed table of
    bayesnb's own types). Priors and posteriors are recomputed from the saved parameters
    and statistics, so every prediction, evidence and posterior draw (same
    ``random_state``) equals the saved estimator's bit for bit, and ``partial_fit``
    continues from the saved statistics.

    Parameters
    ----------
    path : str, os.PathLike or binary file object

    Returns
    -------
    estimator
        A new estimator of the saved class, fitted if the saved one was.

    Raises
    ------
    bayesnb.exceptions.ModelFileError
        (a ``ValueError``) if the file is not a bayesnb model, is truncated or corrupted,
        fails its checksum, was written by a newer format version, or holds a state that
        does not make a model.
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

    if hasattr(path, "read"):
        data = path.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    metadata, arrays = _read(io.BytesIO(data))
    written_by = metadata.get("library_version")
    if written_by != __version__:
        warnings.warn(
            f"model file written by bayesnb {written_by}, loaded by bayesnb {__version__}: its "
            "posterior is recomputed from the saved statistics by this version",
            UserWarning,
            stacklevel=2,
        )
    return _Decoder(arrays).estimator(metadata.get("estimator"))
