#!/usr/bin/env python3
"""Captured Redis traffic to a trace: `python parse.py capture.pcap -o trace.parquet`."""

import sys

from cachescope.cli.parse import entry_point

if __name__ == "__main__":
    sys.exit(entry_point())
