"""A user's CSV/TSV data for the ``bayesnb`` command: columns, encodings, model files.

``bayesnb fit`` learns a *column layout* from the training file: which column holds the
label, which the text (modelled as word counts: ``--text``, or an ARFF file's only
string attribute) or the features (numbers, or categories encoded by their sorted
distinct values), the vocabulary and the categories. Each feature column's family
follows the rule of ``MixedNB()`` on a DataFrame of the file
(:func:`bayesnb.estimators.mixed.infer_blocks`: numbers, integers included, Gaussian;
other values categorical). The model is
saved with ``estimator.save`` (a file ``bayesnb.load`` reads) and the layout next to it
as JSON (``MODEL.cli.json``), so that ``bayesnb predict`` turns a new file into the same
columns. The layout is bound to its model: it records the SHA-256 of the model file's
bytes and a checksum of its own content, and ``bayesnb predict`` refuses a layout that
belongs to another model or was edited (it is checked as strictly as the model file).
A layout rewritten with its checksum recomputed is caught by what the model file itself
records (:func:`_check_spec_fits_model`): the model is fitted on the file's columns by
name and on the category *labels* of its categorical columns, not on bare codes
(:func:`model_input`), so it holds the column names (``feature_names_in_``) and each
categorical column's labels in code order (``categories_``), and a layout that renames,
reorders or relabels a column no longer matches its model. A text model is fitted on the
word counts (a sparse matrix, which carries no names), and :func:`save_model` writes it
with its vocabulary in column order as ``feature_names_in_``, so a layout whose words
were permuted (one word's counts read as another's) no longer matches its model either.
Both files are written through :mod:`bayesnb.io._atomic` (whole or not at all, never over
an input or over a file of another kind without ``--force``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

from bayesnb._version import __version__
from bayesnb.io import _atomic

__all__ = ["DataError", "ALIASES", "family_choices", "resolve_family"]

_SPEC_FORMAT = "bayesnb-cli-model"
# 2: the layout holds the SHA-256 of its model file, its own checksum and the fit file's columns.
# 3: the model is fitted on named columns and category labels (model_input), which it records.
# 4: a text model's file records its vocabulary in column order (feature_names_in_,
#    save_model). Every older layout is refused (a format-3 text model cannot be checked
#    against its vocabulary; format 3 was never in a release, so one rule for all).
_SPEC_VERSION = 4
# A column layout is a few bytes per word or category: this bounds what predict reads.
_MAX_SPEC_BYTES = 256 * 2**20
# Command-line names of models that are a registered family with fixed estimator
# parameters: (name, family, parameters).
ALIASES = (
    ("gaussian-shared", "gaussian_mv", (("covariance", "shared"),)),
    ("gaussian-full", "gaussian_mv", (("covariance", "full"),)),
)
# A bag of words is counts (or, thresholded, presence): families of those supports model text.
_TEXT_SUPPORTS = ("counts", "binary")
_LABEL_NAMES = ("label", "class", "target", "y", "category")
# What a feature column holds (a column type, not a family).
_COLUMN_TYPES = ("numeric", "categorical")


class DataError(Exception):
    """A file or data set the command cannot use (reported with exit status 1)."""


def family_choices():
    """Values of ``--family``: ``auto``, every registered family, the aliases, ``mixed``."""
    from bayesnb.core import families  # on first use: `bayesnb --help` does not import JAX

    return ("auto", *families.names(), *(alias for alias, _, _ in ALIASES), "mixed")


def resolve_family(name):
    """``(Family, estimator parameters)`` of a ``--family`` value other than auto / mixed."""
    from bayesnb.core import families  # on first use: `bayesnb --help` does not import JAX

    for alias, family, params in ALIASES:
        if name == alias:
            return families.get(family), dict(params)
    return families.get(name), {}


def _text_families():
    from bayesnb.core import families  # on first use: `bayesnb --help` does not import JAX

    return tuple(n for n in families.names() if families.get(n).support in _TEXT_SUPPORTS)


def note(message):
    """Tell the user, on stderr, how the command reads their data where it had to choose."""
    print(f"bayesnb: note: {message}", file=sys.stderr, flush=True)


def _string_attributes(table, label):
    """``(string columns, other feature columns)`` of an ARFF file (both empty for CSV/TSV)."""
    declared = table.types or {}
    strings = [c for j, c in enumerate(table.columns) if j != label and declared.get(c) == "string"]
    others = [c for j, c in enumerate(table.columns) if j != label and declared.get(c) != "string"] if strings else []
    return strings, others


def _text_column(args, table, label):
    """The column to model as text: ``--text``, or an ARFF file's one string attribute.

    A ``string`` attribute is free text (one document per row): as categories, every new
    document would be a category never seen in training and every prediction the class
    prior. Without ``--text`` and ``--features``, the file's only feature column, if it is
    a string attribute, is modelled as text (with a note); a string attribute beside
    other feature columns is refused, naming the options.
    """
    if args.text is not None or args.features is not None:
        return args.text
    strings, others = _string_attributes(table, label)
    if not strings:
        return None
    family = args.family
    if len(strings) == 1 and not others and (family == "auto" or family in _text_families()):
        note(
            f"{table.path}: column {strings[0]!r} is an ARFF string attribute (free text): modelling its word "
            f"counts (bag of words), as --text {_quoted(strings[0])} does"
        )
        return strings[0]
    named = ", ".join(map(repr, strings))
    which = (
        f"column {named} is an ARFF string attribute" if len(strings) == 1
        else f"columns {named} are ARFF string attributes"
    )
    raise DataError(
        f"{table.path}: {which} (free text, one document per row), which a model of categories cannot use: "
        "every new document would be a category never seen in training. Model its words with "
        f"--text {_quoted(strings[0])} (a text model uses that column alone), or leave "
        f"{'it' if len(strings) == 1 else 'them'} out with --features naming the other columns"
    )


def _quoted(name):
    """``name`` as typed on a command line."""
    import shlex

    return shlex.quote(str(name))


#: A value of several words: free text rather than a category.
_WORDS = re.compile(r"\S+\s+\S+")


def _looks_like_text(values):
    """Whether the (present) values of a column read as free text: mostly distinct, mostly several words."""
    values = values.tolist()
    n = len(values)
    if n < 10:
        return False
    distinct = len(set(values))
    worded = sum(1 for v in values if _WORDS.search(str(v)))
    return distinct >= 0.5 * n and worded >= 0.5 * n


def _numeric_kind(values, numbers, absent):
    """``"int"`` if every present value is written as an integer (as pandas would read the
    column: int64), else ``"float"``; the kind :func:`~bayesnb.estimators.mixed.infer_blocks` takes."""
    import numpy as np

    present = ~absent
    x = numbers[present]
    if x.size == 0 or not np.all(np.isfinite(x)) or not np.all(x == np.round(x)):
        return "float"
    # Integral values written with a decimal point or an exponent ("3.0", "1e3") are floats.
    text = "".join(str(v) for v in np.asarray(values)[present].tolist())
    return "float" if any(c in text for c in ".eE") else "int"


def split(X, y, test_size, seed):
    from sklearn.model_selection import train_test_split

    classes = sorted(set(y.tolist()))
    if len(classes) < 2:
        raise DataError(f"need at least 2 classes to classify, found {len(classes)} ({classes})")
    try:
        return train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError as exc:
        raise DataError(f"cannot make a stratified train/test split: {exc}") from None


def read_data(path, sep, header, **limits):
    """A user's CSV/TSV file as a :class:`~bayesnb.io.datasets.Table`; errors become :class:`DataError`.

    ``limits`` (``max_rows``, ``max_bytes``) are :func:`~bayesnb.io.datasets.read_table`'s;
    a refusal names the command-line option that raises the bound.
    """
    from bayesnb.io.datasets import read_arff, read_table

    try:
        if Path(path).suffix.lower() == ".arff":
            # The header declares the columns, their types and the nominal values.
            return read_arff(path, **limits)
        return read_table(path, sep=sep, header=header, **limits)
    except (OSError, ValueError) as exc:
        raise DataError(limit_hint(str(exc)) or f"cannot read {path}") from None


def labelled_texts(path, *, max_rows=None, max_bytes=None):
    """``(texts, labels)`` of a file of labelled documents: ``label<TAB>text`` lines, or an ARFF file.

    An ARFF file (``.arff``) is read by the reader every other command uses
    (:func:`read_data`): its one ``string`` attribute is the text, and the label is the
    column named as ``bayesnb fit`` finds it (``label``, ``class``, ...), else the last
    nominal attribute (Weka's convention). A missing label (``?``) makes the document
    unlabelled (an empty label, as an empty label field of a ``label<TAB>text`` line).

    Parameters
    ----------
    path : str or Path
    max_rows, max_bytes : int, optional
        The readers' bounds (their defaults when None).

    Returns
    -------
    texts : list of str
    labels : ndarray of str
        ``""`` for an unlabelled document.

    Raises
    ------
    DataError
        If the file cannot be read, or an ARFF file has no single text attribute or no
        label.
    """
    import numpy as np

    from bayesnb.io.datasets import ARFF_MISSING, read_labelled_text

    limits = {k: v for k, v in (("max_rows", max_rows), ("max_bytes", max_bytes)) if v is not None}
    if Path(path).suffix.lower() != ".arff":
        try:
            return read_labelled_text(path, allow_unlabelled=True, **limits)
        except (OSError, ValueError) as exc:
            raise DataError(limit_hint(str(exc)) if str(exc) else f"cannot read {path}") from None
    table = read_data(path, None, True, **limits)
    types = table.types or {}
    try:
        label = _label_column(table, None)
    except DataError:
        nominal = [j for j, c in enumerate(table.columns) if types.get(c) == "nominal"]
        if not nominal:
            raise DataError(
                f"{path}: no label column (none named {', '.join(_LABEL_NAMES)}, and no nominal attribute)"
            ) from None
        label = nominal[-1]
    strings, others = _string_attributes(table, label)
    if len(strings) != 1:
        found = "no string attribute" if not strings else f"{len(strings)} string attributes ({', '.join(map(repr, strings))})"
        raise DataError(
            f"{path}: the demo models one text column, an ARFF string attribute, and this file has {found}; "
            f"compare models of its columns with: bayesnb compare {path}"
        )
    if others:
        note(f"{path}: the demo models the text of {strings[0]!r} alone; left out: {', '.join(map(repr, others))}")
    texts = table.values[table.index(strings[0])]
    labels = np.asarray(table.values[label], dtype=str)
    labels = np.where(labels == ARFF_MISSING, "", labels)
    return [str(t) for t in texts], labels


def limit_hint(message):
    """A reader's message with its bound named by the command-line option that raises it."""
    message = message.replace("read_table's max_rows", "raise it with --max-rows")
    return message.replace("read_table's max_bytes", "raise it with --max-size MB")


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
        # Every column of the fit file: predict names the ones it does not know.
        "columns": list(table.columns),
        # How a missing value is written, and what the model does with one.
        "missing": getattr(args, "missing", "error"),
        "na_values": sorted(na_values_of(getattr(args, "na_values", DEFAULT_NA_VALUES), table)),
    }
    na = set(spec["na_values"])
    text_column = _text_column(args, table, label)
    if text_column is not None:
        if args.features is not None:
            raise DataError("--text and --features are exclusive: a model of a text column uses no other column")
        try:
            text = table.index(text_column)
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
    types, kinds, not_finite, notes = {}, {}, {}, []
    declared = table.types or {}
    for j in cols:
        name = table.columns[j]
        absent = _missing_mask(table.values[j], na)
        if absent.any() and spec["missing"] == "error":
            i = int(np.flatnonzero(absent)[0])
            raise DataError(
                f"{table.path}, line {int(table.lines[i])}: column {name!r} holds a missing value "
                f"({str(table.values[j][i])!r}, {int(absent.sum())} in all); pass --missing ignore to leave "
                "missing values out of the model, or --na-values to say which values are missing"
            )
        if name in declared:
            # An ARFF file declares its types: a numeric attribute stays numeric with '?'.
            numbers = _parse_numbers(table.values[j], absent) if declared[name] == "numeric" else None
        else:
            # A number column with missing values is numeric, not categorical.
            numbers = _parse_numbers(table.values[j], absent) if not absent.all() else None
        types[name] = "categorical" if numbers is None else "numeric"
        # The kind of column MixedNB would see in a DataFrame read from this file.
        kinds[name] = "nominal" if numbers is None else _numeric_kind(table.values[j], numbers, absent)
        if numbers is not None and not np.all(np.isfinite(numbers[~absent])):
            not_finite[name] = int(np.flatnonzero(~np.isfinite(numbers) & ~absent)[0])
        if numbers is None and declared.get(name) == "string":
            notes.append(
                f"{table.path}: column {name!r} is an ARFF string attribute (free text) modelled as categories, "
                "as --features asks: every value not seen in training is a new category; model its words "
                f"with --text {_quoted(name)}"
            )
        elif numbers is None and name not in declared and _looks_like_text(table.values[j][~absent]):
            notes.append(
                f"{table.path}: column {name!r} looks like free text (most of its values distinct, of several "
                "words), modelled as categories: every value not seen in training is a new category; model "
                f"its words with --text {_quoted(name)}"
            )
    family = args.family
    if family == "auto":
        # The rule of MixedNB(blocks=None) on a DataFrame of these columns: one family for
        # all of them is that family's estimator, several are a MixedNB of their blocks.
        from bayesnb.estimators.mixed import infer_blocks

        blocks = infer_blocks([kinds[table.columns[j]] for j in cols])
        family = blocks[0][0] if len(blocks) == 1 else "mixed"
    codes = family != "mixed" and resolve_family(family)[0].support == "codes"
    if family != "mixed" and not codes:
        bad = [c for c, t in types.items() if t != "numeric"]
        if bad:
            column = bad[0]
            values = table.named(column)
            example = next(v for v in values.tolist() if _as_numbers(np.asarray([v])) is None)
            raise DataError(f"--family {family} needs numeric columns; column {column!r} holds {example!r}")
    if codes:
        types = dict.fromkeys(types, "categorical")
    elif not_finite:
        # A column of numbers with one "nan", "inf" or "1e309" is numeric data with a value
        # the model cannot take, not a column of categories: say so instead of switching
        # the column to categorical behind the user's back.
        column, i = next(iter(not_finite.items()))
        value = table.named(column)[i]
        needs = f"--family {family} needs numeric columns; " if args.family != "auto" else ""
        raise DataError(
            f"{table.path}, line {int(table.lines[i])}: {needs}column {column!r} holds {str(value)!r}, not a "
            "finite number (numeric columns need finite numbers; remove or fill that row, or choose "
            "--family categorical to treat the values as categories)"
        )
    spec.update(kind="tabular", features=[table.columns[j] for j in cols], types=types, kinds=kinds, family=family)
    for message in notes:  # once the columns are known to be modelled as categories
        note(message)
    return spec


