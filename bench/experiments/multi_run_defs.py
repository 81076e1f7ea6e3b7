"""The code location of `python -m bench.experiments.multi_run` (an experiment, not the product):
four monthly-partitioned assets doing the plain loop's work for each month (`run_report`,
decoding in the run's process, then the manifest table, into a fresh store per month), with one
partition-scoped check each, differing only in their backfill policy:

- `no_policy`: none, as report_manifest: one run per month, tagged `dagster/partition`;
- `one_per_run`: `BackfillPolicy.multi_run(1)`, one run per month, but a ranged run of one
  month (no `dagster/partition` tag: the dagster.yaml limits keyed on it do not hold it);
- `many_per_run_3`, `many_per_run_6`: `multi_run(max_partitions_per_run=3 / 6)`, the months of the
  run's range one after another in one op, each month's counts added to its own materialization
  (`add_asset_metadata(partition_key=...)`: Dagster 1.13 records one ASSET_MATERIALIZATION per
  partition of a ranged run), and one check result for the run (one per month fails the step).

The report and the scratch folder come from MULTI_RUN_REPORT and MULTI_RUN_SCRATCH. No
`from __future__ import annotations`: Dagster reads the `context` annotation when it defines the op.
"""

import os
import shutil
import tempfile
import warnings
from dataclasses import asdict
from pathlib import Path

import dagster as dg

from report_pipeline.core.archive.table import write_table
from report_pipeline.core.decode.child import decode_in_process
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore

MONTHS = dg.MonthlyPartitionsDefinition(start_date="2025-01-01", end_date="2025-07-01")
CHECK = "counts_recorded"
POLICIES = {"no_policy": None, "one_per_run": 1, "many_per_run_3": 3, "many_per_run_6": 6}


def one_month(month: str) -> dict[str, int]:
    """The plain loop's work for one month (bench/measure.py's `plain`): its manifest's counts."""
    scratch = Path(os.environ["MULTI_RUN_SCRATCH"])
    tmp = Path(tempfile.mkdtemp(prefix="month-", dir=scratch))
    try:
        store = LocalStore(tmp / "store")
        settings = PipelineSettings(tmp / "work")
        pdf = Path(os.environ["MULTI_RUN_REPORT"])
        manifest = run_report(store, pdf, settings, "inbox", month, 0, decode_in_process)
        write_table(store, manifest)
        return asdict(manifest.counts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _asset(name: str, per_run: int | None) -> dg.AssetsDefinition:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)  # partition-scoped checks
        warnings.simplefilter("ignore", dg.BetaWarning)  # backfill_policy
        spec = dg.AssetCheckSpec(CHECK, asset=name, partitions_def=MONTHS)

        @dg.asset(name=name, partitions_def=MONTHS, check_specs=[spec],
                  backfill_policy=per_run and dg.BackfillPolicy.multi_run(per_run))  # fmt: skip
        def _compute(context: dg.AssetExecutionContext):
            for key in context.partition_keys:
                counts = one_month(key[:7])
                context.add_asset_metadata({f"counts_{k}": v for k, v in counts.items()},
                                           partition_key=key)  # fmt: skip
            yield dg.MaterializeResult()
            # One result per check and op: a second one for the same check fails the step ("returned
            # an output ... multiple times"). In a ranged run it is stored without a partition and
            # the months' PLANNED check rows stay PLANNED (python -m bench.experiments.multi_run).
            yield dg.AssetCheckResult(check_name=CHECK, passed=True,
                                      metadata={"months": len(context.partition_keys)})  # fmt: skip

    return _compute


# in process, as the product runs its steps (report_pipeline/defs/deployment/deployment.py)
defs = dg.Definitions(
    assets=[_asset(name, n) for name, n in POLICIES.items()], executor=dg.in_process_executor
)
