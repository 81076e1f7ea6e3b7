"""A small client for the GraphQL API of a running Dagster webserver (plain HTTP, no Dagster
import), used by `report-pipeline submit` to find earlier runs and to launch one, and by the
live tests and benchmarks (`call`)."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Callable

RUNS_QUERY = """
query Runs($filter: RunsFilter) {
  runsOrError(filter: $filter) {
    __typename
    ... on Runs { results { runId status } }
    ... on Error { message }
  }
}"""

LAUNCH_MUTATION = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on Error { message }
  }
}"""


class DagsterApiError(Exception):
    """The webserver could not be reached, or refused the request."""


def serving(url: str) -> bool:
    """Whether a Dagster webserver answers at `url` now (its /server_info)."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/server_info", timeout=2) as response:
            return response.status == 200
    except (OSError, http.client.HTTPException):  # not up yet, or another server on the port
        return False


def call(endpoint: str, query: str, variables: dict | None = None, timeout: float = 30.0) -> dict:
    """One GraphQL request to `endpoint` (`<webserver>/graphql`): its `data`, or DagsterApiError
    when the webserver is unreachable or answers with errors."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(
        endpoint, data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read(16 * 1024 * 1024))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DagsterApiError(f"Dagster webserver unavailable ({reason})") from None
    if payload.get("errors"):
        raise DagsterApiError(f"GraphQL error: {payload['errors'][0].get('message')}")
    return payload["data"]


class GraphQLLauncher:
    """Launches `job` on a code location through `<url>/graphql`, as the UI does."""

    def __init__(
        self, url: str, run_config_for: Callable[[dict], dict], location: str = "report_pipeline",
        job: str = "extract_report_job", timeout: float = 30.0,
    ) -> None:  # fmt: skip
        self.endpoint = url.rstrip("/") + "/graphql"
        self.run_config_for = run_config_for
        self.location = location
        self.job = job
        self.timeout = timeout

    def _call(self, query: str, variables: dict) -> dict:
        return call(self.endpoint, query, variables, self.timeout)

    def runs_tagged(self, key: str, value: str) -> list[tuple[str, str]]:
        variables = {"filter": {"tags": [{"key": key, "value": value}]}}
        result = self._call(RUNS_QUERY, variables)["runsOrError"]
        if result["__typename"] != "Runs":
            raise DagsterApiError(f"run lookup failed: {result.get('message')}")
        return [(run["runId"], run["status"]) for run in result["results"]]

    def launch(self, month: str, stage_config: dict[str, str], tags: dict[str, str]) -> str:
        all_tags = {"dagster/partition": month, **tags}
        params = {
            "selector": {
                "repositoryLocationName": self.location,
                "repositoryName": "__repository__",
                "jobName": self.job,
            },
            "runConfigData": self.run_config_for(stage_config),
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in all_tags.items()]},
        }
        result = self._call(LAUNCH_MUTATION, {"params": params})["launchRun"]
        if result["__typename"] == "LaunchRunSuccess":
            return result["run"]["runId"]
        detail = result.get("message") or "; ".join(e["message"] for e in result.get("errors", []))
        raise DagsterApiError(f"launch refused ({result['__typename']}): {detail}")
