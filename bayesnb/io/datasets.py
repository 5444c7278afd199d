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
    "read_arff",
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


def read_labelled_text(
    path, sep="\t", encoding="utf-8", *, max_rows=None, max_bytes=None, allow_unlabelled=False, max_line_chars=None
):
    """Read a file of ``label<sep>text`` lines (e.g. the SMS Spam Collection).

    A line whose label field is empty (it starts with the separator, ``<sep>text``) is
    an *unlabelled* document. By default it is refused; with ``allow_unlabelled=True``
    it is kept, in its place, with the label ``""`` (no label is the empty string, so
    it can never be mistaken for a class; the caller separates those rows).

    Parameters
    ----------
    path : str or Path
    sep : str, default TAB
    encoding : str, default "utf-8"
    max_rows, max_bytes, max_line_chars : int, optional
        Refuse a file of more labelled lines, of more bytes (checked before reading) or
        with a longer line (checked while reading it); defaults ``MAX_ROWS``,
        ``MAX_BYTES`` and ``MAX_LINE_CHARS``, as for :func:`read_table`.
    allow_unlabelled : bool, default False
        Keep lines with an empty label field as unlabelled documents (label ``""``)
        instead of refusing them.

    Returns
    -------
    texts : list of str
    labels : ndarray of str, shape (n_documents,)
        ``""`` for an unlabelled document (only with ``allow_unlabelled``).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If a non-empty line has no separator, or an empty label (without
        ``allow_unlabelled``), or the file holds no labelled line; the message names
        the line.

    Examples
    --------
    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
    >>> _ = f.write("ham\\thello there\\nspam\\tWIN cash now\\n"); f.close()
    >>> texts, labels = read_labelled_text(f.name); os.unlink(f.name)
    >>> labels.tolist(), texts[1]
    (['ham', 'spam'], 'WIN cash now')

    Unlabelled lines, kept on request:

    >>> f = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
    >>> _ = f.write("ham\\thello\\n\\tno label here\\nspam\\tcash\\n"); f.close()
    >>> texts, labels = read_labelled_text(f.name, allow_unlabelled=True); os.unlink(f.name)
    >>> labels.tolist()
    ['ham', '', 'spam']
    """
    import codecs

    path = _require_file(path)
    max_rows = MAX_ROWS if max_rows is None else max_rows
    _check_size(path, MAX_BYTES if max_bytes is None else max_bytes)
    texts, labels = [], []
    if codecs.lookup(encoding).name == "utf-8":
        encoding = "utf-8-sig"  # a byte order mark is not part of the first label
    try:
        # Lines end at \n, \r\n or \r only (universal newlines): str.splitlines would also
        # split a text at U+2028, U+0085, \x0c, ... and fabricate documents.
        with path.open(encoding=encoding, newline=None) as fh:
            lines = _bounded_lines(fh, path, MAX_LINE_CHARS if max_line_chars is None else max_line_chars)
            for number, line in enumerate(lines, start=1):
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                label, found, text = line.partition(sep)
                if not found or not (label.strip() or allow_unlabelled):
                    raise ValueError(f"{path}, line {number}: expected 'label{sep!r}text', got {line[:60]!r}")
                if len(labels) == max_rows:
                    raise ValueError(f"{path}, line {number}: more than {max_rows:,} rows, the limit (read_table's max_rows)")
                labels.append(label.strip())
                texts.append(text)
    except UnicodeDecodeError:
        raise _not_text(path, encoding) from None
    if not any(labels):
        raise ValueError(f"{path} holds no labelled lines")
    return texts, _column_array(labels)


def _check_size(path, max_bytes):
    """Refuse a file of more than ``max_bytes`` bytes before reading it."""
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(
            f"{path}: {size:,} bytes, more than the limit of {max_bytes:,} (read_table's max_bytes; "
            "the rows are held in memory as text)"
        )


def _bounded_lines(fh, path, max_line_chars):
    """The lines of a text file, each read up to ``max_line_chars`` characters and no more.

    A file of one enormous line (no line break in gigabytes) is refused once the bound is
    passed, without reading the rest of the line into memory (iterating the file object
    would build the whole line first).
    """
    number = 0
    while True:
        line = fh.readline(max_line_chars + 1)
        if not line:
            return
        number += 1
        if len(line) > max_line_chars:
            raise ValueError(
                f"{path}, line {number}: longer than {max_line_chars:,} characters, the limit "
                "(read_table's max_line_chars; a file without line breaks is not a table of rows)"
            )
        yield line


