"""Decoding in confined child processes: one image pays for a crash, the run goes on."""

import os
import resource
import socket
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path

import pymupdf
import pytest

from report_pipeline.core.decode.child import decode_in_process
from report_pipeline.core.decode.pool import decode_pages
from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.model.records import ChildRecord
from report_pipeline.core.model.settings import DecodeSettings, PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.sandbox import wire
from report_pipeline.core.sandbox.child import Confinement, spawn
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.validate import per_image
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow

TIMES = ("started_at", "finished_at", "queued_at", "cleanup_lease")


def run(tmp_path: Path, name: str | Path, decoders=decode_pages, **decode) -> dict:
    settings = PipelineSettings(tmp_path / "work", decode=DecodeSettings(**decode))
    store = LocalStore(tmp_path / "store")
    pdf = name if isinstance(name, Path) else fixture_pdf(name)
    return run_report(store, pdf, settings, "inbox", "2026-10", 0, decoders)


def timeless(children: tuple[ChildRecord, ...]) -> list[dict]:
    return [{k: v for k, v in asdict(c).items() if k not in TIMES} for c in children]


@pytest.mark.parametrize("name", ["image_classes.pdf", "small_report"])
def test_a_pool_gives_the_same_records_as_decoding_in_one_process(tmp_path, request, name):
    """Split between two decoders: the 17 image classes, and the monthly report in small
    (photos, charts, the logo on every page, a truncated and a mislabelled scan; its 140 pages
    took ~7 s of CPU)."""
    pdf = request.getfixturevalue(name) if name == "small_report" else name
    serial = run(tmp_path / "a", pdf, decode_in_process)
    pooled = run(tmp_path / "b", pdf, processes=2)
    assert pooled.counts == serial.counts
    assert timeless(pooled.children) == timeless(serial.children)


def test_an_image_past_the_decoders_memory_limit_is_quarantined(tmp_path):
    (child,) = run(tmp_path, "large_dimensions.pdf", memory_bytes=32 << 20).children
    assert (child.state, child.quarantine_reason) == ("quarantined", "memory_limit")


def test_an_image_that_takes_too_long_is_quarantined_and_its_decoder_killed(tmp_path):
    manifest = run(tmp_path, "large_dimensions.pdf", image_seconds=0.05)
    (child,) = manifest.children
    assert (child.state, child.quarantine_reason) == ("quarantined", "decode_timeout")
    assert child.declared_type == "jpeg"  # read before the decode, kept when it times out
    assert "budget" in child.quarantine_detail
    assert manifest.state == "complete"


def test_the_decode_budget_grows_with_the_image_between_a_floor_and_a_ceiling(tmp_path):
    budget = DecodeSettings(image_seconds=120, image_floor_seconds=10, seconds_per_megapixel=1)
    assert budget.image_budget(64, 48) == pytest.approx(10.003, abs=1e-3)
    assert budget.image_budget(2048, 2048) == pytest.approx(14.19, abs=0.01)  # not minutes
    assert budget.image_budget(9000, 8000) == 82.0
    assert budget.image_budget(20000, 20000) == 120  # the ceiling
    # a small image gets the floor: large_dimensions.pdf's image with a floor of 0.05 s
    manifest = run(tmp_path, "large_dimensions.pdf", image_floor_seconds=0.05,
                   seconds_per_megapixel=0.0)  # fmt: skip
    assert manifest.children[0].quarantine_reason == "decode_timeout"


def _kill_first_decoder_after(delay: float, killed: list[int]) -> None:
    """Kill the first child of this process that has lived `delay` seconds (an OOM killer): the
    decoder busy with the large image, not the planning walk's child, gone in milliseconds."""
    deadline, born = time.monotonic() + 20, {}
    while time.monotonic() < deadline and not killed:
        now = time.monotonic()
        alive = {pid for task in Path(f"/proc/{os.getpid()}/task").iterdir()
                 for pid in (task / "children").read_text().split()}  # fmt: skip
        born = {pid: born.get(pid, now) for pid in alive}
        for pid, since in born.items():
            if now - since >= delay:
                os.kill(int(pid), 9)
                killed.append(int(pid))
                return
        time.sleep(0.005)


