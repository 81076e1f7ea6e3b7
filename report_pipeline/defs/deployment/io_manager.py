"""The embedded default's IO manager: Dagster's filesystem layout (pickles under
DAGSTER_HOME/storage/), with every path it shows relative to that folder. Dagster's own
FilesystemIOManager puts the absolute path in each materialization's metadata and its log
lines, which shows the machine's layout in the UI for nothing."""

from __future__ import annotations

import pickle
from typing import Any

import dagster as dg
from upath import UPath


def _relative(context: dg.OutputContext | dg.InputContext) -> str:
    parts = context.get_asset_identifier() if context.has_asset_key else context.get_identifier()
    return "/".join(parts)


class _RelativePaths(dg.UPathIOManager):
    """Pickles to `<base>/<asset key or run/step/output>[/<partition>]`, as Dagster's does."""

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        with path.open("wb") as handle:
            pickle.dump(obj, handle, pickle.HIGHEST_PROTOCOL)

    def load_from_path(self, context: dg.InputContext, path: UPath) -> Any:
        with path.open("rb") as handle:
            return pickle.load(handle)

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, dg.MetadataValue]:
        # replaces the absolute "path" UPathIOManager records
        return {"path": dg.MetadataValue.path(_relative(context))} if obj is not None else {}

    def get_writing_output_log_message(self, path: UPath) -> str:
        return f"Writing the output under DAGSTER_HOME/storage ({path.name})"

    def get_loading_input_log_message(self, path: UPath) -> str:
        return f"Loading the input from DAGSTER_HOME/storage ({path.name})"


class LocalIOManager(dg.ConfigurableIOManagerFactory):
    """Op outputs as pickles under `base_dir` (default: the instance's storage folder,
    DAGSTER_HOME/storage), shown by their path relative to it."""

    base_dir: str | None = None

    def create_io_manager(self, context: dg.InitResourceContext) -> _RelativePaths:
        base = self.base_dir or context.instance.storage_directory()
        return _RelativePaths(base_path=UPath(base))
