"""`make demo`: put the sample report in the local inbox and materialize its monthly partition.

The run goes into the embedded default instance (DAGSTER_HOME=dagster_home), so `make dev`
shows it afterwards. `make demo-production` runs this same module on the production instance
(devstack/deploy_local.py), where the store is on S3: the manifest is read through the
deployment's store resource.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import dagster as dg

from report_pipeline.core.archive.summary import summary
from report_pipeline.core.intake.s3_source import S3PrefixSource
from report_pipeline.core.model.store_json import read_manifest
from report_pipeline.core.storage.store import Store
from report_pipeline.definitions import defs
from report_pipeline.defs.deployment.deployment import PRODUCTION, deployment

SAMPLE = Path("fixtures/pdfs/monthly_report.pdf")
# The console shows warnings only; every event is still in the run's log in the UI.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def place_sample(month: str) -> str:
    """Put the sample report where the deployment's primary report source reads `month`: the
    local inbox folder, or its S3 bucket/prefix (make demo-production). Returns where, for a
    person; an existing copy is left as it is."""
    with dg.build_resources({"inbox": defs.resources["inbox"]}) as built:
        source = built.inbox.source()
    if isinstance(source, S3PrefixSource):
        key = f"{source.prefix}{month}/{SAMPLE.name}"
        listed = source.client.list_objects_v2(Bucket=source.bucket, Prefix=key, MaxKeys=1)
        if not listed.get("KeyCount"):
            source.client.put_object(
                Bucket=source.bucket, Key=key, Body=SAMPLE.read_bytes(),
                ServerSideEncryption="AES256",
            )  # fmt: skip
        return f"s3://{source.bucket}/{key}"
    inbox = Path(source.root) / month
    inbox.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = inbox / SAMPLE.name
    if not target.exists():
        shutil.copyfile(SAMPLE, target)
    return str(target)


def location(store: Store, key: str) -> str:
    """Where a stored key is, for a person: a path (local store) or an s3:// URL."""
    if hasattr(store, "bucket"):
        return f"s3://{store.bucket}/{store.prefix}{key}"
    return str(store.root / key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--month", default="2026-10")
    args = parser.parse_args(argv)
    print(f"Sample report: {place_sample(args.month)}")
    job = defs.resolve_job_def("extract_report_job")
    with dg.DagsterInstance.get() as instance:
        result = job.execute_in_process(
            partition_key=args.month, instance=instance, raise_on_error=False, run_config=QUIET
        )
    if not result.success:
        failures = [e.message for e in result.all_events if e.is_step_failure]
        print("run failed:", *failures, sep="\n  ", file=sys.stderr)
        return 1
    published = result.output_for_node("report_manifest")
    with dg.build_resources({"store": defs.resources["store"]}) as built:  # the deployment's
        store = built.store.get_store()
        manifest = read_manifest(store, published.manifest_key)
    events = result.get_asset_materialization_events()
    (event,) = [e for e in events if e.asset_key.path == ["report_manifest"]]
    reused = event.materialization.metadata["reused_existing_manifest"].value
    checks = result.get_asset_check_evaluations()
    print(f"Dagster run {result.run_id} succeeded.")
    if reused:
        print("The report is unchanged since the last run: nothing was extracted or written.")
    print(summary(manifest, location(store, published.manifest_key)))
    for check in checks:  # the month's checks, as its partition shows them in the UI
        said = f": {check.description}" if check.description else ""
        verdict = "passed" if check.passed else f"failed ({check.severity.value}){said}"
        print(f"  check {check.check_name:<26} {verdict}")
    ui = "make dev-production" if deployment() == PRODUCTION else "make dev"
    print(f"Open the Dagster UI with `{ui}` (http://127.0.0.1:3000) to see the run and asset.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
