"""Fault injection at the storage boundary, for any Store (LocalStore, S3Store): test and
benchmark support, never shipped (the wheel holds no `devstack/`).

A spec such as `transient=0.2,seed=3` names the faults; `with_faults(store, "")` is the store
itself. The errors are the project's own, so the ops' guard and retry policy treat an injected
fault like a real one. Into Dagster, `with_store_faults(defs, spec)` puts the layer in front of
the definitions' `store` resource (whichever the deployment built); the test code location
(report_pipeline_tests/intake/live_definitions.py) does so when `REPORT_PIPELINE_STORAGE_FAULTS`
is set where it loads.

Transient faults are drawn per *session*, not per call (the ops retry whole steps: at a 20% rate
per call a step archiving 300 images would fail every attempt). A session is what the caller
names (the Dagster resource: one per step attempt, month/step/retry number, within its run),
shared by every store made for it; unnamed, it is one `FaultyStore`. `transient` is the share of
sessions that are faulty. A faulty session fails its k-th call, k uniform in 1..`window`
(default 8): anywhere in a step's first eight calls, also after it wrote objects, which its
retry must then find. A session that ends before its k-th call is not harmed: a step of
n < `window` calls faults at transient * n / window. The draw is seeded by `seed` and the
session's name, not its run (unnamed: its first key and how many sessions in this process began
with it), so a backfill meets the same faults on every store, and a retry draws again.

Permanent faults: every call on a key matching one of the `permanent` patterns (fnmatch, `*`
crosses `/`) fails with PermanentStorageError, every time. `latency_ms` is added to every call.
`journal` (a file) receives one JSON line per faulty draw, per injected fault (with the objects
its session had created) and per `put_if_absent` (created or found), from every process.

Held calls: with `pause` (an fnmatch pattern) and `signal` (a file), the first write (`put_bytes`,
`put_file`, `put_if_absent`, `copy` to the key) in this process on a key matching `pause`, or
the first call of `pause_method` on one when that is set, stops before it starts: it writes
`signal` (its pid, method and key, as JSON) and waits until `<signal>.go` exists, then goes on.
A test kills the process there (a crash at exactly that call: between the objects and the
manifest, say) or lets it go on (a run held in flight while something else happens), at most
`hold_s` seconds (default 600) before the call fails transiently.

Counted faults: with `method` (and `counter`, a file, so every process and every store made for
a step or a retry shares the count), the calls of that method numbered `after` to
`after + failures - 1` fail (`kind` transient or permanent); with `method_key` (a pattern), only
the calls whose first key matches it count; with `watch` (a folder), the private
workdirs it held at the first of them are written to `<counter>.seen`.
"""

from __future__ import annotations

import json
import os
import random
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg

from report_pipeline.core.scratch.workdir import LEASE_FILE
from report_pipeline.core.storage.store import (
    ObjectInfo,
    PermanentStorageError,
    Store,
    TransientStorageError,
)
from report_pipeline.defs.deployment.resources import StoreResource

T = TypeVar("T")
FAULTS_ENV = "REPORT_PIPELINE_STORAGE_FAULTS"
_NUMBERS = {"transient": float, "latency_ms": float, "seed": int, "window": int, "after": int,
            "failures": int, "hold_s": float}  # fmt: skip
_TEXTS = {
    "journal",
    "method",
    "method_key",
    "kind",
    "counter",
    "watch",
    "pause",
    "pause_method",
    "signal",
}
_WRITES = {"put_bytes", "put_file", "put_if_absent", "copy"}
_FIELDS = {*_NUMBERS, *_TEXTS, "permanent"}


