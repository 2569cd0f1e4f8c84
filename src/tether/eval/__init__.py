"""The eval harness: scenario packs, the runner with its run-level hook points, and reports.

``tether eval run PACK --hook NAME --out runs/`` from the command line; in code::

    from tether.eval import load_pack, run_pack

    result = await run_pack(load_pack("pack.yaml"), hooks=["debrief"], out="runs/")
    result.exit_code  # 0 when every scenario reached its pass rate

Run-level points are methods of ``tether.Plugin`` (see ``RUN_POINTS``), called in the order of
``hooks`` with a :class:`RunContext`; see docs/eval.md.
"""

import warnings
from typing import Any

from ..hooks import RUN_POINTS as RUN_POINTS
from ._context import RunContext as RunContext
from ._context import knob_name as knob_name
from ._debrief import DebriefHook as DebriefHook
from ._folder import SavedRun as SavedRun
from ._folder import is_trace_file as is_trace_file
from ._folder import load_runs as load_runs
from ._hooks import available_hooks as available_hooks
from ._hooks import resolve_hooks as resolve_hooks
from ._pack import LoadedPack as LoadedPack
from ._pack import Pack as Pack
from ._pack import PackError as PackError
from ._pack import available_scorers as available_scorers
from ._pack import load_pack as load_pack
from ._pack import pack_json_schema as pack_json_schema
from ._pack import render_pack_schema as render_pack_schema
from ._probe import IsolationProbe as IsolationProbe
from ._probe import StateProbeHook as StateProbeHook
from ._report import Report as Report
from ._report import junit_xml as junit_xml
from ._report import report_folder as report_folder
from ._runner import PackResult as PackResult
from ._runner import Progress as Progress
from ._runner import run_pack as run_pack

__all__ = [
    "RUN_POINTS",
    "DebriefHook",
    "IsolationProbe",
    "LoadedPack",
    "Pack",
    "PackError",
    "PackResult",
    "Progress",
    "Report",
    "RunContext",
    "SavedRun",
    "StateProbeHook",
    "available_hooks",
    "available_scorers",
    "is_trace_file",
    "junit_xml",
    "knob_name",
    "load_pack",
    "load_runs",
    "pack_json_schema",
    "report_folder",
    "resolve_hooks",
    "run_pack",
]


def __getattr__(name: str) -> Any:
    # RunRecord was this package's name for a run found in a folder; the hook engine's
    # RunRecord is something else (one hook run being recorded), so this one is SavedRun now.
    if name == "RunRecord":
        warnings.warn(
            "tether.eval.RunRecord is deprecated; use tether.eval.SavedRun",
            DeprecationWarning,
            stacklevel=2,
        )
        return SavedRun
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
