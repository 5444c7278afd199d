"""The fixed table of scikit-learn transforms a saved ``Pipeline`` may hold.

A ``Pipeline`` ending in a bayesnb estimator is saved by :func:`bayesnb.io.persistence.save`
when every step before the last is one of the transforms below (or ``"passthrough"``). For
each, the table lists its constructor parameters with their admissible values and the
fitted attributes its ``transform`` reads; nothing else is stored. Loading builds a fresh
instance of the class found in this table (never a class named by the file) with the saved
parameters, after checking each, and sets the saved fitted attributes on it, after
checking every invariant ``fit`` guarantees (a vocabulary's indices are a permutation of
``range(n)``, an idf is finite and at least 1, a scale is finite and positive, shapes
agree). No private scikit-learn function is called.

Parameters whose value would be code (a callable ``tokenizer``, ``preprocessor``,
``analyzer`` or ``strip_accents``) or an object that JSON cannot hold exactly are refused
at save. ``input`` must be ``"content"``: a model file must not make ``transform`` open
files named by the rows. A numpy ``dtype`` parameter is stored as its name and read back
through :data:`DTYPES`.

Values are returned as plain Python and numpy values; :mod:`bayesnb.io.persistence`
encodes them (arrays as ``.npy`` members) and decodes them before :func:`restore` is called.
A vocabulary (``vocabulary_``, or a fixed ``vocabulary`` parameter) is stored as three
arrays: ``utf8`` (uint8, the terms' UTF-8 bytes concatenated), ``offsets`` (int64, ``n + 1``
boundaries into it) and ``indices`` (int64, each term's column).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping

import numpy as np

__all__ = ["DTYPES", "SUPPORTED", "restore", "saved_state", "table_name", "width"]

#: Names a ``dtype`` parameter may be stored as (numpy's own names), read back as the numpy type.
DTYPES = {
    name: getattr(np, name)
    for name in (
        "float64", "float32", "float16", "int64", "int32", "int16", "int8",
        "uint64", "uint32", "uint16", "uint8", "bool_",
    )
}

_TEXT_MODULE = "sklearn.feature_extraction.text"
_PREPROCESSING = "sklearn.preprocessing"


# ----------------------------------------------------------------------------- parameter checks
# Each takes (value, where) and returns the value to use, or raises ValueError naming ``where``.


def _bool(value, where):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{where} must be True or False, got {value!r}")
    return bool(value)


def _one_of(*allowed):
    def check(value, where):
        if not any(value is a or (isinstance(a, str) and value == a) for a in allowed):
            raise ValueError(f"{where} must be one of {list(allowed)}, got {str(value)[:80]!r}")
        return value

    return check


def _no_code(name):
    def check(value, where):
        if value is not None:
            raise ValueError(
                f"{where} must be None, got {type(value).__name__} {str(value)[:60]!r}: a function is code, "
                "which bayesnb's model format never stores (loading would have to run it)"
            )
        return None

    return check


def _strip_accents(value, where):
    if callable(value):
        _no_code("strip_accents")(value, where)
    return _one_of(None, "ascii", "unicode")(value, where)


def _analyzer(value, where):
    if callable(value):
        _no_code("analyzer")(value, where)
    return _one_of("word", "char", "char_wb")(value, where)


def _encoding(value, where):
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a codec name, got {value!r}")
    try:
        codecs.lookup(value)
    except LookupError:
        raise ValueError(f"{where}: unknown codec {value[:40]!r}") from None
    return value


def _stop_words(value, where):
    if value is None or (isinstance(value, str) and value == "english"):
        return value
    if type(value) is not list or not all(isinstance(w, str) for w in value):
        raise ValueError(
            f"{where} must be None, 'english' or a list of str, got {type(value).__name__}"
            + (" (pass list(stop_words))" if not isinstance(value, str) else "")
        )
    return list(value)


def _token_pattern(value, where):
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a regular expression (str) or None, got {type(value).__name__}")
    try:
        compiled = re.compile(value)
    except re.error as err:
        raise ValueError(f"{where} is not a valid regular expression: {err}") from None
    if compiled.groups > 1:
        raise ValueError(f"{where} has {compiled.groups} capturing groups; scikit-learn allows at most one")
    return value


def _ngram_range(value, where):
    ok = (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
        and 1 <= value[0] <= value[1]
    )
    if not ok:
        raise ValueError(f"{where} must be a pair (min_n, max_n) of integers with 1 <= min_n <= max_n, got {value!r}")
    return (int(value[0]), int(value[1]))


def _df(value, where):
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{where} must be a number, got {value!r}")
    if isinstance(value, (int, np.integer)) and value >= 0:
        return int(value)
    if isinstance(value, (float, np.floating)) and 0.0 <= value <= 1.0:
        return float(value)
    raise ValueError(f"{where} must be an integer >= 0 or a float in [0, 1], got {value!r}")


def _max_features(value, where):
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= 1:
        return int(value)
    raise ValueError(f"{where} must be None or an integer >= 1, got {value!r}")


def _dtype(value, where):
    # At save the parameter is a numpy type (np.int64) or dtype; in the file it is its name.
    if isinstance(value, str) and value in DTYPES:
        return DTYPES[value]
    try:
        name = np.dtype(value).name
    except TypeError:
        name = None
    if name == "bool":
        name = "bool_"
    if name not in DTYPES or isinstance(value, str):
        raise ValueError(f"{where} must be one of the numpy dtypes {sorted(DTYPES)}, got {str(value)[:40]!r}")
    return DTYPES[name]


def _vocabulary_param(value, where):
    # A fixed vocabulary given to the constructor: None, a mapping term -> column, or a
    # sequence of terms (scikit-learn numbers them in order).
    if value is None:
        return None
    if isinstance(value, Mapping):
        terms, indices = list(value.keys()), list(value.values())
        _check_vocabulary(terms, np.asarray(indices), where)
        return dict(value)
    if isinstance(value, (list, tuple)):
        _check_vocabulary(list(value), np.arange(len(value)), where)
        return list(value)
    raise ValueError(f"{where} must be None, a dict of term -> column or a list of terms, got {type(value).__name__}")


_FLOAT_NORM = _one_of("l1", "l2", None)

_VECTORIZER = {
    "input": _one_of("content"),
    "encoding": _encoding,
    "decode_error": _one_of("strict", "ignore", "replace"),
    "strip_accents": _strip_accents,
    "lowercase": _bool,
    "preprocessor": _no_code("preprocessor"),
    "tokenizer": _no_code("tokenizer"),
    "stop_words": _stop_words,
    "token_pattern": _token_pattern,
    "ngram_range": _ngram_range,
    "analyzer": _analyzer,
    "max_df": _df,
    "min_df": _df,
    "max_features": _max_features,
    "vocabulary": _vocabulary_param,
    "binary": _bool,
    "dtype": _dtype,
}
_TFIDF = {"norm": _FLOAT_NORM, "use_idf": _bool, "smooth_idf": _bool, "sublinear_tf": _bool}
_SCALER = {"copy": _bool, "with_mean": _bool, "with_std": _bool}


# ----------------------------------------------------------------------------- fitted state


def _check_vocabulary(terms, indices, where):
    n = len(terms)
    if n == 0:
        raise ValueError(f"{where} is empty")
    if not all(isinstance(t, str) for t in terms):
        raise ValueError(f"{where} holds terms that are not str")
    if len(set(terms)) != n:
        raise ValueError(f"{where} holds the same term twice")
    indices = np.asarray(indices)
    if indices.shape != (n,) or indices.dtype.kind not in "iu":
        raise ValueError(f"{where} has indices of dtype {indices.dtype} and shape {indices.shape}, expected ({n},) integers")
    if indices.min() < 0 or indices.max() >= n or np.unique(indices).size != n:
        raise ValueError(
            f"{where}: the columns of its {n} terms must be a permutation of range({n}) "
            "(an index is out of range or used twice)"
        )


def _pack_vocabulary(mapping):
    encoded = [term.encode("utf-8") for term in mapping]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return {
        "utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(),
        "offsets": offsets,
        "indices": np.fromiter(mapping.values(), dtype=np.int64, count=len(encoded)),
    }


def _unpack_vocabulary(node, where):
    """The dict term -> column of a packed vocabulary, every invariant checked first."""
    if not isinstance(node, dict) or set(node) != {"utf8", "offsets", "indices"}:
        raise ValueError(f"{where} must hold the arrays utf8, offsets and indices")
    data, offsets, indices = (np.asarray(node[k]) for k in ("utf8", "offsets", "indices"))
    if data.dtype != np.uint8 or data.ndim != 1:
        raise ValueError(f"{where}.utf8 must be a 1-d uint8 array, got {data.dtype} of shape {data.shape}")
    if offsets.dtype != np.int64 or offsets.ndim != 1 or offsets.size < 2:
        raise ValueError(f"{where}.offsets must be a 1-d int64 array of n + 1 >= 2 boundaries, got shape {offsets.shape}")
    n = offsets.size - 1
    steps = np.diff(offsets)
    if offsets[0] != 0 or offsets[-1] != data.size or np.any(steps < 0):
        raise ValueError(
            f"{where}.offsets must rise from 0 to the {data.size} bytes of utf8, got {offsets[0]} .. {offsets[-1]}"
        )
    # n distinct terms need n - 1 bytes at least (only one can be empty): a vocabulary
    # larger than its bytes could honestly hold is refused before a string is made.
    if np.count_nonzero(steps == 0) > 1:
        raise ValueError(f"{where} declares {n} terms in {data.size} bytes: more than one empty term")
    if indices.shape != (n,) or indices.dtype != np.int64:
        raise ValueError(f"{where}.indices must be {n} int64 columns, got {indices.dtype} of shape {indices.shape}")
    raw = data.tobytes()
    try:
        terms = [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: a term is not valid UTF-8 ({err})") from None
    _check_vocabulary(terms, indices, where)
    return dict(zip(terms, indices.tolist()))


def _float_vector(value, where, n, *, positive=False, at_least=None, non_negative=False):
    arr = np.asarray(value)
    if arr.dtype not in (np.float64, np.float32) or arr.shape != (n,):
        raise ValueError(f"{where} must be a float64 or float32 array of shape ({n},), got {arr.dtype} of shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where} holds NaN or infinite values")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{where} holds values <= 0 (scikit-learn replaces a zero scale by 1)")
    if non_negative and np.any(arr < 0):
        raise ValueError(f"{where} holds negative values")
    if at_least is not None and np.any(arr < at_least):
        raise ValueError(
            f"{where} holds values below {at_least} (min {float(arr.min()):g}); fit makes "
            "idf = ln(n / df) + 1 >= 1 with df <= n (n + 1 and df + 1 with smooth_idf)"
        )
    return arr


def _n_features(value, where):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{where} must be a positive integer, got {value!r}")
    return int(value)


def _feature_names(value, where, n):
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype != object or arr.shape != (n,) or not all(isinstance(v, str) for v in arr.tolist()):
        raise ValueError(f"{where} must be an object array of {n} str, got {arr.dtype} of shape {arr.shape}")
    return arr


def _check_keys(attributes, required, optional, where):
    if not isinstance(attributes, dict):
        raise ValueError(f"{where}: the fitted attributes are malformed")
    unknown = set(attributes) - set(required) - set(optional)
    missing = set(required) - set(attributes)
    if unknown or missing:
        raise ValueError(f"{where}: fitted attributes unknown {sorted(unknown)}, missing {sorted(missing)}")


class _Step:
    """One supported transform: its class, parameter checks and fitted state."""

    def __init__(self, module, name, params):
        self.module, self.name, self.params = module, name, params

    @property
    def key(self):
        return f"{self.module}.{self.name}"

    def cls(self):
        import importlib

        return getattr(importlib.import_module(self.module), self.name)

    def check_params(self, params, where):
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise ValueError(f"{where}: parameters {unknown} are unknown to bayesnb's table of {self.name}")
        return {k: self.params[k](v, f"{where}.{k}") for k, v in params.items()}

    # -- vectorizers

    def _vocab_state(self, step):
        return {"vocabulary_": _pack_vocabulary(step.vocabulary_), "fixed_vocabulary_": bool(step.fixed_vocabulary_)}

    def _vocab_restore(self, est, attributes, where):
        vocabulary = _unpack_vocabulary(attributes["vocabulary_"], f"{where}.vocabulary_")
        fixed = _bool(attributes["fixed_vocabulary_"], f"{where}.fixed_vocabulary_")
        given = est.vocabulary
        if fixed != (given is not None):
            raise ValueError(f"{where}.fixed_vocabulary_ is {fixed} but the vocabulary parameter is {'' if given is None else 'not '}None")
        if given is not None:
            expected = dict(given) if isinstance(given, Mapping) else {t: i for i, t in enumerate(given)}
            if expected != vocabulary:
                raise ValueError(f"{where}.vocabulary_ differs from the fixed vocabulary parameter")
        return vocabulary, fixed

    def saved_state(self, step):
        """Plain values of the fitted attributes of ``step`` (``None`` if it is not fitted)."""
        if self.name in ("CountVectorizer", "TfidfVectorizer"):
            if not hasattr(step, "vocabulary_"):
                return None
            state = self._vocab_state(step)
            if self.name == "TfidfVectorizer":
                if not step.use_idf:
                    raise ValueError(
                        "TfidfVectorizer(use_idf=False) is not supported (its fitted state is a private "
                        "transformer): use CountVectorizer() followed by TfidfTransformer(use_idf=False), "
                        "which computes the same matrix"
                    )
                state["idf_"] = np.asarray(step.idf_)
            return state
        if not hasattr(step, "n_features_in_"):
            return None
        state = {"n_features_in_": step.n_features_in_}
        if hasattr(step, "feature_names_in_"):
            state["feature_names_in_"] = np.asarray(step.feature_names_in_, dtype=object)
        if self.name == "TfidfTransformer":
            if step.use_idf:
                state["idf_"] = np.asarray(step.idf_)
        else:
            for key in ("mean_", "var_", "scale_", "n_samples_seen_"):
                # n_samples_seen_ as a 0-d array when a numpy scalar, so that its type comes back
                # (np.float64 is a float, which JSON would return as a Python float).
                value = getattr(step, key)
                state[key] = None if value is None else np.asarray(value)
        return state

    def restore(self, params, attributes, where):
        """A fresh instance built from ``params`` with ``attributes`` set, all checked."""
        params = self.check_params(params, where)
        est = self.cls()(**params)
        if self.name in ("CountVectorizer", "TfidfVectorizer"):
            tfidf = self.name == "TfidfVectorizer"
            _check_keys(attributes, ("vocabulary_", "fixed_vocabulary_") + (("idf_",) if tfidf else ()), (), where)
            vocabulary, fixed = self._vocab_restore(est, attributes, where)
            if tfidf:
                if not est.use_idf:
                    raise ValueError(f"{where}: use_idf=False is not a state bayesnb saves")
                idf = _float_vector(attributes["idf_"], f"{where}.idf_", len(vocabulary), at_least=1.0)
            est.vocabulary_ = vocabulary
            if tfidf:
                est.idf_ = idf  # the public setter (it builds the inner transformer)
            est.fixed_vocabulary_ = fixed
            return est
        optional = ("feature_names_in_",)
        if self.name == "TfidfTransformer":
            required = ("n_features_in_",) + (("idf_",) if est.use_idf else ())
        else:
            required = ("n_features_in_", "mean_", "var_", "scale_", "n_samples_seen_")
        _check_keys(attributes, required, optional, where)
        n = _n_features(attributes["n_features_in_"], f"{where}.n_features_in_")
        names = _feature_names(attributes.get("feature_names_in_"), f"{where}.feature_names_in_", n)
        est.n_features_in_ = n
        if names is not None:
            est.feature_names_in_ = names
        if self.name == "TfidfTransformer":
            if est.use_idf:
                est.idf_ = _float_vector(attributes["idf_"], f"{where}.idf_", n, at_least=1.0)
            return est
        mean, var, scale = attributes["mean_"], attributes["var_"], attributes["scale_"]
        if est.with_mean and mean is None:
            raise ValueError(f"{where}.mean_ is None but with_mean=True")
        if est.with_std and (scale is None or var is None):
            raise ValueError(f"{where}.scale_ and var_ must be arrays with with_std=True")
        if not est.with_std and scale is not None:
            raise ValueError(f"{where}.scale_ must be None with with_std=False")
        est.mean_ = None if mean is None else _float_vector(mean, f"{where}.mean_", n)
        est.var_ = None if var is None else _float_vector(var, f"{where}.var_", n, non_negative=True)
        est.scale_ = None if scale is None else _float_vector(scale, f"{where}.scale_", n, positive=True)
        seen = attributes["n_samples_seen_"]
        arr = np.asarray(seen)
        ok = arr.dtype.kind in "iuf" and arr.shape in ((), (n,)) and np.all(np.isfinite(arr)) and np.all(arr >= 0)
        if not ok or isinstance(seen, bool):
            raise ValueError(f"{where}.n_samples_seen_ must be a count >= 0 or one per feature ({n}), got {str(seen)[:60]}")
        est.n_samples_seen_ = arr[()] if arr.ndim == 0 else arr
        return est

    def width(self, est):
        """Columns of the matrix ``transform`` gives, and the columns it takes (None: text)."""
        if self.name in ("CountVectorizer", "TfidfVectorizer"):
            return len(est.vocabulary_), None
        return est.n_features_in_, est.n_features_in_


_TABLE = {
    s.key: s
    for s in (
        _Step(_TEXT_MODULE, "CountVectorizer", _VECTORIZER),
        _Step(_TEXT_MODULE, "TfidfVectorizer", {**_VECTORIZER, **_TFIDF}),
        _Step(_TEXT_MODULE, "TfidfTransformer", _TFIDF),
        _Step(_PREPROCESSING, "StandardScaler", _SCALER),
    )
}
#: The transforms a saved Pipeline may hold before its final step, by their stored names.
SUPPORTED = tuple(_TABLE)


def table_name(step):
    """The stored name of ``step``'s class if the table holds exactly that class, else None."""
    cls = type(step)
    # The public module's class object itself, never a subclass or a look-alike (scikit-learn
    # defines StandardScaler in sklearn.preprocessing._data and exports it).
    for name, spec in _TABLE.items():
        if spec.name == cls.__name__ and spec.cls() is cls:
            return name
    return None


