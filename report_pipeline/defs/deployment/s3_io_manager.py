"""Op outputs on S3, as dagster_aws's `S3PickleIOManager` writes them, without reading back in
the same process what it has just written there.

Every output is still uploaded (a re-execution from failure, or a step in another process,
reads it from the bucket). What changes is a load in the process that wrote the object: the
run's steps on the in-process executor load each op output from the pickle this process
uploaded, instead of a GET that waits a round trip each (five per run of a month, one after
another: stage_report's two outputs, the page groups', bench.s3_latency). Only op outputs are
kept: their keys hold the run id and the step, and nobody writes them again, so the copy is the
object. An asset's output (one key per partition, which another run may overwrite) is always
read from the bucket. Copies of earlier runs are dropped when a run writes its first output;
none over `KEEP_BYTES` is kept.

An op that yields several outputs inside `op_outputs.uploaded_together` has them uploaded side by
side, each stored before its step can succeed (op_outputs.py).
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import dagster as dg
from dagster import UPathIOManager
from dagster_aws.s3 import PickledObjectS3IOManager, S3PickleIOManager
from pydantic import PrivateAttr
from upath import UPath

from report_pipeline.defs.deployment import op_outputs

KEEP_BYTES = 16 * 1024 * 1024  # the copies one run keeps in memory, all outputs together


class _KeepsItsOwnOutputs(PickledObjectS3IOManager):
    def __init__(self, s3_bucket: str, s3_session: Any, s3_prefix: str = "") -> None:
        # PickledObjectS3IOManager's own __init__, less its ListObjects (MaxKeys=1) of the
        # prefix: a round trip per run process to learn only that the bucket answers, which the
        # run's first upload tells as clearly (NoSuchBucket, AccessDenied)
        self.bucket, self.s3 = s3_bucket, s3_session
        UPathIOManager.__init__(self, base_path=UPath(s3_prefix) if s3_prefix else None)
        self._run_id = ""
        self._copies: dict[str, bytes] = {}

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        data, key = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), path.as_posix()

        def put() -> None:
            self.s3.upload_fileobj(io.BytesIO(data), self.bucket, key)

        if context.has_asset_key:
            put()
            return
        if context.run_id != self._run_id:
            self._run_id, self._copies = context.run_id, {}
        if sum(map(len, self._copies.values())) + len(data) <= KEEP_BYTES:
            self._copies[key] = data
        op_outputs.upload(context.run_id, context.step_key, put)  # beside the step's others

    def load_from_path(self, context: dg.InputContext, path: UPath) -> Any:
        data = self._copies.get(path.as_posix())
        if data is None:
            return super().load_from_path(context, path)
        return pickle.loads(data)


class RunLocalS3PickleIOManager(S3PickleIOManager):
    """`S3PickleIOManager` (same configuration, keys and objects) whose process loads the op
    outputs it wrote from its own copy (module docstring)."""

    _inner: _KeepsItsOwnOutputs | None = PrivateAttr(default=None)

    def inner_io_manager(self) -> PickledObjectS3IOManager:
        if self._inner is None:
            self._inner = _KeepsItsOwnOutputs(
                s3_bucket=self.s3_bucket,
                s3_session=self.s3_resource.get_client(),
                s3_prefix=self.s3_prefix,
            )
        return self._inner
