"""Twelve months, one run each, under injected storage faults, on both deployments: the embedded
default (LocalStore, sqlite instance) and production (S3 store on moto's server, Postgres).

The runs are `extract_report_job` executed in process, one partition after another, on the real
instance (not a daemon-launched backfill: 24 runs through the daemon's loop and the run queue
would take minutes). Faults come from REPORT_PIPELINE_STORAGE_FAULTS, wired where the deployment
builds the store; everything is read back through the store without faults."""

from __future__ import annotations

from bench.fault_runs import check_results, leftovers, months_from, run_months, verify_month
from report_pipeline.core.archive.keys import IMAGES
from report_pipeline.core.policy import MAX_TRIES
from report_pipeline.core.retention.revision_audit import revisions

# Seeded: the same faults on both stores. At 20% a step needs its 4th (last) attempt with
# probability 0.2**3 and dead-letters with 0.2**4; with this seed every step gets through.
SPEC = "transient=0.2,seed=7"
MONTHS = months_from("2025-01", 12)
PAGES_PER_TASK = 3  # three page groups a month: 9 steps


def test_a_12_month_backfill_under_20pct_transient_faults_archives_every_image_once(target):
    for month in MONTHS:
        target.drop(month)
    runs = run_months(target.job(SPEC), target.instance, MONTHS, PAGES_PER_TASK)

    assert all(run.success for run in runs), [run.row() for run in runs]
    retried = [run for run in runs if run.retries]
    assert len(retried) >= 6, "20% of ~108 step attempts should fault"
    for run in runs:
        manifest = verify_month(target.store, run)  # archived once; attempts = the steps'
        checks = check_results(target.instance, run.run_id)
        assert len(checks) == 5, checks
        pct = manifest.metrics.validated_first_attempt_pct
        for name, (passed, severity) in checks.items():
            # the first-attempt signal flags exactly the months whose image steps were retried
            want = pct >= 99.0 if name == "first_attempt_validation" else True
            assert passed == want, (run.month, name, severity, pct)
    assert max(a for run in runs for a in run.attempts.values()) <= MAX_TRIES
    image_retries = [
        run for run in runs
        if any(n > 1 for s, n in run.attempts.items() if "_pages[" in s)
    ]  # fmt: skip
    assert image_retries, "no extract/archive step was retried: nothing to reflect"
    for run in image_retries:
        assert verify_month(target.store, run).metrics.validated_first_attempt_pct < 100

    assert leftovers(target.store) == []  # no staged source, no outcomes left behind
    assert len(revisions(target.store)) == 12  # no revision without its month
    audit = target.audit_job().execute_in_process(instance=target.instance)
    results = audit.get_asset_check_evaluations()
    assert results and all(r.passed for r in results), [(r.check_name, r.passed) for r in results]


def test_a_permanent_fault_is_a_dead_letter_on_the_first_attempt(target):
    month = "2025-03"
    target.drop(month)
    spec = f"permanent=archive/inbox-{month}/*/{IMAGES}/*"
    (run,) = run_months(target.job(spec), target.instance, [month], PAGES_PER_TASK)

    assert not run.success
    extracts = {s: n for s, n in run.attempts.items() if ".extract_pages[" in s}
    assert len(extracts) == 3 and set(extracts.values()) == {1}, run.attempts  # no retry
    failures = [
        e.dagster_event for e in target.instance.all_logs(run.run_id)
        if e.dagster_event and e.dagster_event.is_step_failure
    ]  # fmt: skip
    assert {f.step_key for f in failures} == set(extracts)
    for failure in failures:
        error = failure.step_failure_data
        assert error.user_failure_data.metadata["attempts"].value == 1
        assert "dead letter after 1 attempt(s): injected permanent fault" in error.error.message
    listed = [o.key for o in target.store.list(f"archive/inbox-{month}/")]
    assert not [key for key in listed if f"/{IMAGES}/" in key]  # nothing written there
