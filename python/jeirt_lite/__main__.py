"""`python -m jeirt_lite ...`: the same as the `jeirt-lite` console script."""

import sys

from .cli import main

sys.exit(main())
