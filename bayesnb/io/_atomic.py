"""Writing output files safely: whole or not at all, never over an input or a stranger's file.

Every file bayesnb writes for a user (``estimator.save``, and the ``bayesnb`` command's
model, column layout, predictions, comparison tables and demo report) goes through this
module, so the three guarantees are made once:

* **atomic**: the bytes go to a temporary file in the destination's folder (the same file
  system, so the final ``os.replace`` is a rename), which replaces the destination only
  once it is complete and flushed; on any failure (a full disk, a file-size limit, an
  interrupt, an exception while producing the content) the temporary file is removed and
  the destination is left as it was;
* **not over an input**: :func:`check_output` refuses a destination that resolves (links,
  ``..``, hard links) to one of the command's input files;
* **not over a stranger's file**: an existing destination is replaced only when it is of
  the kind the command writes (a recogniser says so) or when the user passed ``--force``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

__all__ = ["UnsafeOutputError", "atomic_write", "staged_files", "check_output", "read_head"]


class UnsafeOutputError(Exception):
    """An output path that would destroy an input or a file of another kind."""


class _Staged:
    """A temporary file beside ``target`` that replaces it on :meth:`commit`."""

    def __init__(self, target):
        self.target = Path(target)
        directory = self.target.parent
        for _ in range(100):
            candidate = directory / f".{self.target.name}.{secrets.token_hex(6)}.tmp"
            try:
                # O_EXCL: never reuse (or follow a link planted at) an existing name; mode
                # 0o666 lets the umask decide the permissions, as for a plain open().
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            except FileExistsError:
                continue
            break
        else:  # pragma: no cover - 100 collisions of 48 random bits
            raise FileExistsError(f"cannot create a temporary file in {directory}")
        os.close(fd)
        self.path = candidate
        try:
            # Replacing a file keeps its permission bits (a model made private stays private).
            mode = stat.S_IMODE(os.stat(self.target).st_mode)
        except OSError:
            mode = None
        if mode is not None:
            os.chmod(self.path, mode)

    def commit(self):
        # The bytes on disk before the rename (a read-only descriptor suffices for fsync, and
        # the copied permission bits may forbid writing).
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.path, self.target)

    def discard(self):
        with contextlib.suppress(OSError):
            os.unlink(self.path)


@contextlib.contextmanager
def staged_files(*targets):
    """Temporary paths that replace ``targets`` together when the block succeeds.

    Parameters
    ----------
    *targets : str or Path
        Final destinations; each temporary file is created in its destination's folder.

    Yields
    ------
    list of Path
        One temporary path per target, to be written by the block (any writer: numpy,
        matplotlib, zipfile).

    Notes
    -----
    On success the temporary files replace their targets in the order given (one rename
    each); on any exception every temporary file is removed, no target is touched, and
    the exception propagates.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); target = os.path.join(d, "out.txt")
    >>> with staged_files(target) as (tmp,):
    ...     _ = tmp.write_text("complete")
    >>> open(target).read(), sorted(os.listdir(d))
    ('complete', ['out.txt'])
    >>> try:
    ...     with staged_files(target) as (tmp,):
    ...         _ = tmp.write_text("half")
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> open(target).read(), sorted(os.listdir(d))
    ('complete', ['out.txt'])
    """
    staged = []
    try:
        for target in targets:
            staged.append(_Staged(target))
        yield [s.path for s in staged]
        for s in staged:
            s.commit()
    except BaseException:
        for s in staged:
            s.discard()
        raise


@contextlib.contextmanager
def atomic_write(target, mode="wb", *, encoding=None):
    """Open a temporary file that replaces ``target`` once the block completes.

    Parameters
    ----------
    target : str or Path
    mode : {"wb", "w"}
    encoding : str, optional
        For text mode (default UTF-8). Text is written with ``newline=""``: the content
        decides its line endings.

    Yields
    ------
    file object

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "p.csv")
    >>> with atomic_write(target, "w") as fh:
    ...     _ = fh.write("line,predicted\\n")
    >>> open(target).read()
    'line,predicted\\n'
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    with staged_files(target) as (tmp,):
        if mode == "w":
            with open(tmp, "w", encoding=encoding or "utf-8", newline="") as fh:
                yield fh
        else:
            with open(tmp, "wb") as fh:
                yield fh


def read_head(path, n=4096):
    """The first ``n`` bytes of a file (``b""`` when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def _same_file(a, b):
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path, *, option, kind, inputs=(), is_own=None, force=False):
    """Refuse an output path that would destroy an input or a file of another kind.

    Parameters
    ----------
    path : str or Path
        The destination.
    option : str
        How the user named it (``"--out"``, ``"--model"``), for the message.
    kind : str
        What the command writes there (``"a predictions file"``), for the message.
    inputs : iterable of str or Path
        The command's input files: the destination may resolve to none of them, even
        with ``force`` (the input is read while the output is written).
    is_own : callable, optional
        ``is_own(path) -> bool``: whether an existing file is of the kind the command
        writes (then it is replaced). Without it any existing file needs ``force``.
    force : bool
        Replace an existing regular file of another kind.

    Returns
    -------
    Path

    Raises
    ------
    UnsafeOutputError
        Naming the path and the reason.
    """
    path = Path(path)
    for source in inputs:
        if source is not None and _same_file(path, source):
            raise UnsafeOutputError(
                f"{option} {path} is the input file {source}: writing it would destroy the input; "
                "choose another output path"
            )
    if not path.parent.is_dir():
        raise UnsafeOutputError(f"{option} {path}: the folder {path.parent} does not exist")
    if path.is_dir():
        raise UnsafeOutputError(f"{option} {path} is a directory")
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise UnsafeOutputError(f"{option} {path} exists and is not a regular file")
        if not force and not (is_own is not None and is_own(path)):
            raise UnsafeOutputError(
                f"{option} {path} exists and is not {kind}: refusing to overwrite it "
                "(pass --force to replace it)"
            )
    return path