def _not_text(path, encoding):
    r"""``ValueError`` naming the line (and byte) of the first bytes of ``path`` not in ``encoding``.

    The decoder's own message gives a position within the block it was decoding, not in
    the file. The file (already bounded by ``max_bytes``) is read again in blocks, line
    breaks (``\n``, ``\r\n``, ``\r``) counted up to the first undecodable byte.
    """
    import codecs

    name = codecs.lookup(encoding).name
    base = "utf-8" if name == "utf-8-sig" else name
    shown = base.upper() if base.startswith("utf") else base
    if "\n".encode(base) != b"\n":  # not ASCII-compatible (UTF-16, ...): no byte line breaks to count
        return ValueError(f"{path} is not {shown} text")
    decoder = codecs.getincrementaldecoder(base)()
    lines, line_start, offset, last = 1, 0, 0, b""
    with open(path, "rb") as fh:
        while True:
            block = fh.read(2**20)
            pending = decoder.getstate()[0]
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                data = pending + block
                start = offset - len(pending)
                head = data[: exc.start]
                lines += _line_breaks(head, last)
                cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
                if cut >= 0:
                    line_start = start + cut + 1
                where = start + exc.start
                return ValueError(
                    f"{path}, line {lines}: not {shown} text (byte 0x{data[exc.start]:02x}, byte {where - line_start + 1} "
                    f"of the line): convert the file to {shown} (a Latin-1 or Windows-1252 file, for instance, "
                    f"with: iconv -f cp1252 -t {shown.lower()} FILE)"
                )
            if not block:
                return ValueError(f"{path} is not {shown} text")
            lines += _line_breaks(block, last)
            cut = max(block.rfind(b"\n"), block.rfind(b"\r"))
            if cut >= 0:
                line_start = offset + cut + 1
            offset += len(block)
            last = block[-1:]


def _line_breaks(data, before):
    r"""Line breaks in ``data`` (``\r\n`` once, also across the block boundary after ``before``)."""
    count = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return count - (1 if before == b"\r" and data[:1] == b"\n" else 0)


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


#: Default bounds of :func:`read_table` (a wider or longer input is refused with a message
#: naming the bound; pass larger values for a trusted file).
MAX_COLUMNS = 100_000
MAX_FIELD_CHARS = 2**24
#: A file is held in memory as Python strings (several times its size on disk), so its
#: size is checked before it is opened and its rows while it is read.
MAX_BYTES = 256 * 2**20
MAX_ROWS = 1_000_000
#: A line is read up to this many characters and refused beyond them (4 times the field
#: limit), so that a file of one enormous line is refused without reading it whole.
MAX_LINE_CHARS = 2**26