def _parse_numbers(values, absent=None):
    """``values`` as float64 (non-finite ones included; NaN where ``absent``), or None if one is not a number."""
    import numpy as np

    if absent is not None and absent.any():
        out = np.full(len(values), np.nan)
        present = _parse_numbers(np.asarray(values)[~absent])
        if present is None:
            return None
        out[~absent] = present
        return out
    try:
        return np.asarray(values, dtype=np.float64)
    except (ValueError, OverflowError, TypeError):
        return None


#: Values that mean "missing" in a user's file unless ``--na-values`` says otherwise.
DEFAULT_NA_VALUES = ("?", "NA", "")


def na_values_of(values, table):
    """The set of missing-value markers for ``table``: ``values``, plus ARFF's ``?`` for an ARFF file."""
    from bayesnb.io.datasets import ARFF_MISSING

    out = set(values)
    if table.types is not None:
        out.add(ARFF_MISSING)
    return out


def _missing_mask(values, na):
    """Where a column's values are one of the missing-value markers ``na``: bool ndarray."""
    import numpy as np

    if not na:
        return np.zeros(len(values), dtype=bool)
    return np.fromiter((v in na for v in values.tolist()), dtype=bool, count=len(values))


def _as_numbers(values):
    import numpy as np

    out = _parse_numbers(values)
    return out if out is not None and np.all(np.isfinite(out)) else None