def test_a_caller_that_holds_the_results_does_not_run_down_the_decoders_clocks(tmp_path):
    # A stalled upload or a slow store holds the caller between two results for longer than an
    # image's budget. The decoders wait on it (their socket is full) or finish early; either
    # way that time is not theirs, and good images must not become `decode_timeout`.
    settings = DecodeSettings(image_seconds=1.0, image_floor_seconds=1.0, seconds_per_megapixel=0,
                              processes=2)  # fmt: skip
    limits = PipelineSettings(tmp_path).limits
    pdf = fixture_pdf("monthly_report.pdf")
    results = []
    for item in decode_pages(pdf, [1, 2, 3, 4], limits, settings, 600.0):
        results.append(item)
        if len(results) == 1:
            time.sleep(1.5)  # past every busy child's per-image deadline
    reasons = {i.outcome.reason for i in results if i.outcome is not None}
    assert "decode_timeout" not in reasons
    calm = list(decode_pages(pdf, [1, 2, 3, 4], limits, settings, 600.0))
    assert sorted((i.page, i.index) for i in results) == sorted((i.page, i.index) for i in calm)


def test_a_decoder_killed_mid_image_quarantines_that_image_and_the_rest_go_on(
    tmp_path, small_report
):
    killed: list[int] = []
    watcher = threading.Thread(target=_kill_first_decoder_after, args=(0.15, killed))
    watcher.start()
    manifest = run(tmp_path, "large_dimensions.pdf", processes=1)
    watcher.join()
    assert killed
    (child,) = manifest.children
    assert (child.quarantine_reason, child.quarantine_detail) == (
        "decoder_crashed", "the decoder died with signal 9",
    )  # fmt: skip
    again = run(tmp_path / "again", small_report, processes=1)
    assert again.counts.archived == 9  # a fresh pool decodes the rest as usual


def test_a_report_over_its_cpu_budget_is_refused_as_a_dead_letter(tmp_path):
    with pytest.raises(RefusedInput) as refused:
        run(tmp_path, "monthly_report.pdf", processes=1, report_cpu_seconds=0.3,
            min_task_cpu_seconds=0.0)  # fmt: skip
    assert refused.value.code == "cpu_budget_exceeded"


@wire.message("test_confined_facts")
class ConfinedFacts:
    fds: list
    socket: int
    env: dict
    cpu: int
    core: int
    address_space: int


def _report_facts(sock: socket.socket) -> None:
    fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
    limit = {name: resource.getrlimit(which)[0] for name, which in
             (("cpu", resource.RLIMIT_CPU), ("core", resource.RLIMIT_CORE),
              ("address_space", resource.RLIMIT_AS))}  # fmt: skip
    facts = ConfinedFacts(fds=fds, socket=sock.fileno(), env=dict(os.environ), **limit)
    wire.send(sock, facts)


def test_a_decoder_keeps_only_its_socket_no_environment_and_its_limits():
    child = spawn(_report_facts, Confinement(256 << 20, 7))
    facts, _ = wire.receive(child.sock)
    status, _ = child.reap()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert facts.env == {} and facts.cpu == 7 and facts.core == 0
    others = set(facts.fds) - {0, 1, 2, facts.socket}
    assert len(others) == 1  # the one listdir opened to read /proc/self/fd
    assert 256 << 20 < facts.address_space < (256 << 20) + (8 << 30)


def test_settings_default_to_one_decoder_per_core():
    assert DecodeSettings().pool_size() == os.cpu_count()
    assert replace(DecodeSettings(), processes=3).pool_size() == 3


def test_mupdf_running_out_of_the_address_space_limit_is_a_memory_error_not_bad_bytes():
    """Pillow or MuPDF may be the one to hit the limit first; either way it is `memory_limit`."""
    doc = pymupdf.open(fixture_pdf("large_dimensions.pdf"))
    xref = doc.get_page_images(0)[0][0]
    read, write = os.pipe()
    if (pid := os.fork()) == 0:  # the limit applies to a child, as in the decoder pool
        size = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (size + (16 << 20),) * 2)
        try:
            per_image._mupdf_decode(doc, xref)
            outcome = b"decoded"
        except MemoryError:
            outcome = b"MemoryError"
        except BaseException as error:
            outcome = type(error).__name__.encode()
        os.write(write, outcome)
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 100) == b"MemoryError"


def test_an_allocation_that_fails_in_python_during_mupdfs_decode_is_memory_not_bad_bytes(
    monkeypatch,
):
    """Under the address-space limit the samples' copy into Python can be what fails (seen when
    the parent had spare heap in other arenas): that is `memory_limit`, never `undecodable`."""
    doc = pymupdf.open(fixture_pdf("large_dimensions.pdf"))
    xref = doc.get_page_images(0)[0][0]

    def no_memory(*_args):
        raise MemoryError

    monkeypatch.setattr(per_image.normalize, "pixmap_image", no_memory)
    with pytest.raises(MemoryError):
        per_image._mupdf_decode(doc, xref)