class Table(NamedTuple):
    """A delimited text file read as columns of strings.

    Attributes
    ----------
    path : str
    columns : list of str
        Column names (from the header, or "0", "1", ... without one).
    values : list of ndarray of str
        One array per column, shape (n_rows,), values stripped of surrounding blanks
        (``str`` objects in an object array where a fixed-width array would be more than
        8 times the column's text).
    lines : int ndarray of shape (n_rows,)
        Line number (1-based) of each row in the file, for error messages.
    positions : dict, optional
        ``{name: position}`` of the columns (built from ``columns`` when absent), so that
        looking a column up costs the same for a file of 10 or 100,000 columns.
    types : dict, optional
        ``{name: "numeric" | "nominal" | "string"}`` where the file declares the
        columns' types (ARFF); None for CSV/TSV.
    categories : dict, optional
        ``{name: [value, ...]}``, the declared values of the nominal columns (ARFF), in
        the declared order; a missing value is ``"?"`` (``ARFF_MISSING``).
    """

    path: str
    columns: list
    values: list
    lines: np.ndarray
    positions: dict | None = None
    types: dict | None = None
    categories: dict | None = None

    @property
    def n_rows(self):
        return int(self.lines.shape[0])

    def _positions(self):
        if self.positions is not None:
            return self.positions
        return {name: j for j, name in enumerate(self.columns)}

    def index(self, column):
        """Position of a column given by name, or by 0-based position (int or digits).

        A name wins over a position: in a file whose header names a column ``"0"``,
        ``index("0")`` is that column, wherever it is.
        """
        positions = self._positions()
        if isinstance(column, str) and column in positions:
            return positions[column]
        try:
            position = int(column)
        except (TypeError, ValueError):
            raise ValueError(f"{self.path}: no column named {column!r}; columns are {_shown(self.columns)}") from None
        if not -len(self.columns) <= position < len(self.columns):
            raise ValueError(
                f"{self.path}: column {position} is out of range; the file has {len(self.columns)} columns"
            )
        return position % len(self.columns)

    def column(self, column):
        """The values of one column (see :meth:`index`)."""
        return self.values[self.index(column)]

    def has(self, name):
        """Whether a column is called ``name`` (by name only)."""
        return name in self._positions()

    def named(self, name):
        """The values of the column called ``name``: by name only, never by position.

        A saved column layout names its columns; reading them by name means a file whose
        columns are called otherwise is refused instead of being read by position.
        """
        j = self._positions().get(name)
        if j is None:
            raise ValueError(f"{self.path}: no column named {name!r}; columns are {_shown(self.columns)}")
        return self.values[j]


def _shown(names, limit=20):
    names = list(names)
    return repr(names) if len(names) <= limit else f"{names[:limit]!r} and {len(names) - limit} more"


def _sniff_separator(path, first_line):
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".tab"):
        return "\t"
    if suffix == ".csv":
        return ","
    return "\t" if "\t" in first_line else ","


def _blank(row):
    # An empty line (csv gives []), one of blanks, or one of separators only (",,,", as
    # spreadsheets export an empty row): no value to read, skipped wherever it is.
    return not any(field.strip() for field in row)


def _column_array(values):
    """One column as an array of str: fixed-width, or of objects where that would be huge.

    NumPy's fixed-width strings take 4 bytes per character of the *longest* value for
    every row: one text of 2 million characters among 20,000 short ones made a 149 GiB
    array from a 2 MB file. Where the fixed width would be more than 8 times the text
    itself, the column is an object array of the same ``str`` values (memory in
    proportion to the text).
    """
    longest = max(map(len, values), default=0)
    total = sum(map(len, values))
    if longest * len(values) > 8 * total + 2**20:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return np.asarray(values, dtype=str)


