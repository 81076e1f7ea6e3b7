"""Resources: where reports come from, where the archive lives, and the worker's limits.

The three roots (`inbox.root`, `store.root`, `settings.work_root`: where things live) belong to
the deployment, never to a run. They have no class default: defs/deployment/deployment.py
wires each one,
as `dg.EnvVar` when its variable is set or as the embedded default (var/inbox, var/store,
var/work), and no resource reads the environment itself. Required fields are the safety net:
a run whose run config gives a resource any field replaces everything the resource was built
with (Dagster applies run config to the whole resource, and missing fields take the class
defaults), so a root with a class default would silently become that default: decoded
material outside the configured work root, say. Without one, such run config is refused before
the run starts ("Missing required config entry"); run config that names the root too is
honoured. Per-run knobs are op config instead (`stage_report`'s `pages_per_task`).
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.sources import LocalInboxSource, ReportSource
from report_pipeline.core.model.settings import (
    EXTRACTOR_VERSION,
    DecodeSettings,
    Limits,
    PipelineSettings,
    RetentionPolicy,
    ReviewSettings,
    TaskSizing,
)
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import Store


def root_path(value: str, field: str) -> Path:
    """A root as a Path, refusing the two values that would put material where nobody
    configured it: an unresolved `dg.EnvVar` (a resource used without Dagster building it holds
    the variable's *name*) and an empty value (the working directory)."""
    if isinstance(value, dg.EnvVar):
        raise ValueError(
            f"{field} is dg.EnvVar({value.env_var_name!r}), not resolved yet: build the resource "
            "(a run, a sensor or dg.build_resources) before using it"
        )
    if not value:
        raise ValueError(f"{field} is empty: give it a folder (unset variable: the default)")
    return Path(value)


class SourceSpec(dg.Config):
    """One more report source: a local directory (`root`) or an S3 bucket/prefix (`bucket`)."""

    name: str  # the source's slug; part of its report ids
    root: str = ""
    bucket: str = ""
    prefix: str = ""
    # S3-compatible endpoints (MinIO, a test server); empty: $REPORT_PIPELINE_S3_ENDPOINT,
    # $AWS_ENDPOINT_URL or AWS. Region empty: $AWS_REGION. Credentials: boto3's usual chain.
    endpoint_url: str = ""
    region: str = ""


class InboxResource(dg.ConfigurableResource):
    """The report sources: each holds `<YYYY-MM>/*.pdf`. The embedded default is one local
    inbox named `inbox`; `extra_sources` adds local folders or S3 bucket/prefixes. The sensor
    watches them all; a run reads the source its intake chose (or this primary inbox)."""

    root: str  # the primary inbox (deployment: $REPORT_PIPELINE_INBOX or var/inbox)
    name: str = "inbox"  # the source's slug; part of every report id
    extra_sources: list[SourceSpec] = []
    settle_seconds: int = 2  # a file changed more recently than this is still arriving

    def report_sources(self) -> list[ReportSource]:
        primary = LocalInboxSource(self.name, root_path(self.root, "inbox.root"))
        return [primary, *(_build(spec) for spec in self.extra_sources)]

    def source(self, name: str = "") -> ReportSource:
        """The named source ("" = the primary inbox)."""
        for source in self.report_sources():
            if source.name == (name or self.name):
                return source
        raise RefusedInput("unknown_source", "the source chosen at intake is not configured")


def _build(spec: SourceSpec) -> ReportSource:
    if spec.bucket:
        from report_pipeline.core.intake.s3_source import S3PrefixSource  # botocore
        from report_pipeline.defs.deployment.s3_clients import (
            s3_source_client,  # dagster_aws: ~0.4 s
        )

        client = s3_source_client(spec.endpoint_url, spec.region)
        return S3PrefixSource(spec.name, spec.bucket, spec.prefix, client)
    return LocalInboxSource(spec.name, spec.root)


class StoreResource(dg.ConfigurableResource):
    """The private store for staged sources, work material and the archive: a local folder.
    The production deployment uses `S3StoreResource` (a subclass, same `get_store()`) from
    `production_store_resource()`."""

    root: str  # deployment: $REPORT_PIPELINE_STORE or var/store

    def get_store(self) -> Store:
        return LocalStore(root_path(self.root, "store.root"))


class PipelineSettingsResource(dg.ConfigurableResource):
    """Limits, retention clocks and task granularity for the workers: the deployment's, for
    every run (per run: `stage_report`'s op config)."""

    work_root: str  # deployment: $REPORT_PIPELINE_WORK or var/work (keep on encrypted disk)
    max_report_bytes: int = Limits.max_report_bytes
    max_pages: int = Limits.max_pages
    max_image_stream_bytes: int = Limits.max_image_stream_bytes
    max_image_pixels: int = Limits.max_image_pixels
    max_image_side: int = Limits.max_image_side
    refuse_repaired: bool = Limits.refuse_repaired  # True: a PDF MuPDF must repair is `damaged`
    refuse_encrypted: bool = Limits.refuse_encrypted  # True: permission-only encryption refused
    # True: images a viewer does not show (layers switched off, hidden annotations) are
    # archived too, each record saying why it is hidden (docs/operate.md)
    archive_hidden: bool = Limits.archive_hidden
    work_minutes: int = RetentionPolicy.work_minutes
    archive_days: int = RetentionPolicy.archive_days
    lease_minutes: int = RetentionPolicy.lease_minutes
    pages_per_task: int = TaskSizing.pages_per_task  # 0: group pages by estimated work
    target_task_units: float = TaskSizing.target_units  # see core/plan/sizing.py
    decoders: int = 0  # isolated decoder processes per task; 0: one per core
    decoder_memory_mib: int = DecodeSettings.memory_bytes // 2**20
    decode_image_seconds: float = DecodeSettings.image_seconds  # the most one image may take
    decode_image_floor_seconds: float = DecodeSettings.image_floor_seconds
    decode_seconds_per_megapixel: float = DecodeSettings.seconds_per_megapixel
    report_cpu_seconds: float = DecodeSettings.report_cpu_seconds
    walk_cpu_seconds: float = DecodeSettings.walk_cpu_seconds  # finding every page's images
    walk_seconds: float = DecodeSettings.walk_seconds
    # Quarantine review (core/review/): the ceilings an accept may lift a cap to
    review_max_image_pixels: int = ReviewSettings.max_image_pixels
    review_max_image_side: int = ReviewSettings.max_image_side
    # days a rejected image's evidence is kept after the decision (0: the archive clock)
    review_rejected_evidence_days: int = ReviewSettings.rejected_evidence_days
    # the version runs extract with (deployment: defs/deployment/extractor.py, the same as the
    # assets' code_version); a new version re-extracts a month into a revision that replaces it
    extractor_version: str = EXTRACTOR_VERSION

    def settings(self) -> PipelineSettings:
        limits = Limits(
            max_report_bytes=self.max_report_bytes, max_pages=self.max_pages,
            max_image_stream_bytes=self.max_image_stream_bytes,
            max_image_pixels=self.max_image_pixels, max_image_side=self.max_image_side,
            refuse_repaired=self.refuse_repaired, refuse_encrypted=self.refuse_encrypted,
            archive_hidden=self.archive_hidden,
        )  # fmt: skip
        retention = RetentionPolicy(work_minutes=self.work_minutes, archive_days=self.archive_days,
                                    lease_minutes=self.lease_minutes)  # fmt: skip
        root = root_path(self.work_root, "settings.work_root")
        decode = DecodeSettings(
            processes=self.decoders, memory_bytes=self.decoder_memory_mib * 2**20,
            image_seconds=self.decode_image_seconds,
            image_floor_seconds=self.decode_image_floor_seconds,
            seconds_per_megapixel=self.decode_seconds_per_megapixel,
            report_cpu_seconds=self.report_cpu_seconds,
            walk_cpu_seconds=self.walk_cpu_seconds, walk_seconds=self.walk_seconds,
        )  # fmt: skip
        review = ReviewSettings(
            max_image_pixels=self.review_max_image_pixels,
            max_image_side=self.review_max_image_side,
            rejected_evidence_days=self.review_rejected_evidence_days,
        )  # fmt: skip
        return PipelineSettings(root, limits, retention, self.extractor_version, decode, review)
