#!/usr/bin/env python3
"""task_completed hook: append one JSON line per finished event to an audit log.

The program gets a minimal environment: AUDIT_LOG is set by the manifest (env:), and
TETHER_HOOK_EVENT / TETHER_PROCESS name the event and the process. API keys of the runtime
are not passed to hook programs.
"""

import json
import os
import sys

event = json.load(sys.stdin)
data = event["data"]

path = os.environ["AUDIT_LOG"]
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "a", encoding="utf-8") as log:
    log.write(
        json.dumps(
            {
                "at": event["timestamp"],
                "process": os.environ["TETHER_PROCESS"],
                "event_id": data["event_id"],
                "trigger": data["trigger_id"],
                "outcome": data["outcome"],
                "error": data["error"],
            }
        )
        + "\n"
    )
