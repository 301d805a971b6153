"""How many threads one engine in the suite gets: the cores this process may use, shared among pytest-xdist's
workers. `make test` runs two workers on two cores; an engine with a two-thread team in each would put three or
four runnable threads on two cores, and the team's barriers then wait for a teammate the other worker has
preempted: 64 tokens for 8 sequences took 1.27 s with two threads and 1.87 s with one on an idle 2-core box,
3.24 s and 1.89 s beside a process busy on one core. Tests of the thread team itself ask for more with
`torch_threads`."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


ENGINE_THREADS = max(1, _cores() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's (and so the C kernels' OpenMP) thread count in this thread set to `n` for the block."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