def check_columns(spec, table):
    """Refuse a file that lacks a column of the layout, naming the missing and unknown ones.

    Columns are matched by name only (a file with other names is never read by position).
    """
    needed = [spec["text"]] if spec["kind"] == "text" else list(spec["features"])
    missing = [c for c in needed if not table.has(c)]
    if missing:
        known = set(spec.get("columns", needed)) | {spec["label"]}
        unexpected = [c for c in table.columns if c not in known]
        raise DataError(
            f"{table.path}: no column named {missing[0]!r}: the file's columns do not match the model's "
            f"(missing: {_shown(missing)}; unexpected: {_shown(unexpected)})"
        )


def _shown(names, limit=10):
    names = list(names)
    return ", ".join(map(repr, names[:limit])) + (f" and {len(names) - limit} more" if len(names) > limit else "") or "none"


def design(spec, table, *, fit):
    """The feature matrix of ``table`` under ``spec`` (learning vocabulary/categories if ``fit``)."""
    import numpy as np

    if not fit:
        check_columns(spec, table)
    if spec["kind"] == "text":
        from sklearn.feature_extraction.text import CountVectorizer

        try:
            texts = table.named(spec["text"])
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
    na = set(spec.get("na_values", ())) | (na_values_of((), table) if table.types is not None else set())
    ignore = spec.get("missing", "error") == "ignore"
    for name in spec["features"]:
        try:
            values = table.named(name)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        absent = _missing_mask(values, na)
        if absent.any() and not ignore:
            i = int(np.flatnonzero(absent)[0])
            raise DataError(
                f"{table.path}, line {int(table.lines[i])}: column {name!r} holds a missing value "
                f"({str(values[i])!r}); the model was fitted with --missing error: fit it with "
                "--missing ignore to leave missing values out"
            )
        if spec["types"][name] == "numeric":
            numbers = _parse_numbers(values, absent)
            bad_mask = ~absent if numbers is None else ~absent & ~np.isfinite(numbers)
            if numbers is None or bad_mask.any():
                bad = next(
                    (i for i, v in enumerate(values.tolist())
                     if not absent[i] and _as_numbers(np.asarray([v])) is None), 0
                )
                raise DataError(
                    f"{table.path}, line {int(table.lines[bad])}: column {name!r} must be a finite number, "
                    f"got {str(values[bad])!r}"
                )
            columns.append(numbers)
        else:
            if fit:
                declared = (table.categories or {}).get(name)
                # ARFF declares a nominal column's values (in its order); else the sorted
                # values seen. A missing value is not a category.
                seen = declared if declared is not None else sorted(set(values[~absent].tolist()))
                spec["categories"][name] = [str(v) for v in seen]
            cats = spec["categories"][name]
            lookup = {v: k for k, v in enumerate(cats)}
            # A value not seen at fit gets the code after the fitted ones: CategoricalNB's
            # share of a new category.
            codes = np.array([lookup.get(v, len(cats)) for v in values.tolist()], dtype=np.float64)
            codes[absent] = np.nan
            columns.append(codes)
    X = np.column_stack(columns)
    if spec["family"] != "mixed" and resolve_family(spec["family"])[0].support == "codes" and not np.isnan(X).any():
        X = X.astype(np.int64)
    return X


