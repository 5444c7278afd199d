"""``python -m bayesnb`` runs the ``bayesnb`` command."""

import sys

from .cli import main

sys.exit(main())
