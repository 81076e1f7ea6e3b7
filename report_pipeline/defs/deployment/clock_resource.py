from datetime import datetime

import dagster as dg

from report_pipeline.core.model.clock import parse_iso, utc_now


class ClockResource(dg.ConfigurableResource):
    """The janitor's and the retention checks' notion of "now": the real clock unless `fixed`
    (an ISO 8601 UTC time) is set, as tests and what-if audits do."""

    fixed: str = ""

    def now(self) -> datetime:
        return parse_iso(self.fixed) if self.fixed else utc_now()
