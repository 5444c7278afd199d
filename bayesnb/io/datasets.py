"""Data loaders.

The embedded default is scikit-learn's bundled ``load_digits`` (installed with the
dependencies, no download). Readers take a user's labelled files and the public corpora
(SMS Spam Collection, 20 Newsgroups bydate, UCI categorical tables) in their original
formats, read in place.
"""

from __future__ import annotations

import csv
import tarfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = [
    "Table",
    "load_digits_counts",
    "read_labelled_text",
    "read_table",
    "read_20newsgroups_bydate",
    "read_categorical_table",
]


def load_digits_counts():
    """scikit-learn's bundled 8x8 digits as pixel counts.

    Returns
    -------
    X : int ndarray of shape (1797, 64)
        Pixel intensities 0..16 (counts for the multinomial, categories for the
        categorical family, binarised for Bernoulli).
    y : int ndarray of shape (1797,)

    Examples
    --------
    >>> X, y = load_digits_counts()
    >>> X.shape, int(X.max())
    ((1797, 64), 16)
    """
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.int64), d.target.astype(np.int64)


def _require_file(path):
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if not path.is_file():
        raise ValueError(f"not a regular file: {path}")
    return path


def read_labelled_text(path, sep="\t", encoding="utf-8"):
    """Read a file of ``label<sep>text`` lines (e.g. the SMS Spam Collection).

    Parameters
    ----------
    path : str or Path
    sep : str, default TAB
    encoding : str, default "utf-8"

    Returns
    -------
    texts : list of str
    labels : ndarray of str, shape (n_documents,)

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If a non-empty line has no separator or an empty label, or the file is empty;
        the message names the line.

    Examples
    --------
    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
    >>> _ = f.write("ham\\thello there\\nspam\\tWIN cash now\\n"); f.close()
    >>> texts, labels = read_labelled_text(f.name); os.unlink(f.name)
    >>> labels.tolist(), texts[1]
    (['ham', 'spam'], 'WIN cash now')
    """
    path = _require_file(path)
    texts, labels = [], []
    try:
        lines = path.read_text(encoding=encoding).splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not {encoding} text: {exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        label, found, text = line.partition(sep)
        if not found or not label.strip():
            raise ValueError(f"{path}, line {number}: expected 'label{sep!r}text', got {line[:60]!r}")
        labels.append(label.strip())
        texts.append(text)
    if not labels:
        raise ValueError(f"{path} holds no labelled lines")
    return texts, np.asarray(labels)


def read_20newsgroups_bydate(path, subset="train", categories=None):
    """Read the 20 Newsgroups "bydate" archive in place (no extraction).

    Parameters
    ----------
    path : str or Path
        ``20news-bydate.tar.gz``.
    subset : {"train", "test"}
    categories : list of str, optional
        Newsgroup names to keep (all 20 by default).

    Returns
    -------
    texts : list of str
        Raw posts decoded as Latin-1 (as scikit-learn does).
    labels : ndarray of str
        Newsgroup names. Documents are in archive order sorted by (group, file id).
    """
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    path = _require_file(path)
    prefix = f"20news-bydate-{subset}/"
    keep = None if categories is None else set(categories)
    docs = []
    with tarfile.open(path, "r:gz") as tar:
        for member in tar:
            if not member.isfile():
                continue
            name = member.name.lstrip("./")
            if not name.startswith(prefix):
                continue
            parts = name[len(prefix) :].split("/")
            if len(parts) != 2 or (keep is not None and parts[0] not in keep):
                continue
            docs.append((parts[0], int(parts[1]) if parts[1].isdigit() else parts[1], tar.extractfile(member).read()))
    docs.sort(key=lambda d: (d[0], str(d[1]).zfill(12)))
    return [d[2].decode("latin-1") for d in docs], np.asarray([d[0] for d in docs])


def read_categorical_table(path, label_column=0, sep=","):
    """Read a headerless table of categorical codes (UCI mushroom, car evaluation, ...).

    A missing-value token (such as ``?`` in the mushroom data) is kept as a category of
    its own.

    Parameters
    ----------
    path : str or Path
    label_column : int
        Column holding the class (negative counts from the end).
    sep : str

    Returns
    -------
    X : ndarray of str, shape (n_rows, n_columns - 1)
    y : ndarray of str, shape (n_rows,)
    """
    path = _require_file(path)
    with path.open(newline="") as fh:
        rows = [r for r in csv.reader(fh, delimiter=sep) if r]
    if not rows:
        raise ValueError(f"{path} holds no rows")
    width = len(rows[0])
    for number, row in enumerate(rows, start=1):
        if len(row) != width:
            raise ValueError(f"{path}, row {number}: {len(row)} fields, expected {width}")
    table = np.asarray(rows, dtype=str)
    y = table[:, label_column]
    X = np.delete(table, label_column % width, axis=1)
    return X, y


class Table(NamedTuple):
    """A delimited text file read as columns of strings.

    Attributes
    ----------
    path : str
    columns : list of str
        Column names (from the header, or "0", "1", ... without one).
    values : list of ndarray of str
        One array per column, shape (n_rows,), values stripped of surrounding blanks.
    lines : int ndarray of shape (n_rows,)
        Line number (1-based) of each row in the file, for error messages.
    """

    path: str
    columns: list
    values: list
    lines: np.ndarray

    @property
    def n_rows(self):
        return int(self.lines.shape[0])

    def index(self, column):
        """Position of a column given by name, or by 0-based position (int or digits)."""
        if isinstance(column, str) and column in self.columns:
            return self.columns.index(column)
        try:
            position = int(column)
        except (TypeError, ValueError):
            raise ValueError(f"{self.path}: no column named {column!r}; columns are {self.columns}") from None
        if not -len(self.columns) <= position < len(self.columns):
            raise ValueError(
                f"{self.path}: column {position} is out of range; the file has {len(self.columns)} columns"
            )
        return position % len(self.columns)

    def column(self, column):
        """The values of one column (see :meth:`index`)."""
        return self.values[self.index(column)]


def _sniff_separator(path, first_line):
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".tab"):
        return "\t"
    if suffix == ".csv":
        return ","
    return "\t" if "\t" in first_line else ","


