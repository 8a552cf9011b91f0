#!/usr/bin/env python3
"""Hit rates of in-process cache policies over a Redis trace: `python simulate.py TRACE --lru 1e5,1e6`."""

import sys

from cachescope.cli.simulate import entry_point

if __name__ == "__main__":
    sys.exit(entry_point())
