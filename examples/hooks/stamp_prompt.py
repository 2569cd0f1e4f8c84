#!/usr/bin/env python3
"""A command hook: the event arrives as JSON on stdin, the answer leaves as JSON on stdout.

It prefixes the prompt with the process name (from TETHER_PROCESS, one of the few variables a
hook program gets) and returns the whole data object, which replaces the event's data.
"""

import json
import os
import sys

event = json.load(sys.stdin)
data = event["data"]
data["prompt"] = f"[{os.environ['TETHER_PROCESS']}] {data['prompt']}"
json.dump({"data": data, "log": f"stamped a {event['event']} event"}, sys.stdout)
