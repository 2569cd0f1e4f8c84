#!/usr/bin/env python3
"""A command hook: the event arrives as JSON on stdin, the answer goes to stdout."""
import json
import os
import sys

event = json.load(sys.stdin)
prompt = event["data"]["prompt"]

with open(os.environ["AUDIT_LOG"], "a") as log:  # AUDIT_LOG comes from the hook's env
    log.write(json.dumps({
        "event": os.environ["TETHER_HOOK_EVENT"],
        "process": os.environ["TETHER_PROCESS"],
        "event_id": event["data"]["event_id"],
        "queue": os.environ.get("TICKET_QUEUE"),          # passed through by name
        "sees_api_key": "OPENAI_API_KEY" in os.environ,   # not passed
    }) + "\n")

if "refund" in prompt.lower():
    print(json.dumps({"block": True, "reason": "refunds need a human"}))
# No output: allow the prompt unchanged.
