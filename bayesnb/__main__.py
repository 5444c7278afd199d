"""``python -m bayesnb`` runs the ``bayesnb`` command."""

import sys

from bayesnb.cli.command import main

if __name__ == "__main__":
    sys.exit(main())