def read_table(
    path,
    *,
    sep=None,
    header=True,
    encoding="utf-8",
    max_columns=MAX_COLUMNS,
    max_field_chars=MAX_FIELD_CHARS,
    max_rows=MAX_ROWS,
    max_bytes=MAX_BYTES,
    max_line_chars=MAX_LINE_CHARS,
):
    """Read a CSV/TSV file of labelled rows (a user's data for ``bayesnb fit``).

    Records are split only on ``\\n`` and ``\\r\\n`` (and a lone ``\\r``), as by the
    ``csv`` module: other Unicode line separators (U+2028, U+0085, form feed, ...)
    inside a field are text. A UTF-8 byte order mark is dropped. The file is read in one
    pass, line by line, in time linear in its size.

    Parameters
    ----------
    path : str or Path
    sep : str, optional
        Field separator; by default TAB for ``.tsv``/``.tab`` files, comma for ``.csv``,
        otherwise TAB if the first line holds one, else comma. With a comma (or any
        separator but TAB) fields may be quoted as in CSV (``"a, b"`` is one field, and
        may span lines);
        TAB-separated fields are taken as they are (the TSV convention: no quoting).
    header : bool, default True
        Whether the first non-empty line names the columns.
    encoding : str, default "utf-8"
    max_columns : int, default 100,000
        Refuse a file with more columns.
    max_field_chars : int, default 2**24
        Refuse a field longer than this (quoted fields may span lines).
    max_rows : int, default 1,000,000
        Refuse a file with more data rows (counted while reading, which stops there).
    max_bytes : int, default 256 MiB
        Refuse a larger file before reading it: the rows are held in memory as Python
        strings, several times the file's size.
    max_line_chars : int, default 2**26
        Refuse a line longer than this, reading no more of it than the bound.

    Returns
    -------
    Table

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If it is not text in ``encoding``, holds no rows, has duplicate or empty column
        names, more than ``max_columns`` columns or ``max_rows`` rows, more than
        ``max_bytes`` bytes, a field longer than ``max_field_chars``, or a row whose
        number of fields differs from the header's (the message names the line).

    Examples
    --------
    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    >>> _ = f.write('label,text\\nspam,"WIN cash, now"\\nham,see you\\n'); f.close()
    >>> t = read_table(f.name); os.unlink(f.name)
    >>> t.columns, t.column("text").tolist(), t.lines.tolist()
    (['label', 'text'], ['WIN cash, now', 'see you'], [2, 3])
    """
    import codecs
    import itertools

    path = _require_file(path)
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1):
        raise ValueError(f"sep must be a single character, got {sep!r}")
    if codecs.lookup(encoding).name == "utf-8":
        encoding = "utf-8-sig"  # drops a byte order mark, which would otherwise prefix the first name
    _check_size(path, max_bytes)
    rows, numbers = [], []
    limit_rows = max_rows + (1 if header else 0)
    previous_limit = csv.field_size_limit()
    line_num = 0
    try:
        # csv's field limit is process-wide: set for this read, restored after it.
        csv.field_size_limit(max_field_chars)
        with path.open(encoding=encoding, newline="") as fh:
            # newline="": the file object splits lines on \n, \r\n and \r only, and the
            # csv module joins the lines of a quoted field; str.splitlines would also
            # split on U+2028, U+0085, \x0c, \x1c-\x1e and fabricate rows.
            fh = _bounded_lines(fh, path, max_line_chars)
            head = []
            for line in fh:
                head.append(line)
                if line.strip():
                    break
            first = head[-1] if head and head[-1].strip() else None
            if first is None:
                raise ValueError(f"{path} is empty")
            if sep is None:
                sep = _sniff_separator(path, first)
            # Tab-separated files follow the TSV convention of no quoting (a text may hold a
            # quote character); other separators follow CSV's, where a quoted field may hold it.
            quoting = csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL
            reader = csv.reader(itertools.chain(head, fh), delimiter=sep, quoting=quoting)
            width = None
            for row in reader:
                line_num = reader.line_num
                if _blank(row):
                    continue
                if width is None:
                    width = len(row)
                    if width > max_columns:
                        raise ValueError(
                            f"{path}, line {line_num}: {width:,} columns, more than the limit of "
                            f"{max_columns:,} (read_table's max_columns)"
                        )
                elif len(row) != width:
                    sep_name = "TAB" if sep == "\t" else repr(sep)
                    raise ValueError(
                        f"{path}, line {line_num}: {len(row)} fields, expected {width} (separator {sep_name})"
                    )
                if len(rows) == limit_rows:
                    raise ValueError(
                        f"{path}, line {line_num}: more than {max_rows:,} rows, the limit (read_table's max_rows)"
                    )
                rows.append([field.strip() for field in row])
                numbers.append(line_num)
    except csv.Error as exc:
        message = str(exc)
        if "field limit" in message:
            message = (
                f"a field longer than {max_field_chars:,} characters, the limit (read_table's "
                "max_field_chars; an unbalanced quote makes the rest of the file one field)"
            )
        raise ValueError(f"{path}, line {line_num + 1}: {message}") from None
    except UnicodeDecodeError:
        raise _not_text(path, encoding) from None
    finally:
        csv.field_size_limit(previous_limit)
    if not rows:
        raise ValueError(f"{path} holds no rows")
    if header:
        names, rows, header_line, numbers = rows[0], rows[1:], numbers[0], numbers[1:]
        empty = [j for j, n in enumerate(names) if not n]
        if empty:
            raise ValueError(
                f"{path}, line {header_line}: the header has an empty column name (column {empty[0]})"
            )
        positions = {}
        dupes = set()
        for j, name in enumerate(names):
            if positions.setdefault(name, j) != j:
                dupes.add(name)
        if dupes:
            raise ValueError(f"{path}, line {header_line}: duplicate column names in the header: {_shown(sorted(dupes))}")
    else:
        names = [str(j) for j in range(len(rows[0]))]
        positions = {name: j for j, name in enumerate(names)}
    if not rows:
        raise ValueError(f"{path} holds a header but no rows")
    values = [_column_array(col) for col in zip(*rows)]
    return Table(str(path), list(names), values, np.asarray(numbers, dtype=np.int64), positions)


