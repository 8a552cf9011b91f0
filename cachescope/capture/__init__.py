"""Capturing Redis traffic on a host: packets with tcpdump (`packets.py`, its command line in `tcpdump.py`), or
a server's MONITOR stream as `redis-cli MONITOR` prints it (`monitor.py`)."""

from cachescope.capture.monitor import MonitorResult, record_monitor
from cachescope.capture.options import parse_duration, parse_ports, parse_size
from cachescope.capture.packets import CaptureResult, capture_packets
from cachescope.capture.tcpdump import CaptureStats

__all__ = ["CaptureResult", "CaptureStats", "MonitorResult", "capture_packets", "parse_duration", "parse_ports",
           "parse_size", "record_monitor"]
