"""`python -m jeirt_lite.cli ...`: the same as the `jeirt-lite` console script."""

import sys

from . import main

sys.exit(main())