@dataclass(frozen=True)
class FaultPlan:
    transient: float = 0.0  # share of store sessions that fail one call transiently
    permanent: tuple[str, ...] = ()  # key patterns whose every call fails permanently
    latency_ms: float = 0.0  # added before every call
    seed: int = 0
    window: int = 8  # a faulty session fails its k-th call, k uniform in 1..window
    journal: str = ""  # a file: one JSON line per faulty draw, fault and put_if_absent
    method: str = ""  # counted faults: calls of this method (see module doc)
    method_key: str = ""  # ...whose first key matches this pattern ("": every call)
    after: int = 0  # calls of `method` that succeed before the failures start
    failures: int = 0
    kind: str = "transient"  # or permanent
    counter: str = ""  # a file: the count of `method`'s calls, shared by every process
    watch: str = ""  # a folder whose workdirs are recorded at the first counted failure
    pause: str = ""  # a key pattern: the first write to a matching key waits (see module doc)
    pause_method: str = ""  # that method's first call on a matching key waits instead
    signal: str = ""  # a file: written when that write waits; `<signal>.go` lets it go on
    hold_s: float = 600.0  # how long a held write waits for `<signal>.go` at most

    def __post_init__(self) -> None:
        if not 0.0 <= self.transient <= 1.0:
            raise ValueError(f"storage faults: transient={self.transient} is not in 0..1")
        if self.latency_ms < 0 or self.window < 1:
            raise ValueError("storage faults: latency_ms must be >= 0 and window >= 1")
        if self.kind not in {"transient", "permanent"}:
            raise ValueError(f"storage faults: kind={self.kind!r} is not transient or permanent")
        if self.method and not (self.counter and self.failures > 0):
            raise ValueError("storage faults: method= needs counter= and failures= above 0")
        if bool(self.pause) != bool(self.signal):
            raise ValueError("storage faults: pause= and signal= go together")


def parse_faults(spec: str) -> FaultPlan | None:
    """`transient=0.2,permanent=<pattern>,permanent=<pattern>,latency_ms=5,seed=7,window=8,
    journal=<file>,method=delete,method_key=<pattern>,after=0,failures=2,kind=permanent,counter=<file>,watch=<folder>,
    pause=<pattern>,pause_method=fetch,signal=<file>,hold_s=600` (any subset, any order;
    `permanent` may repeat) → a FaultPlan; "" → None."""
    values: dict[str, Any] = {"permanent": []}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in _FIELDS:
            raise ValueError(
                f"storage faults: {item!r} is not one of {', '.join(sorted(_FIELDS))} as name=value"
            )
        try:
            if name == "permanent":
                values["permanent"].append(value.strip())
            elif name in _TEXTS:
                values[name] = value.strip()
            else:
                values[name] = _NUMBERS[name](value)
        except ValueError:
            raise ValueError(f"storage faults: {name}={value!r} is not a number") from None
    if len(values) == 1 and not values["permanent"]:
        return None
    return FaultPlan(**{**values, "permanent": tuple(values["permanent"])})


_sessions: Counter[str] = Counter()  # sessions begun per first key, in this process
_lock = threading.Lock()
injected: Counter[str] = Counter()  # faults raised in this process: "transient", "permanent"


@dataclass
class _Session:
    fault_at: int | None = None  # the call that fails (0: none); decided at the first call
    calls: int = 0
    created: list[str] = field(default_factory=list)  # keys its put_if_absent calls created
    lock: threading.Lock = field(default_factory=threading.Lock)


_named: dict[tuple[str, str], _Session] = {}  # named sessions of this process, by (scope, name)
_held: set[str] = set()  # the signal files whose write this process has held already


