from __future__ import annotations

import fcntl
import os
import pickle
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from fixtures import _cases
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import Store
from report_pipeline_tests import s3 as s3_helpers
from report_pipeline_tests.clock import Clock

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pdfs"
# The tiers, declared in each test file (`pytestmark`) or on a test:
# - `live`: starts a live server (`dagster dev` or a webserver and daemon, Postgres, PgBouncer,
#   Redis and Celery workers, a browser, a fault backfill), or runs whole process trees end to
#   end whose outcomes quick tests check in-process (test_hostile_preview.py: each hostile file
#   through `report-pipeline preview` under a memory limit). `make check` leaves these out.
# - `slow`: runs the pipeline (forks confined children), a Dagster run or a command in a
#   subprocess. `make unit` leaves these out too: pure logic, under 30 s, and it forks nothing
#   (`_unit_tier_forks_nothing` below fails a test that does, so a missing mark shows).
# A test in a live folder, or one that uses a live fixture, without the `live` mark is an error:
# the mark is declared, never inferred.
LIVE_FOLDERS = {"production", "ui", "faults", "operate", "bench"}
LIVE_FIXTURES = {"postgres", "production_instance", "pg_env", "backend", "browser", "backfill",
                 "live"}  # fmt: skip
UNIT_TIER = os.environ.get("REPORT_PIPELINE_TEST_TIER") == "unit"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    undeclared = sorted({
        str(Path(str(item.path)).relative_to(Path(__file__).parent.parent))
        for item in items
        if item.get_closest_marker("live") is None and _starts_live(item)
    })  # fmt: skip
    if undeclared:
        raise pytest.UsageError(
            "these tests start a live server: declare `pytestmark = pytest.mark.live` (or mark "
            f"the test) in {', '.join(undeclared)}"
        )


def _starts_live(item: pytest.Item) -> bool:
    folder = Path(str(item.path)).relative_to(Path(__file__).parent).parts[0]
    return folder in LIVE_FOLDERS or bool(LIVE_FIXTURES & set(getattr(item, "fixturenames", ())))


def _no_fork(*_args, **_kwargs):
    raise AssertionError("the unit tier forks nothing: mark this test `slow`")


@pytest.fixture(autouse=True)
def _unit_tier_forks_nothing(monkeypatch):
    """Under `make unit`, a test that forks (the pipeline's confined children, a subprocess)
    fails at once with what to do, instead of quietly making the tier slow."""
    if UNIT_TIER:
        monkeypatch.setattr(os, "fork", _no_fork)
        monkeypatch.setattr(subprocess.Popen, "__init__", _no_fork)
    yield


@pytest.fixture(autouse=True)
def _checkout_keeps_its_mode():
    """No test may change the checkout's permissions (a LocalStore rooted at "." once made it
    0700, and PgBouncer, running as the postgres user, could no longer read deploy/)."""
    before = FIXTURES.parents[1].stat().st_mode
    yield
    assert FIXTURES.parents[1].stat().st_mode == before, "a test changed the checkout's mode"


@pytest.fixture
def clock() -> Clock:
    """The one "now" a test reads, and the months around it (report_pipeline_tests/clock.py)."""
    return Clock(utc_now())


def files_under(path: Path) -> list[Path]:
    """Every file below `path` (none when it does not exist)."""
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


def fixture_pdf(name: str) -> Path:
    path = FIXTURES / name
    assert path.is_file(), f"missing fixture {name}: run `make fixtures`"
    return path


# The monthly report in small: its first 3 pages (the logo and 1-4 content images each), with its
# two broken scans on pages 2 (`truncated`) and 3 (`signature_mismatch`); 11 occurrences.
SMALL_REPORT_SCANS = {2: "ImBadScan", 3: "ImPngAsJpeg"}