def model_input(spec, table, *, fit):
    """What ``bayesnb fit`` fits and ``bayesnb predict`` predicts: the design, with the labels a model can check.

    A text column is its word counts (:func:`design`). Tabular columns become a
    DataFrame with the file's column names; a categorical column holds its category
    *labels*, not codes, so that the model learns them (``categories_``, in the layout's
    order: at fit a pandas ``Categorical`` of the layout's categories, whose codes are
    :func:`design`'s) and encodes each row itself at predict (the raw values: a value
    not seen at fit is a new category, a missing one is left out). The model file then
    records the column names and every categorical column's labels in code order, and
    :func:`_check_spec_fits_model` refuses a layout that says otherwise: a layout whose
    labels were permuted (checksum recomputed) would otherwise read ``"red"`` as the
    code of ``"blue"`` without a trace. The fitted numbers are those of :func:`design`
    (same codes, same values).

    Parameters
    ----------
    spec : dict
        The column layout (learned by :func:`design` when ``fit``).
    table : the file read
    fit : bool

    Returns
    -------
    sparse matrix or pandas.DataFrame
    """
    import numpy as np

    X = design(spec, table, fit=fit)
    if spec["kind"] == "text":
        if fit:
            _check_vocabulary_storage(spec["vocabulary"], spec["text"], table.path)
        return X
    import pandas as pd

    na = set(spec.get("na_values", ())) | (na_values_of((), table) if table.types is not None else set())
    columns = {}
    for j, name in enumerate(spec["features"]):
        if spec["types"][name] == "numeric":
            columns[name] = np.asarray(X[:, j], dtype=np.float64)
            continue
        cats = pd.Index(spec["categories"][name], dtype=object)
        if fit:
            codes = np.asarray(X[:, j], dtype=np.float64)
            if np.any(codes >= len(cats)):  # design learned the categories from these very rows
                raise DataError(f"{table.path}: column {name!r} holds a value outside its categories")
            columns[name] = pd.Categorical.from_codes(np.where(np.isnan(codes), -1, codes).astype(np.int64), categories=cats)
        else:
            values = table.named(name)
            labels = np.asarray(values, dtype=object)
            labels[_missing_mask(values, na)] = None
            columns[name] = labels
    return pd.DataFrame(columns, columns=list(spec["features"]))