class FaultyStore:
    """`inner` (any Store) with the plan's faults in front of every call (see module doc)."""

    def __init__(self, inner: Store, plan: FaultPlan, session: str = "", scope: str = "") -> None:
        self.inner, self.plan, self._name, self._scope = inner, plan, session, scope
        if not session:
            self._session = _Session()
            return
        with _lock:  # the same name in another scope (run) is another session, same draw
            self._session = _named.setdefault((scope, session), _Session())

    def __getattr__(self, name: str) -> Any:  # io_workers, root, bucket...: the inner store's
        if name.startswith("_") or name in {"inner", "plan"}:
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _call(self, method: str, keys: list[str], work: Callable[[], T]) -> T:
        for key in keys:
            if any(fnmatchcase(key, pattern) for pattern in self.plan.permanent):
                injected["permanent"] += 1
                raise PermanentStorageError(f"injected permanent fault: {method} {key}")
        if method == self.plan.method and fnmatchcase(keys[0] if keys else "",
                                                      self.plan.method_key or "*"):  # fmt: skip
            self._counted(method)
        held = method == self.plan.pause_method if self.plan.pause_method else method in _WRITES
        if self.plan.pause and held and fnmatchcase(keys[0], self.plan.pause):
            self._hold(method, keys[0])
        if self.plan.latency_ms:
            time.sleep(self.plan.latency_ms / 1000)
        key = keys[0] if keys else ""
        call = self._transient_now(key)
        if call:
            injected["transient"] += 1
            self._record("fault", call=call, method=method, key=key,
                         created=list(self._session.created))  # fmt: skip
            raise TransientStorageError(
                f"injected transient fault: {method} {key} (call {call} of the step attempt)"
            )
        return work()

    def _counted(self, method: str) -> None:
        counter = Path(self.plan.counter)
        calls = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(calls + 1))
        if not self.plan.after <= calls < self.plan.after + self.plan.failures:
            return
        if calls == self.plan.after and self.plan.watch:
            Path(f"{counter}.seen").write_text(json.dumps(workdirs(Path(self.plan.watch))))
        injected[self.plan.kind] += 1
        if self.plan.kind == "permanent":
            raise PermanentStorageError(f"injected failure in {method}")
        raise TransientStorageError(f"injected timeout in {method}")

    def _hold(self, method: str, key: str) -> None:
        """The first matching call of this process waits for `<signal>.go` (module doc)."""
        with _lock:
            if self.plan.signal in _held:
                return
            _held.add(self.plan.signal)
        signal, go = Path(self.plan.signal), Path(f"{self.plan.signal}.go")
        line = {"pid": os.getpid(), "method": method, "key": key, "at": time.time()}
        partial = signal.with_name(f"{signal.name}.{os.getpid()}")
        partial.write_text(json.dumps(line))
        partial.replace(signal)  # whole, so the test never reads half of it
        give_up = time.monotonic() + self.plan.hold_s
        while not go.exists():
            if time.monotonic() > give_up:
                raise TransientStorageError(f"held call never let go: {method} {key}")
            time.sleep(0.01)

    def _transient_now(self, key: str) -> int:
        """The session's call number when this call is its fault, else 0."""
        session = self._session
        with session.lock:
            if session.fault_at is None:
                session.fault_at = self._draw(key)
                if session.fault_at:
                    self._record("draw", fault_at=session.fault_at)
            session.calls += 1
            return session.calls if session.calls == session.fault_at else 0

    def _record(self, event: str, **fields: Any) -> None:
        if not self.plan.journal:
            return
        line = {"event": event, "session": self._name, "scope": self._scope, **fields}
        with open(self.plan.journal, "a") as journal:  # O_APPEND: whole lines, any process
            journal.write(json.dumps(line) + "\n")

    def _draw(self, key: str) -> int:
        if not self.plan.transient:
            return 0
        name = self._name
        if not name:
            with _lock:
                name = f"{key}:{_sessions[key]}"
                _sessions[key] += 1
        rng = random.Random(f"{self.plan.seed}:{name}")  # str seeds: the same in every process
        return rng.randint(1, self.plan.window) if rng.random() < self.plan.transient else 0

    def put_bytes(self, key: str, data: bytes) -> None:
        self._call("put_bytes", [key], lambda: self.inner.put_bytes(key, data))

    def put_file(self, key: str, path: Path) -> None:
        self._call("put_file", [key], lambda: self.inner.put_file(key, path))

    def put_if_absent(self, key: str, data: bytes, md5: str = "") -> bool:
        created = self._call(
            "put_if_absent", [key], lambda: self.inner.put_if_absent(key, data, md5)
        )
        if created:
            with self._session.lock:
                self._session.created.append(key)
        self._record("put_if_absent", key=key, created=created)
        return created

    def get_bytes(self, key: str, max_bytes: int) -> bytes:
        return self._call("get_bytes", [key], lambda: self.inner.get_bytes(key, max_bytes))

    def copy(self, src: str, dst: str) -> None:
        self._call("copy", [dst, src], lambda: self.inner.copy(src, dst))

    def fetch(self, key: str, dest: Path, max_bytes: int) -> None:
        self._call("fetch", [key], lambda: self.inner.fetch(key, dest, max_bytes))

    def exists(self, key: str) -> bool:
        return self._call("exists", [key], lambda: self.inner.exists(key))

    def size(self, key: str) -> int:
        return self._call("size", [key], lambda: self.inner.size(key))

    def delete(self, key: str) -> bool:
        return self._call("delete", [key], lambda: self.inner.delete(key))

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._call("delete_many", keys, lambda: self.inner.delete_many(keys))

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self._call("list", [prefix], lambda: self.inner.list(prefix))

    def list_prefixes(self, prefix: str) -> list[str]:
        return self._call("list_prefixes", [prefix], lambda: self.inner.list_prefixes(prefix))


