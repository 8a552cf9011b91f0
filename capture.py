#!/usr/bin/env python3
"""Capture a host's Redis traffic: `sudo python capture.py --duration 15m -o redis.pcap` (or `--monitor URL`)."""

import sys

from cachescope.cli.capture import entry_point

if __name__ == "__main__":
    sys.exit(entry_point())
