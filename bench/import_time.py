"""Wall time and peak memory of ``import tether`` in fresh interpreters.

Run: ``.venv/bin/python bench/import_time.py``. Each sample is a new process that times the
import itself (interpreter start-up excluded) and reports its peak RSS afterwards; the bare
interpreter's peak RSS is shown beside it.

Target (issue 2): ``import tether`` at most 200 ms; (issue 19) at most 200 ms with
``tether.HookConfig`` touched. The rows below break the HookConfig cost down: pydantic's own
import (a floor tether cannot lower), pydantic's plugin scan (it reads the entry points of every
installed package once, so a large environment pays more), and the first HookConfig declared
(its validator is built then: ``defer_build``, see hooks/_config.py).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

SAMPLES = 11
TARGET_MS = 200

PROBE = """
import json, resource, sys, time
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": elapsed, "rss_kib": rss_kib, "modules": len(sys.modules)}}))
"""


def sample(statement: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement)],
        check=True,
        capture_output=True,
        text=True,
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
    ]
    print(f"fresh interpreters, median of {SAMPLES}")
    print(f"{'':<36}{'import ms':>10}{'peak RSS MiB':>14}{'modules':>9}")
    for label, statement in rows:
        samples = [sample(statement) for _ in range(SAMPLES)]
        ms = statistics.median(s["seconds"] for s in samples) * 1e3
        rss = statistics.median(s["rss_kib"] for s in samples) / 1024
        modules = statistics.median(s["modules"] for s in samples)
        print(f"{label:<36}{ms:>10.1f}{rss:>14.1f}{modules:>9.0f}")
        if statement.startswith("import tether"):
            verdict = "ok" if ms <= TARGET_MS else "OVER"
            print(f"{'':<4}target {TARGET_MS} ms: {verdict}")


if __name__ == "__main__":
    main()
