"""Independent pieces of work (a capture to parse, a simulation of a sweep) run as Dask tasks: on a cluster
already running (`--scheduler ADDRESS`) or on a LocalCluster of this machine (`--workers N`).

Dask is an optional dependency (`pip install cachescope[dask]`), imported only here and only when a cluster
is used. A task that fails with an input error returns it as data (the caller reports it by name); a worker
that dies mid-task has its task run again elsewhere by the scheduler (`distributed.scheduler.allowed-failures`
times), after which the task is reported failed with one line."""

from __future__ import annotations

import logging
import os
import socket
import sys
import uuid
from contextlib import contextmanager
from typing import Callable

from cachescope.errors import UsageError

# How long a scheduler's host has to accept a connection, and then to greet as a Dask scheduler does: Dask
# itself retries a refused connection until its timeout (a mistyped address was a long wait), and waits for
# the greeting of whatever accepted the connection without end.
CONNECT_TIMEOUT_S = 3
HANDSHAKE_TIMEOUT_S = 10
# A scheduler greets a new connection with one small frame, its length first (8 bytes, little-endian).
MAX_GREETING_BYTES = 1 << 20
DEFAULT_SCHEDULER_PORT = 8786


def dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def check_cluster_options(workers, scheduler) -> None:
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 0):
        raise UsageError(f"--workers {workers!r}: a number of worker processes (0: none, run here)")
    if scheduler is not None and workers:
        raise UsageError("give --scheduler (a cluster already running) or --workers (a local one), not both")
    if (scheduler is not None or workers) and not dask_available():
        raise UsageError("running on Dask needs dask and distributed: pip install 'dask[distributed]' (or "
                         "cachescope[dask])")


def default_workers(tasks: int) -> int:
    """A LocalCluster of one single-threaded worker per core, no more than there are tasks."""
    return max(1, min(tasks, os.cpu_count() or 1))


class TaskFailed(Exception):
    """A task that did not complete (its worker died too often, or it raised): `name`, the one line, and
    the exception."""

    def __init__(self, name: str, message: str, error: BaseException | None = None):
        super().__init__(f"{name}: {message}")
        self.name, self.message, self.error = name, message, error


@contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None):
    """A Dask client of the cluster at `scheduler`, or of a LocalCluster of `workers` single-threaded worker
    processes started here and stopped on leaving."""
    _quiet()
    from distributed import Client, LocalCluster

    if scheduler is not None:
        _check_reachable(scheduler)
        try:
            client = Client(scheduler, timeout=f"{HANDSHAKE_TIMEOUT_S}s")
        except (OSError, TimeoutError) as e:
            raise UsageError(f"--scheduler {scheduler}: no Dask scheduler answered there ({_one_line(e)})") \
                from None
        except Exception:  # noqa: BLE001 - Dask read a length from bytes that were no greeting, and so on
            raise UsageError(_not_dask(scheduler)) from None
        with client:
            yield client
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def _check_reachable(scheduler: str) -> None:
    """Fails in one line, within CONNECT_TIMEOUT_S, when nothing accepts a TCP connection at the scheduler's
    address (refused, no answer, no such host), and within HANDSHAKE_TIMEOUT_S more when what accepted it
    does not greet as a scheduler does. TLS and other transports are left to Dask past the connection."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(scheduler)
        host, port = parse_host_port(location, DEFAULT_SCHEDULER_PORT)
    except (ValueError, TypeError) as e:
        raise UsageError(f"--scheduler {scheduler}: not an address like tcp://HOST:8786 ({e})") from None
    if scheme not in ("tcp", "tls", "inproc", "ucx", "ws", "wss"):
        raise UsageError(f"--scheduler {scheduler}: unknown transport {scheme!r} (tcp://HOST:8786, tls://...)")
    if scheme not in ("tcp", "tls"):
        return
    try:
        conn = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except socket.gaierror as e:
        why = f"no such host ({e.strerror or e})"
    except ConnectionRefusedError:
        why = "connection refused: is the scheduler running, on that port?"
    except (socket.timeout, TimeoutError):
        why = f"no answer within {CONNECT_TIMEOUT_S} s"
    except OSError as e:
        why = e.strerror or str(e)
    else:
        with conn:
            if scheme == "tcp":
                _check_greeting(scheduler, conn)
        return
    raise UsageError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({why})")


def _check_greeting(scheduler: str, conn: socket.socket) -> None:
    """The first 8 bytes a Dask scheduler sends on a new connection, unasked: the length of its greeting."""
    conn.settimeout(HANDSHAKE_TIMEOUT_S)
    head = b""
    try:
        while len(head) < 8:
            more = conn.recv(8 - len(head))
            if not more:
                raise UsageError(f"--scheduler {scheduler}: the connection was closed without a word: no Dask "
                                 "scheduler there")
            head += more
    except (socket.timeout, TimeoutError):
        raise UsageError(f"--scheduler {scheduler}: something accepts connections there but said nothing within "
                         f"{HANDSHAKE_TIMEOUT_S} s (a Dask scheduler greets at once)") from None
    except OSError as e:
        raise UsageError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({e.strerror or e})") from None
    if not 0 < int.from_bytes(head, "little") <= MAX_GREETING_BYTES:
        raise UsageError(_not_dask(scheduler))


def _not_dask(scheduler: str) -> str:
    return (f"--scheduler {scheduler}: something answered there, but not as a Dask scheduler does (another "
            "service on that port? a proxy?)")


def cluster_threads(client) -> int:
    """The tasks the cluster runs at once (its workers' threads)."""
    return max(1, sum(client.nthreads().values()))


def run_tasks(client, fn: Callable, args: list[tuple], names: list[str], *, progress: bool = False,
              what: str = "tasks") -> list:
    """`fn(*a)` for each `a` of `args` on the cluster of `client`, results in the order of `args`; a task that
    could not complete is a TaskFailed in its place. Shows how many tasks are done on stderr when `progress`."""
    from distributed import as_completed

    from cachescope.progress import count_bar

    run = uuid.uuid4().hex[:8]
    futures = [client.submit(fn, *a, key=f"cachescope-{run}-{i}-{n}", pure=False)
               for i, (a, n) in enumerate(zip(args, names))]
    index = {f.key: i for i, f in enumerate(futures)}
    results: list = [None] * len(futures)
    with count_bar(len(futures), f"{what} on {_where(client)}", progress) as bar:
        for future in as_completed(futures):
            i = index[future.key]
            try:
                results[i] = future.result()
            except Exception as e:  # noqa: BLE001 - KilledWorker, or an error the task did not expect
                results[i] = TaskFailed(names[i], _one_line(e), e)
            bar.update(1)
    return results


def _where(client) -> str:
    return f"the Dask cluster at {client.scheduler.address}"


def _one_line(e: BaseException) -> str:
    name = type(e).__name__
    if name == "KilledWorker":
        return "its worker died while running it, and again on every retry (out of memory? killed?)"
    text = " ".join(str(e).split()) or name
    return f"{name}: {text}" if name not in text else text


def _quiet() -> None:
    """Dask logs every worker's start and stop at INFO on stderr: the commands keep stderr for their report."""
    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.worker",
                 "distributed.core", "distributed.http.proxy", "bokeh"):
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    if "dask" in sys.modules:
        import dask

        dask.config.set({"logging.distributed": "error"})
