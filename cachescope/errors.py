"""The errors cachescope raises for a user's mistake or bad input: one class tree, one line of message each.

The command-line tools turn any of these into one line on stderr and exit status 2, never a traceback.
"""


class CachescopeError(Exception):
    """Base of every error that is the input's or the user's, not a bug."""


class UsageError(CachescopeError):
    """An option or argument that cannot work (a capacity of zero, an unknown policy)."""


class TraceFormatError(CachescopeError):
    """A trace that cannot be read as the format it claims, with the file and position."""


class CaptureError(CachescopeError):
    """A capture that cannot start or stopped on its own: no tcpdump, no right to capture, an unreachable server."""
