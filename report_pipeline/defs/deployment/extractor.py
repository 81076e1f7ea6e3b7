"""The extractor version a code location runs, read when the definitions load: the assets'
`code_version` (so the UI marks months archived by an older extractor as changed) and the
`settings` resource's (so runs extract with it). `REPORT_PIPELINE_EXTRACTOR_VERSION` overrides
the one the code carries (core/model/settings.py EXTRACTOR_VERSION), to try an upgrade without
editing code (tests, a staging deployment); it must be a whole number. Restart the code location
after changing it."""

import os

from report_pipeline.core.model.settings import EXTRACTOR_VERSION

EXTRACTOR_VERSION_ENV = "REPORT_PIPELINE_EXTRACTOR_VERSION"


def extractor_version() -> str:
    version = os.environ.get(EXTRACTOR_VERSION_ENV) or EXTRACTOR_VERSION
    if not version.isdecimal():
        raise ValueError(f"{EXTRACTOR_VERSION_ENV}={version!r}: expected a whole number")
    return version