def _stored_params(params):
    # A dtype as its name; a fixed vocabulary packed, with whether it was a mapping.
    out = dict(params)
    if "dtype" in out:
        name = np.dtype(out["dtype"]).name
        out["dtype"] = "bool_" if name == "bool" else name
    vocabulary = out.get("vocabulary")
    if vocabulary is not None:
        mapping = isinstance(vocabulary, Mapping)
        packed = _pack_vocabulary(vocabulary if mapping else {t: i for i, t in enumerate(vocabulary)})
        out["vocabulary"] = {"kind": "dict" if mapping else "list", "terms": packed}
    return out


def _read_params(params, where):
    # The inverse of _stored_params, on values read from a file (checked by check_params next).
    out = dict(params)
    if "dtype" in out:
        value = out["dtype"]
        if not isinstance(value, str) or value not in DTYPES:
            raise ValueError(f"{where}.dtype must be one of the numpy dtypes {sorted(DTYPES)}, got {str(value)[:40]!r}")
        out["dtype"] = DTYPES[value]
    vocabulary = out.get("vocabulary")
    if vocabulary is not None:
        if not isinstance(vocabulary, dict) or set(vocabulary) != {"kind", "terms"} or vocabulary["kind"] not in ("dict", "list"):
            raise ValueError(f"{where}.vocabulary must be stored as {{'kind': 'dict' | 'list', 'terms': ...}}")
        mapping = _unpack_vocabulary(vocabulary["terms"], f"{where}.vocabulary")
        if vocabulary["kind"] == "list":
            if sorted(mapping.values()) != list(mapping.values()):
                raise ValueError(f"{where}.vocabulary: a list of terms is numbered in order")
            mapping = list(mapping)
        out["vocabulary"] = mapping
    return out


def saved_state(name, step, where):
    """(params, fitted attributes) of ``step`` as plain values to store; ValueError if not storable.

    The stored state is restored once here with the checks of :func:`restore`, so that
    ``save`` never writes what ``load`` would refuse.
    """
    spec = _TABLE[name]
    spec.check_params(step.get_params(deep=False), where)
    params = _stored_params(step.get_params(deep=False))
    state = spec.saved_state(step)
    if state is None:
        raise ValueError(f"{where} is not fitted: fit the pipeline before saving it")
    spec.restore(_read_params(params, where), state, where)
    return params, state


def restore(name, params, attributes, where):
    """A fitted transform of the table from decoded ``params`` and ``attributes``."""
    spec = _TABLE.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"{where}: {str(name)[:80]!r} is not a transform of bayesnb's table ({', '.join(SUPPORTED)})")
    if not isinstance(params, dict):
        raise ValueError(f"{where}: the parameters are malformed")
    return spec.restore(_read_params(params, where), attributes, where)


def width(name, est):
    """(columns out, columns in or None) of a restored transform."""
    return _TABLE[name].width(est)
