#!/usr/bin/env python3
"""user_prompt_submit hook as a persistent co-process: started once, it answers every event.

Declared with ``persistent: true`` (see examples/triage.agent or docs/executors-kinds.md), this
script is started on the first event and kept running: each event arrives as one JSON line
and is answered as one line, so a ticket costs a fraction of a millisecond instead of a
Python start-up (~15 ms or more). It needs ``tether`` importable (run it with the Python that
has tether installed: ``${TETHER_PYTHON}`` in the manifest).

Password tickets are refused (the event is dead-lettered "blocked by hook" with this reason);
every other prompt gets the team's house rule appended. The ``log`` of each answer says how
many events this one program has seen: the count keeps growing, as it is one process.
"""

from typing import Any

from tether.hookserver import Block, serve

HOUSE_RULE = "Answer with a priority (P1-P3) and a team."
seen = 0


@serve
def handle(event: dict[str, Any]) -> dict[str, Any]:
    global seen
    seen += 1
    data = event["data"]
    prompt = str(data.get("prompt", ""))
    if "password" in prompt.lower():
        raise Block("password resets go to the identity team")
    if HOUSE_RULE not in prompt:
        data = {**data, "prompt": f"{prompt}\n\n{HOUSE_RULE}"}
    return {"data": data, "log": f"policy server: event {seen} of this process"}
