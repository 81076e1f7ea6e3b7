"""`report_manifest`'s job for re-execution tests, rebuilt by `dg.reconstructable` in any
process (a run worker to kill, a re-execution). Its resources' roots are wired from the
environment where the job is built (REPORT_PIPELINE_INBOX/STORE/WORK, as dg.EnvVar), as the
project's are, and the store fails on demand (REEXEC_FAULT="<method>:<failures>", or with
":<key pattern>" only the calls on matching keys count; counted in <store>.faults)."""

import os

import dagster as dg

from devstack.faults import FaultPlan, FaultyStore
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.deployment import (
    EXECUTOR,
    INBOX_ENV,
    STORE_ENV,
    WORK_ENV,
    root,
)
from report_pipeline.defs.deployment.io_manager import LocalIOManager
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import manifest_table

FAULT = "REEXEC_FAULT"
PAGES_PER_TASK = 20  # the fixture's 140 pages as 7 tasks: a fan-out worth resuming


class FaultOnDemandStore(StoreResource):
    def get_store(self) -> Store:
        store = super().get_store()
        if not (fault := os.environ.get(FAULT)):
            return store
        method, failures, *key = fault.split(":")  # a third part: the keys that count
        counter = f"{store.root}.faults"
        plan = FaultPlan(method=method, method_key="".join(key), failures=int(failures),
                         kind="permanent", counter=counter)  # fmt: skip
        return FaultyStore(store, plan)


def job() -> dg.JobDefinition:
    defs = dg.Definitions(
        assets=[report_manifest, manifest_table],
        jobs=[extract_report_job],
        resources={
            "inbox": InboxResource(root=root(INBOX_ENV)),
            "store": FaultOnDemandStore(root=root(STORE_ENV)),
            "settings": PipelineSettingsResource(
                work_root=root(WORK_ENV), pages_per_task=PAGES_PER_TASK
            ),
            "checks": CheckSettingsResource(),
            "io_manager": LocalIOManager(),  # the embedded default's: re-executions read it
        },
        executor=EXECUTOR,
    )
    return defs.resolve_job_def("extract_report_job")
