"""The embedded default's IO manager: Dagster's filesystem layout (pickles under
DAGSTER_HOME/storage/, at the paths Dagster's own FilesystemIOManager uses, so a re-execution
finds what an earlier run wrote), with every path it shows relative to that folder. Dagster's
own puts the absolute path in each materialization's metadata, which shows the machine's layout
in the UI for nothing.

Written on `dg.IOManager` with pathlib rather than on `dg.UPathIOManager`, which the first
version subclassed: that one writes a DEBUG line for every output written and every input read
("Writing the output under ..."), and at the committed `python_log_level: DEBUG` each line is an
event in the run's log (10 a report run, ~5 ms each in every run worker; nothing in them that
the run's HANDLED_OUTPUT and LOADED_INPUT events do not say: bench/HISTORY.md, "A run worker's
own cost")."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import dagster as dg


def _parts(context: dg.OutputContext | dg.InputContext) -> list[str]:
    """Dagster's layout: `<asset key>[/<partition>]` for an asset, else
    `<run id>/<step key>/<output>[/<mapping key>]` (the run that wrote it, for an input)."""
    if context.has_asset_key:
        return list(context.get_asset_identifier())  # one partition: none of ours loads a range
    return list(context.get_identifier())


class _Pickles(dg.IOManager):
    """Pickles under `base`, at `_parts`; the materialization's "path" relative to `base`."""

    def __init__(self, base: Path):
        self.base = base

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        parts = _parts(context)
        path = self.base.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            pickle.dump(obj, handle, pickle.HIGHEST_PROTOCOL)
        if obj is not None:  # as Dagster's: no path for an output that holds nothing
            context.add_output_metadata({"path": dg.MetadataValue.path("/".join(parts))})

    def load_input(self, context: dg.InputContext) -> Any:
        with self.base.joinpath(*_parts(context)).open("rb") as handle:
            return pickle.load(handle)


class LocalIOManager(dg.ConfigurableIOManagerFactory):
    """Op outputs as pickles under `base_dir` (default: the instance's storage folder,
    DAGSTER_HOME/storage), shown by their path relative to it."""

    base_dir: str | None = None

    def create_io_manager(self, context: dg.InitResourceContext) -> _Pickles:
        return _Pickles(Path(self.base_dir or context.instance.storage_directory()))
