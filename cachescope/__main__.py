"""`python -m cachescope simulate ...`, the same as the `cachescope` console script."""

import sys

from cachescope.cli import main

sys.exit(main())
