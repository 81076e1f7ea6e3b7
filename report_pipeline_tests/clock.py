"""The tests' one clock: "now" and the months relative to it.

No test names a month as "not yet a partition" or "the latest partition": months move, tests must
not. A month's partition opens when the month ends, so `month(0)` (this month) is the first month
that is not a partition yet and `month(-1)` is the latest partition. `make test` runs the
month-sensitive files again with the clock 400 days ahead (`faketime -f '+400d'`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from report_pipeline.core.model.clock import utc_now


def month(offset: int = 0, now: datetime | None = None) -> str:
    """The month `offset` months from now's ("YYYY-MM", UTC): 0 this month, -1 the one before."""
    moment = now or utc_now()
    index = moment.year * 12 + moment.month - 1 + offset
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


@dataclass(frozen=True)
class Clock:
    """What a test reads of "now": the moment itself and the months around it."""

    now: datetime

    def month(self, offset: int = 0) -> str:
        return month(offset, self.now)

    @property
    def not_yet_open(self) -> str:
        """The first month whose partition does not exist yet (this month)."""
        return self.month(0)

    @property
    def latest_partition(self) -> str:
        return self.month(-1)


def faketime_env(shift: str) -> dict[str, str]:
    """What a process needs in its environment to run with its clock `shift` off (libfaketime's
    FAKETIME format: `-30m`, `+90m`, `@2026-01-02 03:04:05`).

    Not the `faketime` wrapper: it keeps a semaphore in /dev/shm named by its pid and removes it
    only when it exits normally, so a SIGKILLed run leaves one behind, and a later wrapper given
    the same pid fails with "sem_open: File exists" before its command starts. The library
    alone (0.9.10) makes the same pair for its process, but a name taken makes it no error;
    `forget_faketime` removes the pair once the process has ended. `$LIB` is the dynamic
    loader's, as the wrapper sets it."""
    return {"LD_PRELOAD": "/usr/$LIB/faketime/libfaketime.so.1", "FAKETIME": shift}


def forget_faketime(pid: int) -> None:
    """Remove what libfaketime left in /dev/shm for the ended process `pid`."""
    for name in (f"sem.faketime_sem_{pid}", f"faketime_shm_{pid}"):
        Path("/dev/shm", name).unlink(missing_ok=True)