@pytest.fixture(scope="session")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A month with one item of each kind to review, for the tests that decide them: a run of
    the 140-page monthly report costs about 3 s of CPU (5 s through Dagster), this one 0.2 s."""
    path = tmp_path_factory.mktemp("reports") / "small_report.pdf"
    path.write_bytes(_cases.report(3, bad_scans=SMALL_REPORT_SCANS))
    return path


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Path, Manifest]]:
    """A fixture run through the core pipeline (default settings, a LocalStore, 2026-10) once
    per session, for the tests that only read what a run of it archived: (its store's folder,
    its manifest). Not once per test, nor once per xdist worker: the workers share the session's
    base folder and take turns by a lock. A test that writes to the store copies it first."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "archived"

    def get(name: str) -> tuple[Path, Manifest]:
        folder = shared / name
        folder.mkdir(parents=True, exist_ok=True)
        done = folder / "manifest.pickle"
        with open(folder / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                store = LocalStore(folder / "store")
                manifest = run_report(store, fixture_pdf(name), PipelineSettings(folder / "work"),
                                      "inbox", "2026-10")  # fmt: skip
                done.write_bytes(pickle.dumps(manifest))
        return folder / "store", pickle.loads(done.read_bytes())

    return get


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


@pytest.fixture
def settings(tmp_path: Path) -> PipelineSettings:
    return PipelineSettings(tmp_path / "work")


@pytest.fixture
def run_fixture(store: LocalStore, settings: PipelineSettings) -> Callable[..., Manifest]:
    """Run a fixture PDF through the core pipeline (no Dagster) and return its manifest."""

    def run(name: str, **kwargs) -> Manifest:
        return run_report(store, fixture_pdf(name), settings, "inbox", "2026-10", **kwargs)

    return run


@pytest.fixture
def inbox(tmp_path: Path) -> Callable[..., Path]:
    """Drop a fixture (its name, or the path of a PDF a test built) into `<tmp>/inbox/<month>/`
    under a chosen name."""

    def drop(name: str | Path, month: str = "2026-10", as_name: str | None = None) -> Path:
        source = name if isinstance(name, Path) else fixture_pdf(name)
        folder = tmp_path / "inbox" / month
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copyfile(source, folder / (as_name or source.name)))

    return drop


@pytest.fixture(scope="session")
def empty_instance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a new, empty test instance (its sqlite storages created and their schema
    stamped), made once: each test's instance starts from a copy of it, ~0.1 s of CPU instead
    of the ~0.4 s that creating the storages takes."""
    home = tmp_path_factory.mktemp("empty_instance")
    with dg.instance_for_test(temp_dir=str(home)):
        pass
    return home


@pytest.fixture
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dg.DagsterInstance]:
    """Dagster's in-memory instance (what `dg.materialize` makes when given none), its artifacts
    in a temporary folder: for runs executed in this process. Half the CPU of a sqlite instance
    on disk, whose per-run event-log shard is created and written a connection per event."""
    with dg.DagsterInstance.ephemeral(tempdir=str(tmp_path_factory.mktemp("dagster"))) as memory:
        yield memory


@pytest.fixture
def persistent_instance(
    empty_instance: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dg.DagsterInstance]:
    """A real persistent (sqlite) instance in a temporary DAGSTER_HOME: for runs whose steps
    execute in other processes, which read and write the same storage."""
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copytree(empty_instance, home, dirs_exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home)) as test_instance:
        yield test_instance


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 API server on a free loopback port, once per session: its endpoint URL."""
    server, endpoint = s3_helpers.start_server()
    yield endpoint
    server.shutdown()
    server.server_close()


@pytest.fixture
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> s3_helpers.S3:
    """A fresh bucket on the session's S3 server; dummy credentials in this test's environment."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_helpers.CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    return s3_helpers.fresh(s3_server)


@pytest.fixture(params=["local", "s3"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """The same tests on both stores: LocalStore, and S3Store on the moto server (under a prefix,
    so the prefix is exercised too)."""
    if request.param == "local":
        return LocalStore(tmp_path / "store")
    s3 = request.getfixturevalue("s3")
    return S3Store(s3.client, s3.bucket, prefix="pipeline")
