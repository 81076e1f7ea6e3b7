"""A forked child, confined before it does anything: `spawn(work, limit)` runs `work(sock)` in it
under `confine`, and the parent holds the other end of the socket and the pid.

The child never returns into the parent's code: it leaves with `os._exit`, 0 when `work`
returned, EXIT_MEMORY when it ran out of its address space, EXIT_ERROR otherwise. `ended`
tells the parent, from the wait status, how a child ended and what to say of it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

EXIT_ERROR, EXIT_MEMORY = 70, 75


@dataclass(frozen=True)
class Confinement:
    memory_bytes: int  # address space a child may add to what it has at the fork
    cpu_seconds: int


@dataclass
class Child:
    """The parent's handle on a spawned child: its pid and the parent's end of the socket."""

    pid: int
    sock: socket.socket

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def reap(self) -> tuple[int, float]:
        """Close the socket and wait for the child: its wait status and the CPU it used."""
        if self.sock.fileno() >= 0:
            self.sock.close()
        _, status, usage = os.wait4(self.pid, 0)
        return status, usage.ru_utime + usage.ru_stime

    def stop(self) -> None:
        """Kill and reap a child whose work is not wanted (safe to call once it is reaped)."""
        self.kill()
        with contextlib.suppress(ChildProcessError):
            self.reap()

    def cpu(self) -> float | None:
        """The CPU seconds the child has used so far, while it runs (or before it is reaped):
        from /proc; None where /proc cannot say."""
        return cpu_of(self.pid)


def spawn(work: Callable[[socket.socket], None], limit: Confinement) -> Child:
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's side ends in os._exit
        ours.close()
        _run(theirs, work, limit)
    theirs.close()
    return Child(pid, ours)


def _run(sock: socket.socket, work: Callable[[socket.socket], None], limit: Confinement,
         ) -> NoReturn:  # fmt: skip
    code = EXIT_ERROR
    try:
        confine(sock.fileno(), limit)
        work(sock)
        code = 0
    except MemoryError:
        code = EXIT_MEMORY
    finally:
        os._exit(code)


def ended(status: int) -> tuple[str, str]:
    """How a confined child ended (its wait status): "cpu" (past its CPU limit), "memory" (past
    its address space) or "crashed", and what to say of it ("died with signal 9")."""
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return "cpu", "used up its CPU limit"
    if os.WIFSIGNALED(status):
        return "crashed", f"died with signal {os.WTERMSIG(status)}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    if code == EXIT_MEMORY:
        return "memory", "ran out of its memory limit"
    return "crashed", f"exited with status {code}"


_TICKS = os.sysconf("SC_CLK_TCK")


def proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/<pid>/stat (Linux) after the command name, state first (so field N
    of proc(5) is at N - 3). OSError once the process is gone. The one reader of that file:
    the walk's CPU budget (`cpu_of`), whether a run's worker is still the process that started
    it (defs/reports/dead_runs.py), and the benchmarks' CPU figures."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_of(pid: int) -> float | None:
    """CPU seconds (user + system) process `pid` has used so far, from /proc/<pid>/stat; None
    where /proc cannot say."""
    try:
        after_name = proc_stat(pid)
        return (int(after_name[11]) + int(after_name[12])) / _TICKS  # utime, stime: fields 14, 15
    except (OSError, ValueError, IndexError):
        return None


def cpu_used() -> float:
    """This process's CPU seconds so far (a child reports its own to the parent)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def confine(keep: int, limit: Confinement) -> None:
    """Only the socket stays open; no environment; memory, CPU and core dumps limited."""
    gc.disable()  # objects inherited from the parent must not be finalized here
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    os.environ.clear()
    with open("/proc/self/statm") as statm:
        size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    memory = size + limit.memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (limit.cpu_seconds, limit.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
