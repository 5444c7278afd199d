"""The ``bayesnb`` command (:mod:`bayesnb.cli.command`), its demo report
(:mod:`bayesnb.cli.report`) and the reading of users' files into models
(:mod:`bayesnb.cli.userdata`).
"""

from bayesnb.cli.command import main

__all__ = ["main"]
