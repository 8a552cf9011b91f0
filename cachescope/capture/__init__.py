"""Capturing Redis traffic on a host (tcpdump, MONITOR)."""
