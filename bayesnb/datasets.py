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

import numpy as np

__all__ = [
    "load_digits_counts",
    "read_labelled_text",
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
