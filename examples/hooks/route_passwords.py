#!/usr/bin/env python3
"""user_prompt_submit hook: password tickets go to the identity team, not to this agent.

{"block": true, "reason": "..."} refuses the run: the event is dead-lettered with reason
"blocked by hook" and this text as its error, before any model call or budget is spent.
The manifest marks this hook fail_closed, so if it crashes or times out the ticket is refused
too, never let through by accident.
"""

import json
import sys

event = json.load(sys.stdin)
prompt = event["data"]["prompt"].lower()

if "password" in prompt:
    print(json.dumps({"block": True, "reason": "password resets go to the identity team"}))
