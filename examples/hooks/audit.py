#!/usr/bin/env python3
"""task_completed hook: append one JSON line per finished event to an audit log.

The program gets a minimal environment: TRIAGE_AUDIT_LOG reaches it only because the manifest
names it in env_passthrough, and TETHER_HOOK_EVENT / TETHER_PROCESS name the event and the
process. API keys of the runtime are not passed to hook programs.
"""

import json
import os
import sys

event = json.load(sys.stdin)
data = event["data"]

default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "out", "audit.jsonl")
path = os.environ.get("TRIAGE_AUDIT_LOG") or default
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