def read_table(path, *, sep=None, header=True, encoding="utf-8"):
    """Read a CSV/TSV file of labelled rows (a user's data for ``bayesnb fit``).

    Parameters
    ----------
    path : str or Path
    sep : str, optional
        Field separator; by default TAB for ``.tsv``/``.tab`` files, comma for ``.csv``,
        otherwise TAB if the first line holds one, else comma. With a comma (or any
        separator but TAB) fields may be quoted as in CSV (``"a, b"`` is one field);
        TAB-separated fields are taken as they are (the TSV convention: no quoting).
    header : bool, default True
        Whether the first non-empty line names the columns.
    encoding : str, default "utf-8"

    Returns
    -------
    Table

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If it is not text in ``encoding``, holds no rows, has duplicate or empty column
        names, or a row whose number of fields differs from the header's (the message
        names the line).

    Examples
    --------
    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    >>> _ = f.write('label,text\\nspam,"WIN cash, now"\\nham,see you\\n'); f.close()
    >>> t = read_table(f.name); os.unlink(f.name)
    >>> t.columns, t.column("text").tolist(), t.lines.tolist()
    (['label', 'text'], ['WIN cash, now', 'see you'], [2, 3])
    """
    path = _require_file(path)
    try:
        text = path.read_text(encoding=encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not {encoding} text: {exc}") from None
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise ValueError(f"{path} is empty")
    if sep is None:
        sep = _sniff_separator(path, first)
    if not isinstance(sep, str) or len(sep) != 1:
        raise ValueError(f"sep must be a single character, got {sep!r}")
    rows, numbers = [], []
    # Tab-separated files follow the TSV convention of no quoting (a text may hold a
    # quote character); other separators follow CSV's, where a quoted field may hold it.
    reader = csv.reader(lines, delimiter=sep, quoting=csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL)
    try:
        for row in reader:
            if not any(field.strip() for field in row):
                continue
            rows.append([field.strip() for field in row])
            numbers.append(reader.line_num)
    except csv.Error as exc:
        raise ValueError(f"{path}, line {reader.line_num}: {exc}") from None
    if header:
        names, rows, numbers = rows[0], rows[1:], numbers[1:]
        if any(not n for n in names):
            raise ValueError(f"{path}, line {numbers[0] - 1 if numbers else 1}: the header has an empty column name")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"{path}: duplicate column names in the header: {dupes}")
    else:
        names = [str(j) for j in range(len(rows[0]))]
    if not rows:
        raise ValueError(f"{path} holds a header but no rows")
    width = len(names)
    for number, row in zip(numbers, rows):
        if len(row) != width:
            sep_name = "TAB" if sep == "\t" else repr(sep)
            raise ValueError(
                f"{path}, line {number}: {len(row)} fields, expected {width} (separator {sep_name})"
            )
    values = [np.asarray(col, dtype=str) for col in zip(*rows)]
    return Table(str(path), list(names), values, np.asarray(numbers, dtype=np.int64))
