#!/usr/bin/env python3
"""A pre_tool_use hook: the agent may look orders up, but never cancel one by itself.

tether runs it before every tool call its matcher names (``mcp__orders__*`` in
examples/triage.agent), with the call as JSON on stdin::

    {"event": "pre_tool_use", "data": {"tool_name": "mcp__orders__cancel_order",
     "arguments": {"order_id": "7731"}, "server": "orders", "call_id": "...", ...}, ...}

Answering ``{"block": true, "reason": ...}`` refuses the call: the tool is not run, the model
reads the reason, and permission_denied fires (kind "hook"). No answer lets it through.
"""

import json
import sys

call = json.load(sys.stdin)["data"]
if call["tool_name"].endswith("__cancel_order"):
    order = call["arguments"].get("order_id", "?")
    reason = f"cancelling order {order} needs a person: opened a ticket for the orders team"
    print(json.dumps({"block": True, "reason": reason}))
