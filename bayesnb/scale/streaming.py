r"""Out-of-core fits: statistics accumulated over a stream of chunks.

:func:`fit_stream` fits an estimator from any iterable of ``(X, y)`` or
``(X, y, sample_weight)`` chunks while holding only one chunk and the running
sufficient statistics in memory: each chunk is summarised by the estimator's own hooks
and merged into the total (:mod:`bayesnb.estimators._shards`, the mechanism
:mod:`bayesnb.scale.distributed` uses for Dask partitions), and the posterior is built once at
the end. The result equals ``estimator.fit`` on all the rows at once, up to
floating-point summation order. Labels need not be known in advance (a chunk's labels
are merged into the running set); neither need the categories of
:class:`~bayesnb.CategoricalNB` features or of non-numeric :class:`~bayesnb.MixedNB`
columns.

Two sources are provided: :func:`csv_chunks` (a CSV file read in chunks with pandas) and
:func:`text_chunks` (a directory of labelled text files vectorised with scikit-learn's
``HashingVectorizer``, which needs no vocabulary pass).

Examples
--------
>>> import numpy as np
>>> from bayesnb import MultinomialNB
>>> from bayesnb.scale.streaming import fit_stream
>>> rng = np.random.default_rng(0)
>>> X = rng.poisson(1.0, size=(300, 4)); y = rng.integers(0, 2, 300)
>>> chunks = ((X[i : i + 100], y[i : i + 100]) for i in range(0, 300, 100))
>>> clf = fit_stream(MultinomialNB(), chunks, progress=False)
>>> bool(np.allclose(clf.posterior_.concentration, MultinomialNB().fit(X, y).posterior_.concentration))
True
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from bayesnb.estimators import _shards

__all__ = ["fit_stream", "ChunkSource", "csv_chunks", "text_chunks"]


class ChunkSource:
    """An iterable of ``(X, y[, sample_weight])`` chunks that may know its size.

    Parameters
    ----------
    make : callable
        Returns a fresh iterator of chunks (so the source can be iterated again).
    total : int, optional
        Number of rows over all chunks, if known (sizes the progress bar).
    classes : ndarray, optional
        The labels, if the source knows them without reading the data.
    description : str, optional
        Shown in the progress bar.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> from bayesnb.scale.streaming import ChunkSource, fit_stream
    >>> def batches():
    ...     rng = np.random.default_rng(0)
    ...     for _ in range(3):
    ...         yield rng.poisson(1.0, size=(50, 4)), rng.integers(0, 2, 50)
    >>> source = ChunkSource(batches, total=150, description="three batches")
    >>> float(fit_stream(MultinomialNB(), source, progress=False).stats_.class_count.sum())
    150.0
    """

    def __init__(self, make, total=None, classes=None, description=None):
        self._make = make
        self.total = total
        self.classes = classes
        self.description = description

    def __iter__(self):
        return iter(self._make())


# ----------------------------------------------------------------------------- progress


class _StderrBar:
    """A one-line progress bar on stderr, for when tqdm is not installed."""

    def __init__(self, total, desc, stream):
        self.total, self.desc, self.stream = total, desc, stream
        self.n = 0
        self.start = time.perf_counter()
        self._last = 0.0

    def update(self, k):
        self.n += k
        now = time.perf_counter()
        if now - self._last >= 0.2:
            self._last = now
            self._draw(now)

    def _draw(self, now):
        rate = self.n / max(now - self.start, 1e-9)
        if self.total:
            done = min(self.n / self.total, 1.0)
            bar = "#" * int(30 * done) + "-" * (30 - int(30 * done))
            text = f"\r{self.desc}: [{bar}] {self.n:,}/{self.total:,} rows ({rate:,.0f} rows/s)"
        else:
            text = f"\r{self.desc}: {self.n:,} rows ({rate:,.0f} rows/s)"
        self.stream.write(text)
        self.stream.flush()

    def close(self):
        self._draw(time.perf_counter())
        self.stream.write("\n")
        self.stream.flush()


class _NoBar:
    def update(self, k):
        pass

    def close(self):
        pass


def _progress_bar(progress, total, desc):
    stream = sys.stderr
    if progress is None:
        isatty = getattr(stream, "isatty", None)
        progress = bool(isatty and isatty())
    if not progress:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _StderrBar(total, desc, stream)
    return tqdm(total=total, desc=desc, unit="rows", unit_scale=True, file=stream)


# ----------------------------------------------------------------------------- fit


def fit_stream(estimator, chunks, *, classes=None, total=None, progress=None):
    """Fit ``estimator`` from an iterable of chunks, one chunk in memory at a time.

    Parameters
    ----------
    estimator : bayesnb estimator
        Fitted in place (earlier fitted state is discarded, as ``fit`` does) and returned.
    chunks : iterable of (X, y) or (X, y, sample_weight)
        Each ``X`` anything the estimator's ``fit`` takes (array, CSR matrix,
        DataFrame); all chunks with the same columns.
    classes : array-like, optional
        All labels (default: those found, sorted; or the source's own ``classes``).
    total : int, optional
        Number of rows over all chunks, for the progress bar (default: the source's
        ``total`` if it has one).
    progress : bool or None, default=None
        Show a progress bar on stderr (tqdm's if installed, else a plain one). ``None``:
        only when stderr is a terminal.

    Returns
    -------
    estimator

    Raises
    ------
    TypeError
        If a chunk is not an ``(X, y)`` or ``(X, y, sample_weight)`` tuple.
    ValueError
        If the chunks hold no rows, or disagree (number of features, labels outside
        ``classes``).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import CategoricalNB
    >>> from bayesnb.scale.streaming import fit_stream
    >>> X = np.array([[0, 1], [1, 1], [2, 0], [0, 0], [1, 2], [2, 2]]); y = np.array(["a", "a", "b", "b", "c", "a"])
    >>> chunks = [(X[:2], y[:2]), (X[2:4], y[2:4]), (X[4:], y[4:])]  # label "c" first seen in the last chunk
    >>> clf = fit_stream(CategoricalNB(), chunks, progress=False)
    >>> clf.classes_.tolist()
    ['a', 'b', 'c']
    >>> bool(np.allclose(clf.predict_proba(X), CategoricalNB().fit(X, y).predict_proba(X)))
    True
    """
    from sklearn.base import clone

    if classes is None:
        classes = getattr(chunks, "classes", None)
    classes = _shards.check_classes(classes)
    if total is None:
        total = getattr(chunks, "total", None)
    desc = getattr(chunks, "description", None) or f"fit {type(estimator).__name__}"
    template = clone(estimator)
    bar = _progress_bar(progress, total, desc)
    running = None
    try:
        for i, chunk in enumerate(chunks):
            if not isinstance(chunk, (tuple, list)) or len(chunk) not in (2, 3):
                raise TypeError(
                    f"chunk {i} must be an (X, y) or (X, y, sample_weight) tuple, got {type(chunk).__name__}"
                )
            X, y, w = (tuple(chunk) + (None,))[:3]
            y = None if y is None else np.asarray(y)
            w = None if w is None else np.asarray(w)
            try:
                shard = _shards.compute(template, X, y, w, classes)
                running = _shards.merge(running, shard)
            except (ValueError, TypeError) as err:
                raise type(err)(f"chunk {i}: {err}") from err
            bar.update(0 if shard is None else _shards.n_rows(X))
    finally:
        bar.close()
    if running is None:
        raise ValueError("the stream holds no rows: nothing to fit")
    if classes is not None:
        running = _shards._reindex(running, classes)
    return _shards.finish(estimator, running)


# ----------------------------------------------------------------------------- sources


def csv_chunks(path, label, *, weight=None, chunksize=10_000, **read_csv_kwargs):
    """Chunks of a CSV file read with ``pandas.read_csv(..., chunksize=chunksize)``.

    Parameters
    ----------
    path : str or path-like
    label : str
        Column holding the class labels.
    weight : str, optional
        Column holding the sample weights.
    chunksize : int, default=10_000
        Rows per chunk.
    **read_csv_kwargs
        Passed to ``pandas.read_csv`` (``usecols``, ``dtype``, ``sep``, ...). Give
        ``dtype`` for columns whose type must not depend on the chunk (e.g. an integer
        column with missing values in some chunks only).

    Returns
    -------
    ChunkSource
        Yields ``(X, y)`` or ``(X, y, w)``: ``X`` the DataFrame of the other columns.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from bayesnb import GaussianNB
    >>> from bayesnb.scale.streaming import csv_chunks, fit_stream
    >>> path = os.path.join(tempfile.mkdtemp(), "data.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("height,weight,label\\n" + "\\n".join(f"{1.6 + 0.01 * i},{60 + i},{'ab'[i % 2]}" for i in range(30)))
    >>> clf = fit_stream(GaussianNB(), csv_chunks(path, "label", chunksize=8), progress=False)
    >>> clf.feature_names_in_.tolist(), clf.classes_.tolist()
    (['height', 'weight'], ['a', 'b'])
    """
    import pandas as pd

    if not isinstance(chunksize, (int, np.integer)) or chunksize < 1:
        raise ValueError(f"chunksize must be a positive integer, got {chunksize!r}")
    path = os.fspath(path)

    def make():
        with pd.read_csv(path, chunksize=int(chunksize), **read_csv_kwargs) as reader:
            for frame in reader:
                if label not in frame.columns:
                    raise ValueError(f"label column {label!r} not in {path} (columns: {list(frame.columns)})")
                y = frame.pop(label).to_numpy()
                if weight is None:
                    yield frame, y
                else:
                    if weight not in frame.columns:
                        raise ValueError(f"weight column {weight!r} not in {path}")
                    yield frame, y, frame.pop(weight).to_numpy(dtype=np.float64)

    return ChunkSource(make, description=f"fit {Path(path).name}")


def text_chunks(directory, *, vectorizer=None, chunksize=1000, encoding="utf-8", decode_error="replace"):
    """Chunks of a directory of labelled text files, vectorised by hashing.

    The layout is scikit-learn's ``load_files``: ``directory/<label>/<file>``, one
    document per file, the label the name of its sub-directory. Files are read
    ``chunksize`` at a time, in sorted order, and vectorised with ``vectorizer``
    (stateless: it is never fitted, so every chunk maps words to the same columns).

    Parameters
    ----------
    directory : str or path-like
    vectorizer : sklearn HashingVectorizer, optional
        Default ``HashingVectorizer(alternate_sign=False, norm=None)``: non-negative word
        counts over 2**20 columns, as :class:`~bayesnb.MultinomialNB` needs.
    chunksize : int, default=1000
        Files per chunk.
    encoding, decode_error : str
        How to decode the files' bytes (``bytes.decode``'s arguments).

    Returns
    -------
    ChunkSource
        Yields ``(X, y)`` with ``X`` a CSR matrix; ``total`` is the number of files and
        ``classes`` the sub-directory names.

    Examples
    --------
    >>> import os, tempfile
    >>> from bayesnb import MultinomialNB
    >>> from bayesnb.scale.streaming import fit_stream, text_chunks
    >>> root = tempfile.mkdtemp()
    >>> for label, texts in {"ham": ["see you at lunch", "call me later"], "spam": ["win a free prize", "free entry win"]}.items():
    ...     os.mkdir(os.path.join(root, label))
    ...     for i, text in enumerate(texts):
    ...         with open(os.path.join(root, label, f"{i}.txt"), "w") as f:
    ...             _ = f.write(text)
    >>> source = text_chunks(root, chunksize=3)
    >>> source.total, source.classes.tolist()
    (4, ['ham', 'spam'])
    >>> clf = fit_stream(MultinomialNB(), source, progress=False)
    >>> from sklearn.feature_extraction.text import HashingVectorizer
    >>> clf.predict(HashingVectorizer(alternate_sign=False, norm=None).transform(["free prize"])).tolist()
    ['spam']
    """
    from sklearn.feature_extraction.text import HashingVectorizer

    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"text_chunks: {root} is not a directory")
    if not isinstance(chunksize, (int, np.integer)) or chunksize < 1:
        raise ValueError(f"chunksize must be a positive integer, got {chunksize!r}")
    if vectorizer is None:
        vectorizer = HashingVectorizer(alternate_sign=False, norm=None)
    if not hasattr(vectorizer, "transform") or hasattr(vectorizer, "vocabulary"):
        raise TypeError("vectorizer must be a stateless vectoriser such as HashingVectorizer")
    labels = sorted(p.name for p in root.iterdir() if p.is_dir())
    files = [(p, lab) for lab in labels for p in sorted((root / lab).iterdir()) if p.is_file()]
    if not files:
        raise ValueError(f"text_chunks: no files under {root}/<label>/")

    def make():
        for start in range(0, len(files), chunksize):
            part = files[start : start + chunksize]
            texts = [p.read_bytes().decode(encoding, errors=decode_error) for p, _ in part]
            yield vectorizer.transform(texts).tocsr(), np.array([lab for _, lab in part])

    return ChunkSource(make, total=len(files), classes=np.array(labels), description=f"fit {root.name}")
