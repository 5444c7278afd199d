"""Running the ``bayesnb`` command in-process for the CLI tests."""

from __future__ import annotations

import contextlib
import io

from bayesnb.cli.command import main


def run(argv):
    """``(exit status, stdout, stderr)`` of ``bayesnb ARGV`` (paths may be ``Path`` objects)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()