def _check_vocabulary_storage(vocabulary, column, path):
    """Refuse a vocabulary whose copy in the model file would be unreasonably large.

    :func:`save_model` stores the words as the model's ``feature_names_in_``, which the
    model file holds as a fixed-width string array (4 bytes per character of the longest
    word, for every word): one very long "word" (a run of letters thousands of characters
    long) would make every word that long, in memory at save and at load. Refused before
    the fit, naming the word, above :data:`_MAX_SPEC_BYTES` (the bound on the layout).
    """
    longest = max(vocabulary, key=len)
    size = 4 * len(longest) * len(vocabulary)
    if size > _MAX_SPEC_BYTES:
        raise DataError(
            f"{path}: column {column!r} has {len(vocabulary):,} distinct words, the longest of "
            f"{len(longest):,} characters ({longest[:40]!r}...): the model file stores the vocabulary as "
            f"{len(vocabulary):,} entries of that width ({size / 2**20:,.0f} MiB, more than "
            f"{_MAX_SPEC_BYTES // 2**20} MiB); remove or split the long word"
        )


def make_estimator(spec, alpha):
    import numpy as np

    from bayesnb import estimators as E

    def categories(columns):
        # Every category seen at fit: a code past them is a new category at predict.
        return {"min_categories": np.asarray([len(spec["categories"][c]) for c in columns], dtype=np.int64)}

    family = spec["family"]
    missing = spec.get("missing", "error")
    if family != "mixed":
        fam, params = resolve_family(family)
        extra = categories(spec["features"]) if fam.support == "codes" else {}
        return E.estimator_for(fam.name, alpha=alpha, missing=missing, **params, **extra)
    # mixed: the blocks MixedNB(blocks=None) infers from a DataFrame of these columns (one
    # rule for both): by default the numeric columns Gaussian, the others categorical.
    from bayesnb.core import families
    from bayesnb.estimators.mixed import infer_blocks

    features = spec["features"]
    kinds = spec.get("kinds") or {c: "float" if spec["types"][c] == "numeric" else "nominal" for c in features}
    blocks = []
    for name, est, idx in infer_blocks([kinds[c] for c in features]):
        params = est.get_params(deep=False)
        if families.get(name).support == "codes":
            params.update(categories([features[j] for j in idx]))
        if "alpha" in params:
            params["alpha"] = alpha
        blocks.append((name, est.set_params(**params), idx.tolist()))
    return E.MixedNB(blocks=blocks, missing=missing)


