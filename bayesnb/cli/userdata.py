"""A user's CSV/TSV data for the ``bayesnb`` command: columns, encodings, model files.

``bayesnb fit`` learns a *column layout* from the training file: which column holds the
label, which the text (modelled as word counts) or the features (numbers, or categories
encoded by their sorted distinct values), the vocabulary and the categories. The model is
saved with ``estimator.save`` (a file ``bayesnb.load`` reads) and the layout next to it
as JSON (``MODEL.cli.json``), so that ``bayesnb predict`` turns a new file into the same
columns.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from bayesnb._version import __version__
from bayesnb.core import families

__all__ = ["DataError", "ALIASES", "family_choices", "resolve_family"]

_SPEC_FORMAT = "bayesnb-cli-model"
_SPEC_VERSION = 1
# Command-line names of models that are a registered family with fixed estimator
# parameters: (name, family, parameters).
ALIASES = (
    ("gaussian-shared", "gaussian_mv", (("covariance", "shared"),)),
    ("gaussian-full", "gaussian_mv", (("covariance", "full"),)),
)
# A bag of words is counts (or, thresholded, presence): families of those supports model text.
_TEXT_SUPPORTS = ("counts", "binary")
_LABEL_NAMES = ("label", "class", "target", "y", "category")


class DataError(Exception):
    """A file or data set the command cannot use (reported with exit status 1)."""


def family_choices():
    """Values of ``--family``: ``auto``, every registered family, the aliases, ``mixed``."""
    return ("auto", *families.names(), *(alias for alias, _, _ in ALIASES), "mixed")


def resolve_family(name):
    """``(Family, estimator parameters)`` of a ``--family`` value other than auto / mixed."""
    for alias, family, params in ALIASES:
        if name == alias:
            return families.get(family), dict(params)
    return families.get(name), {}


def _text_families():
    return tuple(n for n in families.names() if families.get(n).support in _TEXT_SUPPORTS)


def split(X, y, test_size, seed):
    from sklearn.model_selection import train_test_split

    classes = sorted(set(y.tolist()))
    if len(classes) < 2:
        raise DataError(f"need at least 2 classes to classify, found {len(classes)} ({classes})")
    try:
        return train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError as exc:
        raise DataError(f"cannot make a stratified train/test split: {exc}") from None


def read_data(path, sep, header):
    from bayesnb.io.datasets import read_table

    try:
        return read_table(path, sep=sep, header=header)
    except (OSError, ValueError) as exc:
        raise DataError(str(exc) or f"cannot read {path}") from None


def _label_column(table, requested):
    if requested is not None:
        try:
            return table.index(requested)
        except ValueError as exc:
            raise DataError(str(exc)) from None
    lowered = [c.lower() for c in table.columns]
    for name in _LABEL_NAMES:
        if name in lowered:
            return lowered.index(name)
    raise DataError(
        f"{table.path}: no label column found (none named {', '.join(_LABEL_NAMES)}); name it with --label"
    )


def spec_from_args(args, table):
    """Which columns hold the label, the text or the features, and their types."""
    import numpy as np

    label = _label_column(table, args.label)
    spec = {
        "format": _SPEC_FORMAT,
        "format_version": _SPEC_VERSION,
        "bayesnb_version": __version__,
        "sep": args.sep,
        "header": not args.no_header,
        "label": table.columns[label],
    }
    if args.text is not None:
        if args.features is not None:
            raise DataError("--text and --features are exclusive: a model of a text column uses no other column")
        try:
            text = table.index(args.text)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if text == label:
            raise DataError("--text names the label column")
        family = "multinomial" if args.family == "auto" else args.family
        if family not in _text_families():
            raise DataError(f"--family {family} cannot model a text column; use one of {', '.join(_text_families())}")
        spec.update(kind="text", text=table.columns[text], family=family)
        return spec
    if args.features is not None:
        try:
            cols = [table.index(c.strip()) for c in args.features.split(",") if c.strip()]
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if label in cols:
            raise DataError("--features includes the label column")
        if not cols:
            raise DataError("--features names no column")
    else:
        cols = [j for j in range(len(table.columns)) if j != label]
    if not cols:
        raise DataError(f"{table.path}: no feature columns besides the label")
    types = {}
    for j in cols:
        numeric = _as_numbers(table.values[j]) is not None
        types[table.columns[j]] = "numeric" if numeric else "categorical"
    family = args.family
    if family == "auto":
        kinds = set(types.values())
        family = "gaussian" if kinds == {"numeric"} else "categorical" if "numeric" not in kinds else "mixed"
    codes = family != "mixed" and resolve_family(family)[0].support == "codes"
    if family != "mixed" and not codes:
        bad = [c for c, t in types.items() if t != "numeric"]
        if bad:
            column = bad[0]
            values = table.column(column)
            example = next(v for v in values.tolist() if _as_numbers(np.asarray([v])) is None)
            raise DataError(f"--family {family} needs numeric columns; column {column!r} holds {example!r}")
    if codes:
        types = dict.fromkeys(types, "categorical")
    spec.update(kind="tabular", features=[table.columns[j] for j in cols], types=types, family=family)
    return spec


def _as_numbers(values):
    import numpy as np

    try:
        out = np.asarray(values, dtype=np.float64)
    except ValueError:
        return None
    return out if np.all(np.isfinite(out)) else None


def design(spec, table, *, fit):
    """The feature matrix of ``table`` under ``spec`` (learning vocabulary/categories if ``fit``)."""
    import numpy as np

    if spec["kind"] == "text":
        from sklearn.feature_extraction.text import CountVectorizer

        try:
            texts = table.column(spec["text"])
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if fit:
            vectorizer = CountVectorizer()
            try:
                X = vectorizer.fit_transform(texts.tolist())
            except ValueError as exc:
                raise DataError(f"{table.path}: cannot build a vocabulary from column {spec['text']!r}: {exc}") from None
            spec["vocabulary"] = [str(w) for w in vectorizer.get_feature_names_out()]
            return X
        return CountVectorizer(vocabulary=spec["vocabulary"]).transform(texts.tolist())
    columns = []
    if fit:
        spec["categories"] = {}
    for name in spec["features"]:
        try:
            values = table.column(name)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if spec["types"][name] == "numeric":
            numbers = _as_numbers(values)
            if numbers is None:
                bad = next(
                    (i for i, v in enumerate(values.tolist()) if _as_numbers(np.asarray([v])) is None), 0
                )
                raise DataError(
                    f"{table.path}, line {int(table.lines[bad])}: column {name!r} must be a finite number, "
                    f"got {str(values[bad])!r}"
                )
            columns.append(numbers)
        else:
            if fit:
                spec["categories"][name] = sorted(set(values.tolist()))
            cats = spec["categories"][name]
            lookup = {v: k for k, v in enumerate(cats)}
            # A value not seen at fit gets the code after the fitted ones: CategoricalNB's
            # share of a new category.
            columns.append(np.array([lookup.get(v, len(cats)) for v in values.tolist()], dtype=np.float64))
    X = np.column_stack(columns)
    if spec["family"] != "mixed" and resolve_family(spec["family"])[0].support == "codes":
        X = X.astype(np.int64)
    return X


def make_estimator(spec, alpha):
    import numpy as np

    from bayesnb import estimators as E

    def categories(columns):
        # Every category seen at fit: a code past them is a new category at predict.
        return {"min_categories": np.asarray([len(spec["categories"][c]) for c in columns], dtype=np.int64)}

    family = spec["family"]
    if family != "mixed":
        fam, params = resolve_family(family)
        extra = categories(spec["features"]) if fam.support == "codes" else {}
        return E.estimator_for(fam.name, alpha=alpha, **params, **extra)
    # mixed: one Gaussian block of the numeric columns, one categorical block of the others
    numeric = [j for j, c in enumerate(spec["features"]) if spec["types"][c] == "numeric"]
    nominal = [j for j, c in enumerate(spec["features"]) if spec["types"][c] != "numeric"]
    blocks = []
    if numeric:
        blocks.append(("gaussian", E.estimator_for("gaussian"), numeric))
    if nominal:
        extra = categories([spec["features"][j] for j in nominal])
        blocks.append(("categorical", E.estimator_for("categorical", alpha=alpha, **extra), nominal))
    return E.MixedNB(blocks=blocks)


def labels(spec, table, required=True):
    import numpy as np

    name = spec["label"]
    if name not in table.columns:
        if required:
            raise DataError(f"{table.path}: no label column {name!r}")
        return None
    y = table.column(name)
    empty = np.flatnonzero(y == "")
    if empty.size:
        raise DataError(f"{table.path}, line {int(table.lines[empty[0]])}: empty label")
    return y


@contextlib.contextmanager
def user_errors(what):
    """Errors that the user's data causes (ValueError/TypeError) become one-line DataErrors."""
    try:
        yield
    except DataError:
        raise
    except (ValueError, TypeError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"{what}: {message}") from None