def with_faults(store: Store, spec: str, session: str = "", scope: str = "") -> Store:
    """`store` behind the faults `spec` asks for, in the named `session` of `scope` (see module
    doc); `store` itself when `spec` is empty."""
    plan = parse_faults(spec)
    return FaultyStore(store, plan, session, scope) if plan else store


def workdirs(folder: Path) -> list[dict]:
    """Every private workdir (inside its hour bucket) under `folder`: name, mode and lease."""
    return [
        {"name": d.name, "mode": stat.S_IMODE(d.stat().st_mode),
         "lease": json.loads((d / LEASE_FILE).read_text()) if (d / LEASE_FILE).exists() else None}
        for d in sorted(folder.rglob("w-*"))
    ]  # fmt: skip


def step_attempt() -> tuple[str, str]:
    """The step attempt running in this thread, `<month>/<op>[<mapping key>]/<retry number>`,
    and its run id, so the fault layer draws once per attempt however many stores the step
    takes ("" outside a step)."""
    try:
        context = dg.OpExecutionContext.get()
    except dg.DagsterInvariantViolationError:
        return "", ""
    month = context.partition_key if context.has_partition_key else ""
    mapping = context.get_mapping_key()
    step = f"{context.op_handle}[{mapping}]" if mapping else str(context.op_handle)
    return f"{month}/{step}/{context.retry_number}", context.run_id


class FaultyStoreResource(StoreResource):
    """`inner`, the deployment's store resource (local or S3), behind the fault layer: a
    StoreResource, so every op and check takes it unchanged."""

    root: str = ""  # not used: the inner resource's
    inner: StoreResource
    faults: str

    def get_store(self) -> Store:
        return with_faults(self.inner.get_store(), self.faults, *step_attempt())


def with_store_faults(defs: dg.Definitions, spec: str) -> dg.Definitions:
    """`defs` with the faults `spec` asks for in front of its `store` resource (checked now, so a
    typo stops the load); `defs` itself when `spec` is empty."""
    if not parse_faults(spec):
        return defs
    resources = dict(defs.resources or {})
    resources["store"] = FaultyStoreResource(inner=resources["store"], faults=spec)
    return dg.Definitions(
        assets=defs.assets, asset_checks=defs.asset_checks, jobs=defs.jobs,
        schedules=defs.schedules, sensors=defs.sensors, resources=resources,
        executor=defs.executor,
    )  # fmt: skip


def faults_from_environment(defs: dg.Definitions) -> dg.Definitions:
    """`defs` with the faults `REPORT_PIPELINE_STORAGE_FAULTS` names where they load (none when
    it is unset): how the test code location and the benchmarks switch the layer on."""
    return with_store_faults(defs, os.environ.get(FAULTS_ENV, ""))