def labels(spec, table, required=True):
    import numpy as np

    name = spec["label"]
    if not table.has(name):
        if required:
            raise DataError(f"{table.path}: no label column {name!r}")
        return None
    y = table.named(name)
    empty = np.flatnonzero(y == "")
    if empty.size:
        raise DataError(f"{table.path}, line {int(table.lines[empty[0]])}: empty label")
    na = set(spec.get("na_values", ())) | (na_values_of((), table) if table.types is not None else set())
    absent = np.flatnonzero(_missing_mask(y, na))
    if absent.size:
        raise DataError(
            f"{table.path}, line {int(table.lines[absent[0]])}: missing label ({str(y[absent[0]])!r}); "
            "rows without a label cannot be fitted or scored: remove them"
        )
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


def is_model_file(path):
    """Whether ``path`` looks like a bayesnb model file (a zip holding ``metadata.json``)."""
    if _atomic.read_head(path, 4) != b"PK\x03\x04":
        return False
    try:
        with zipfile.ZipFile(path) as zf:  # reads the directory only
            return "metadata.json" in zf.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


def is_layout_file(path):
    """Whether ``path`` looks like a column layout written by :func:`save_model`."""
    return f'"format": "{_SPEC_FORMAT}"'.encode() in _atomic.read_head(path, 256)


def _file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            h.update(block)
    return h.hexdigest()