# ----------------------------------------------------------------------------- ARFF

#: How an ARFF file writes a missing value (unquoted).
ARFF_MISSING = "?"
_ARFF_NUMERIC = ("numeric", "real", "integer")


def _arff_split(text, path, line_num, sep=","):
    """Fields of one ARFF line: ``sep``-separated, each optionally quoted with ' or "."""
    fields, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] in "'\"":
            quote, i, chars = text[i], i + 1, []
            while i < n and text[i] != quote:
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                chars.append(text[i])
                i += 1
            if i >= n:
                raise ValueError(f"{path}, line {line_num}: unbalanced quote {quote}")
            i += 1
            # A quoted value is never the missing marker: '?' is the text "?".
            fields.append(("".join(chars), True))
            while i < n and text[i] in " \t":
                i += 1
        else:
            j = text.find(sep, i)
            j = n if j < 0 else j
            fields.append((text[i:j].strip(), False))
            i = j
        if i >= n:
            return fields
        if text[i] != sep:
            raise ValueError(f"{path}, line {line_num}: expected {sep!r} after a quoted value")
        i += 1


def _arff_attribute(rest, path, line_num):
    """``(name, type, nominal values or None)`` of the text after ``@attribute``."""
    rest = rest.strip()
    if rest[:1] in ("'", '"'):
        # A quoted name, where a backslash escapes the next character ('it\'s'), as in values.
        quote, i, chars = rest[0], 1, []
        while i < len(rest) and rest[i] != quote:
            if rest[i] == "\\" and i + 1 < len(rest):
                i += 1
            chars.append(rest[i])
            i += 1
        if i >= len(rest):
            raise ValueError(f"{path}, line {line_num}: unbalanced quote in an attribute name")
        name, kind = "".join(chars), rest[i + 1 :].strip()
    else:
        # An unquoted name ends at a blank or at the '{' of a nominal type ("color{red,blue}",
        # which Weka reads as its tokenizer does: '{' is a token of its own).
        end = next((i for i, c in enumerate(rest) if c.isspace() or c == "{"), len(rest))
        name, kind = rest[:end], rest[end:].strip()
        if not name or not kind:
            raise ValueError(f"{path}, line {line_num}: '@attribute NAME TYPE' expected")
    if not name:
        raise ValueError(f"{path}, line {line_num}: an attribute with an empty name")
    if kind.startswith("{"):
        if not kind.endswith("}"):
            raise ValueError(f"{path}, line {line_num}: a nominal type must end with '}}'")
        values = [v for v, _ in _arff_split(kind[1:-1], path, line_num)] if kind[1:-1].strip() else []
        if not values or len(set(values)) != len(values):
            raise ValueError(f"{path}, line {line_num}: attribute {name!r} needs distinct nominal values")
        return name, "nominal", values
    lowered = kind.lower()
    if lowered in _ARFF_NUMERIC:
        return name, "numeric", None
    if lowered == "string":
        return name, "string", None
    raise ValueError(
        f"{path}, line {line_num}: attribute {name!r} has type {kind!r}; bayesnb reads numeric, "
        "nominal and string attributes (convert dates to numbers)"
    )


