#!/usr/bin/env python3
"""Hit rates of in-process cache policies over a Redis trace: `python simulate.py TRACE --lru 1e5,1e6`."""

import gc
import sys

# The imports make no reference cycles worth collecting, yet the objects they make kept triggering collections
# that walked all of them (numpy's, pandas'): a tenth of a short run's start-up. Then frozen (left out of every
# later collection, the one at exit included: they live as long as the process anyway), which took another
# 50-100 ms of CPU off a short sampled curve. Collected as usual after.
gc.disable()
from cachescope.cli.simulate import entry_point  # noqa: E402

gc.freeze()
gc.enable()

if __name__ == "__main__":
    sys.exit(entry_point())