def _spec_checksum(spec):
    body = {k: v for k, v in spec.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def check_model_outputs(path, *, inputs=(), force=False):
    """Refuse a ``--model`` path (or its layout beside it) that is an input or a stranger's file."""
    try:
        _atomic.check_output(path, option="--model", kind="a bayesnb model file", inputs=inputs,
                             is_own=is_model_file, force=force)
        _atomic.check_output(spec_path(path), option="--model's column layout", kind="a bayesnb column layout",
                             inputs=inputs, is_own=is_layout_file, force=force)
    except _atomic.UnsafeOutputError as exc:
        raise DataError(str(exc)) from None


def save_model(clf, spec, path, *, inputs=(), force=False):
    """Save the fitted estimator (``estimator.save``) and its column layout beside it.

    Both files are written to temporary files first and renamed over their destinations
    only when both are complete; the layout records the SHA-256 of the model file's
    bytes and its own checksum, so that :func:`load_model` refuses a pair that does not
    belong together.

    A text model was fitted on the word counts, a sparse matrix without column names:
    it is saved (a shallow copy; ``clf`` itself is left as it is) with its vocabulary in
    column order as ``feature_names_in_``, scikit-learn's attribute for the names of the
    input columns, which :func:`bayesnb.load` restores. The model file then says which
    word each column counts, and :func:`_check_spec_fits_model` refuses a layout whose
    vocabulary differs (a recomputed checksum does not make a permuted vocabulary match).
    The documented way to have scikit-learn record the names, fitting on a DataFrame of
    sparse columns, costs seconds per call on a vocabulary of 50,000 words where the
    sparse matrix costs milliseconds; the fitted numbers are those of the matrix either way.
    Loaded with :func:`bayesnb.load`, such a model warns, as scikit-learn does for a model
    fitted with names, when it is given a matrix without them; ``bayesnb predict`` checks
    the names and then drops them (:func:`load_model`).
    """
    path = Path(path)
    check_model_outputs(path, inputs=inputs, force=force)
    layout = spec_path(path)
    if spec["kind"] == "text":
        import copy

        import numpy as np

        clf = copy.copy(clf)
        clf.feature_names_in_ = np.asarray(spec["vocabulary"], dtype=object)
    try:
        with _atomic.staged_files(path, layout) as (model_tmp, layout_tmp):
            clf.save(model_tmp)
            spec = {**spec, "model_sha256": _file_sha256(model_tmp)}
            spec["checksum"] = _spec_checksum(spec)
            layout_tmp.write_text(json.dumps(spec, indent=1, ensure_ascii=False), encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None


def _unique_strings(value):
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _check_spec(spec, clf, layout):
    """Refuse a column layout whose schema is wrong or that does not fit the model."""

    def bad(what):
        raise DataError(f"{layout}: invalid column layout: {what}")

    expected = {
        "format": str, "format_version": int, "bayesnb_version": str, "header": bool, "label": str,
        "columns": list, "kind": str, "family": str, "model_sha256": str, "checksum": str,
    }
    for key, kind in expected.items():
        if key not in spec:
            bad(f"no {key!r} entry")
        if not isinstance(spec[key], kind) or (kind is int and isinstance(spec[key], bool)):
            bad(f"{key!r} must be a {kind.__name__}, got {type(spec[key]).__name__}")
    if spec.get("sep") is not None and not (isinstance(spec["sep"], str) and len(spec["sep"]) == 1):
        bad(f"'sep' must be one character, got {spec['sep']!r}")
    if not _unique_strings(spec["columns"]):
        bad("'columns' must be a list of distinct names")
    if spec.get("missing", "error") not in ("error", "ignore"):
        bad(f"'missing' must be 'error' or 'ignore', got {spec['missing']!r}")
    if not _unique_strings(spec.get("na_values", [])):
        bad("'na_values' must be a list of distinct strings")
    if spec["family"] not in family_choices() or spec["family"] == "auto":
        bad(f"unknown family {spec['family']!r}")
    n_features = getattr(clf, "n_features_in_", None)
    if spec["kind"] == "text":
        if not isinstance(spec.get("text"), str):
            bad("'text' must name a column")
        vocabulary = spec.get("vocabulary")
        if not _unique_strings(vocabulary):
            bad("'vocabulary' must be a list of distinct words")
        if len(vocabulary) != n_features:
            bad(f"{len(vocabulary)} words for a model of {n_features} features")
    elif spec["kind"] == "tabular":
        features, types, categories = spec.get("features"), spec.get("types"), spec.get("categories")
        if not _unique_strings(features) or not features:
            bad("'features' must be a non-empty list of distinct column names")
        if len(features) != n_features:
            bad(f"{len(features)} feature columns for a model of {n_features} features")
        if not isinstance(types, dict) or set(types) != set(features) or not set(types.values()) <= set(_COLUMN_TYPES):
            bad("'types' must give 'numeric' or 'categorical' for every feature column")
        nominal = {c for c, t in types.items() if t != "numeric"}
        if not isinstance(categories, dict) or set(categories) != nominal:
            bad("'categories' must list the categories of every categorical column")
        if not all(_unique_strings(v) for v in categories.values()):
            bad("the categories of a column must be distinct strings")
    else:
        bad(f"unknown kind {spec['kind']!r}")
    _check_spec_fits_model(spec, clf, bad)


def _check_spec_fits_model(spec, clf, bad):
    """Refuse a layout that says other than its model about the family, missing values or categories.

    The layout's checksum detects an edit, not a layout rewritten with its checksum
    recomputed; what the model file itself records is checked here: the family (and its
    fixed parameters), the missing-value policy, which columns are categories (a code
    read as a number, or a number as a code, would be a silent wrong answer), how
    many categories each has (one category fewer would read a new value as the code of
    a fitted category), the names and order of the feature columns and each categorical
    column's labels in code order (fitted on labels by :func:`model_input`, the model
    records them: a permuted list would read one label as another's code).
    """
    import numpy as np

    family = getattr(getattr(clf, "family_", None), "name", None)
    if spec["family"] == "mixed":
        expected, params = "product", {}
    else:
        fam, params = resolve_family(spec["family"])
        expected = fam.name
    if family != expected:
        bad(f"family {spec['family']!r}, but the model is of family {family!r}")
    model_params = clf.get_params(deep=False)
    for key, value in params.items():
        if model_params.get(key) != value:
            bad(f"family {spec['family']!r} has {key}={value!r}, the model {key}={model_params.get(key)!r}")
    if spec.get("missing", "error") != model_params.get("missing", "error"):
        bad(f"missing={spec.get('missing', 'error')!r}, but the model was fitted with missing={model_params.get('missing')!r}")
    if spec["kind"] == "text":
        _check_vocabulary_fits_model(spec["vocabulary"], clf, bad)
        return
    features, types = spec["features"], spec["types"]
    names = getattr(clf, "feature_names_in_", None)
    names = None if names is None else [str(v) for v in names]
    if names != list(features):
        bad(f"feature columns {_shown(features)}, but the model was fitted on {_shown(names or [])}")
    # (estimator, its columns) of each block: the model itself, or a MixedNB's blocks.
    blocks = getattr(clf, "estimators_", None)
    blocks = [(est, np.asarray(idx)) for _, est, idx in blocks] if blocks is not None else [(clf, np.arange(len(features)))]
    for est, idx in blocks:
        codes = getattr(getattr(est, "family_", None), "support", None) == "codes"
        n_categories = np.asarray(getattr(est, "n_categories_", []))
        for k, j in enumerate(idx.tolist()):
            if not 0 <= j < len(features):
                bad(f"the model has no feature {j}")
            name = features[j]
            # A layout's column type is "numeric" or "categorical" (_COLUMN_TYPES), a
            # word of the file format, not a family: the family's support decides.
            if (types[name] != "numeric") != codes:
                bad(
                    f"column {name!r} is {types[name]}, but the model's feature {j} is "
                    f"{'categorical' if codes else 'numeric'}"
                )
            if codes and (k >= n_categories.size or int(n_categories[k]) != len(spec["categories"][name])):
                shown = int(n_categories[k]) if k < n_categories.size else "no"
                bad(
                    f"column {name!r} has {len(spec['categories'][name])} categories, the model's feature {j} "
                    f"{shown}"
                )
    # The model was fitted on these columns by name and on their category labels
    # (model_input): it records both, and a layout that reorders the columns or the
    # labels of a column (same count, checksum recomputed) would encode a value as the
    # code of another.
    learned = getattr(clf, "categories_", None) or {}
    for j, name in enumerate(features):
        if types[name] == "numeric":
            continue
        model_labels = [str(v) for v in learned.get(j, ())]
        if model_labels != list(spec["categories"][name]):
            bad(
                f"column {name!r} lists its categories as {_shown(spec['categories'][name])}, but the model "
                f"learned {_shown(model_labels)} in code order: each label would be read as another's code"
            )


def _check_vocabulary_fits_model(vocabulary, clf, bad):
    """Refuse a text layout whose vocabulary is not the model's: the same words in the same order.

    :func:`save_model` writes a text model with its vocabulary in column order as
    ``feature_names_in_``; predict counts each word in the column the layout gives it, so
    a layout whose words were permuted (checksum recomputed) would count one word in
    another's column without a trace. One pass over the words, naming the first column
    that differs.
    """
    names = getattr(clf, "feature_names_in_", None)
    if names is None:
        bad(
            "the model file does not record its vocabulary (feature_names_in_), which 'bayesnb fit' "
            "saves with every text model: the layout's words cannot be checked; fit the model again"
        )
    names = names.tolist() if hasattr(names, "tolist") else list(names)
    n_features = getattr(clf, "n_features_in_", None)
    if len(names) != n_features:
        bad(f"the model's vocabulary has {len(names)} words for {n_features} features")
    if len(names) != len(vocabulary):
        bad(f"{len(vocabulary)} words, but the model's vocabulary has {len(names)}")
    j = next((j for j, (word, name) in enumerate(zip(vocabulary, names)) if word != name), None)
    if j is not None:
        bad(
            f"the vocabulary puts the word {vocabulary[j]!r} in column {j}, but the model's column {j} "
            f"counts the word {names[j]!r}: each word would be counted as another"
        )


def load_model(path):
    """The estimator (``bayesnb.load``) and the column layout saved by :func:`save_model`.

    A text model is returned as ``bayesnb fit`` held it, without ``feature_names_in_``:
    its vocabulary has been checked word by word against the layout's
    (:func:`_check_vocabulary_fits_model`), and predict counts the words of the layout's
    vocabulary in its order (:func:`design`), a sparse matrix without column names, on
    which scikit-learn's validation would otherwise warn at every call.
    """
    # bayesnb.load, not bayesnb.io.persistence.load: the front imports the estimator
    # modules whose import fills the table of classes a model file may name.
    from bayesnb import load

    path = Path(path)
    if not path.exists():
        raise DataError(f"no such file: {path}")
    if not path.is_file():
        raise DataError(f"not a regular file: {path}")
    layout = spec_path(path)
    if not layout.is_file():
        raise DataError(f"{layout} not found: the column layout that 'bayesnb fit' saves next to the model")
    if layout.stat().st_size > _MAX_SPEC_BYTES:
        raise DataError(f"{layout}: larger than {_MAX_SPEC_BYTES:,} bytes, not a column layout 'bayesnb fit' writes")
    try:
        spec = json.loads(layout.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DataError(f"{layout}: not a bayesnb column layout ({' '.join(str(exc).split())[:200]})") from None
    if not isinstance(spec, dict) or spec.get("format") != _SPEC_FORMAT:
        raise DataError(f"{layout}: not a bayesnb column layout")
    version = spec.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > _SPEC_VERSION:
        raise DataError(f"{layout}: format {version!r} is not one this bayesnb reads")
    if version < _SPEC_VERSION:
        raise DataError(
            f"{layout}: written by an older bayesnb, whose model file does not bind the layout (its hash, "
            "column names, category labels and vocabulary); fit the model again"
        )
    if spec.get("checksum") != _spec_checksum(spec):
        raise DataError(f"{layout}: checksum mismatch: the column layout was modified or corrupted after it was written")
    try:
        clf = load(path)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise DataError(f"{path}: cannot load the model: {' '.join(str(exc).split())}") from None
    try:
        digest = _file_sha256(path)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    if spec.get("model_sha256") != digest:
        raise DataError(
            f"{layout} belongs to another model than {path} (the model's SHA-256 differs from the one "
            "the layout records): save both with 'bayesnb fit' again"
        )
    _check_spec(spec, clf, layout)
    if spec["kind"] == "text":
        del clf.feature_names_in_  # checked above; the CSR input has no names
    return clf, spec