def spec_path(model_path):
    """Where the column layout of a model file is kept: ``MODEL.cli.json`` beside it."""
    return Path(str(model_path) + ".cli.json")


def save_model(clf, spec, path):
    """Save the fitted estimator (``estimator.save``) and its column layout beside it."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"--model {path} is a directory")
    try:
        clf.save(path)
        spec_path(path).write_text(json.dumps(spec, indent=1, ensure_ascii=False), encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None


def load_model(path):
    """The estimator (``bayesnb.load``) and the column layout saved by :func:`save_model`."""
    from bayesnb.io.persistence import load

    path = Path(path)
    if not path.exists():
        raise DataError(f"no such file: {path}")
    if not path.is_file():
        raise DataError(f"not a regular file: {path}")
    layout = spec_path(path)
    if not layout.is_file():
        raise DataError(f"{layout} not found: the column layout that 'bayesnb fit' saves next to the model")
    try:
        spec = json.loads(layout.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{layout}: not a bayesnb column layout ({exc})") from None
    if not isinstance(spec, dict) or spec.get("format") != _SPEC_FORMAT:
        raise DataError(f"{layout}: not a bayesnb column layout")
    if not isinstance(spec.get("format_version"), int) or spec["format_version"] > _SPEC_VERSION:
        raise DataError(f"{layout}: format {spec.get('format_version')!r} is not one this bayesnb reads")
    try:
        clf = load(path)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise DataError(f"{path}: cannot load the model: {' '.join(str(exc).split())}") from None
    return clf, spec