def read_arff(
    path, *, encoding="utf-8", max_columns=MAX_COLUMNS, max_rows=MAX_ROWS, max_bytes=MAX_BYTES,
    max_line_chars=MAX_LINE_CHARS,
):
    r"""Read a (dense) ARFF file, as Weka and OpenML write them, into a :class:`Table`.

    The header's ``@attribute`` lines give the columns, their types (``numeric``,
    ``real``, ``integer``; nominal ``{a, b, ...}``; ``string``) and the nominal values,
    kept in ``Table.types`` and ``Table.categories``. ``%`` starts a comment line; names
    and values may be quoted with ``'`` or ``"``. An unquoted ``?`` is a missing value and
    is kept as the string ``"?"`` (``ARFF_MISSING``): what to do with it is the
    caller's choice. Every other value is checked against its declared type.

    Parameters
    ----------
    path : str or Path
    encoding : str, default "utf-8"
    max_columns, max_rows, max_bytes, max_line_chars : int
        Bounds as for :func:`read_table`.

    Returns
    -------
    Table

    Raises
    ------
    ValueError
        If the header is malformed, an attribute has another type (date, relational),
        the data are in sparse ARFF form, a row has the wrong number of values, a nominal
        value is not declared or a numeric one is not a number (the message names the
        line), or a bound is exceeded.

    Examples
    --------
    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".arff", delete=False)
    >>> _ = f.write("@relation r\n@attribute a {x, y}\n@attribute b numeric\n@attribute c {p, q}\n"
    ...             "@data\nx, 1.5, p\ny, ?, 'q'\n"); f.close()
    >>> t = read_arff(f.name); os.unlink(f.name)
    >>> t.columns, t.types, t.column("b").tolist(), t.categories["c"]
    (['a', 'b', 'c'], {'a': 'nominal', 'b': 'numeric', 'c': 'nominal'}, ['1.5', '?'], ['p', 'q'])
    """
    import codecs

    path = _require_file(path)
    _check_size(path, max_bytes)
    if codecs.lookup(encoding).name == "utf-8":
        encoding = "utf-8-sig"
    names, types, categories = [], {}, {}
    rows, numbers = [], []
    in_data = False
    try:
        with path.open(encoding=encoding, newline=None) as fh:
            for line_num, line in enumerate(_bounded_lines(fh, path, max_line_chars), start=1):
                text = line.strip()
                if not text or text.startswith("%"):
                    continue
                if not in_data:
                    # The keyword ends at any blank (a TAB too: "@attribute\tx\tnumeric").
                    keyword, rest = (text.split(None, 1) + [""])[:2]
                    keyword = keyword.lower()
                    if keyword == "@relation":
                        continue
                    if keyword == "@attribute":
                        name, kind, values = _arff_attribute(rest, path, line_num)
                        if name in types:
                            raise ValueError(f"{path}, line {line_num}: attribute {name!r} declared twice")
                        if len(names) == max_columns:
                            raise ValueError(f"{path}, line {line_num}: more than {max_columns:,} attributes, the limit")
                        names.append(name)
                        types[name] = kind
                        if values is not None:
                            categories[name] = values
                        continue
                    if keyword == "@data":
                        if not names:
                            raise ValueError(f"{path}, line {line_num}: @data before any @attribute")
                        in_data = True
                        continue
                    raise ValueError(f"{path}, line {line_num}: expected @relation, @attribute or @data, got {text[:40]!r}")
                if text.startswith("{"):
                    raise ValueError(f"{path}, line {line_num}: sparse ARFF rows are not supported; write the file dense")
                fields = _arff_split(text, path, line_num)
                if len(fields) != len(names):
                    raise ValueError(f"{path}, line {line_num}: {len(fields)} values, expected {len(names)} (one per @attribute)")
                if len(rows) == max_rows:
                    raise ValueError(f"{path}, line {line_num}: more than {max_rows:,} rows, the limit (read_table's max_rows)")
                row = []
                for (value, quoted), name in zip(fields, names):
                    if not quoted and value == ARFF_MISSING:
                        row.append(ARFF_MISSING)
                        continue
                    kind = types[name]
                    if kind == "numeric":
                        try:
                            float(value)
                        except ValueError:
                            raise ValueError(
                                f"{path}, line {line_num}: attribute {name!r} is numeric, got {value!r}"
                            ) from None
                    elif kind == "nominal" and value not in categories[name]:
                        raise ValueError(
                            f"{path}, line {line_num}: {value!r} is not a declared value of attribute {name!r} "
                            f"({', '.join(categories[name][:10])})"
                        )
                    row.append(value)
                rows.append(row)
                numbers.append(line_num)
    except UnicodeDecodeError:
        raise _not_text(path, encoding) from None
    if not in_data:
        raise ValueError(f"{path}: no @data section (not an ARFF file?)")
    if not rows:
        raise ValueError(f"{path} holds no data rows")
    values = [_column_array(list(col)) for col in zip(*rows)]
    positions = {name: j for j, name in enumerate(names)}
    return Table(str(path), names, values, np.asarray(numbers, dtype=np.int64), positions, types, categories)
