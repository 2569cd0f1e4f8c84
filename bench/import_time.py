"""Wall time and peak memory of ``import tether`` in fresh interpreters.

Run: ``.venv/bin/python bench/import_time.py``. Each sample is a new process that times the
import itself (interpreter start-up excluded) and reports its peak RSS afterwards; the bare
interpreter's peak RSS is shown beside it.

Target (issue 2): ``import tether`` at most 200 ms; (issue 19) at most 200 ms with
``tether.HookConfig`` touched. The rows below break the HookConfig cost down: pydantic's own
import (a floor tether cannot lower), pydantic's plugin scan (it reads the entry points of every
installed package once, so a large environment pays more), and the first HookConfig declared
(its validator is built then: ``defer_build``, see hooks/_config.py).

Target (issue 28): ``from tether import HookConfig, AgentProcess`` at most 150 ms. Every
pydantic model a process's configuration uses is ``defer_build`` too, so importing the names
builds no validator and does not run pydantic's plugin scan: the first ``ProcessConfig`` (or
``AgentProcess``) built pays them, shown in its own row.

The samples run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` is dropped from their
environment, and one untimed run writes the caches first), as an installed package runs: with
it set, each sample would compile every tether module from source (about 100 ms more).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

SAMPLES = 11
#: The rows with a target, and its milliseconds.
TARGETS_MS = {
    "import tether": 200,
    "import tether; tether.HookConfig": 200,
    "from tether import HookConfig, AgentProcess": 150,
}

PROBE = """
import json, resource, sys, time
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": elapsed, "rss_kib": rss_kib, "modules": len(sys.modules)}}))
"""


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def sample(statement: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement)],
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    rows = [
        ("(bare interpreter)", "pass"),
        ("import pydantic (the floor)", "import pydantic; pydantic.BaseModel"),
        (
            "  + its plugin scan",
            "import pydantic; from pydantic.plugin._loader import get_plugins; get_plugins()",
        ),
        ("import tether", "import tether"),
        ("import tether; tether.HookConfig", "import tether; tether.HookConfig"),
        (
            "  + the first HookConfig(...)",
            "import tether; tether.HookConfig(event='task_created', command=['true'])",
        ),
        (
            "from tether import HookConfig, AgentProcess",
            "from tether import HookConfig, AgentProcess",
        ),
        (
            "  + the first AgentProcess(...)",
            "from tether import HookConfig, AgentProcess; AgentProcess('p')",
        ),
    ]
    sample("from tether import HookConfig, AgentProcess; AgentProcess('p')")  # writes caches
    print(f"fresh interpreters, median (and best) of {SAMPLES}")
    print(f"{'':<46}{'import ms':>10}{'best ms':>9}{'peak RSS MiB':>14}{'modules':>9}")
    for label, statement in rows:
        samples = [sample(statement) for _ in range(SAMPLES)]
        ms = statistics.median(s["seconds"] for s in samples) * 1e3
        best = min(s["seconds"] for s in samples) * 1e3
        rss = statistics.median(s["rss_kib"] for s in samples) / 1024
        modules = statistics.median(s["modules"] for s in samples)
        print(f"{label:<46}{ms:>10.1f}{best:>9.1f}{rss:>14.1f}{modules:>9.0f}")
        target = TARGETS_MS.get(label)
        if target is not None:
            verdict = "ok" if ms <= target else "OVER"
            print(f"{'':<4}target {target} ms: {verdict}")


if __name__ == "__main__":
    main()
