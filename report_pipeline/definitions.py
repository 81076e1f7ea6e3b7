"""The one place the Dagster definitions are assembled."""

import dagster as dg

from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.jobs import extract_report_job
from report_pipeline.defs.resources import InboxResource, StoreResource, WorkerResource

defs = dg.Definitions(
    assets=[report_manifest],
    jobs=[extract_report_job],
    resources={
        "inbox": InboxResource(),
        "store": StoreResource(),
        "settings": WorkerResource(),
    },
    executor=dg.in_process_executor,
)
