#!/usr/bin/env python3
"""Hit rates of in-process cache policies over a Redis trace: `python simulate.py TRACE --lru 1e5,1e6`."""

import gc
import sys

# The imports make no reference cycles worth collecting, yet the objects they make kept triggering collections
# that walked all of them (numpy's, pandas'): a tenth of a short run's start-up. Collected as usual after.
gc.disable()
from cachescope.cli.simulate import entry_point  # noqa: E402

gc.enable()

if __name__ == "__main__":
    sys.exit(entry_point())
