#!/usr/bin/env python3
"""user_prompt_submit hook: mask e-mail addresses and card numbers before the model sees them.

A command hook reads the event as JSON on stdin. To change the prompt it writes
{"data": {...}} to stdout: that object replaces the event data, and the process sends the
model the new "prompt". Writing nothing means "allow, unchanged".
"""

import json
import re
import sys

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
CARD = re.compile(r"\b(?:\d[ -]?){13,16}\b")

event = json.load(sys.stdin)
prompt = event["data"]["prompt"]
masked = CARD.sub("[card]", EMAIL.sub("[email]", prompt))

if masked != prompt:
    data = dict(event["data"], prompt=masked)
    print(json.dumps({"data": data, "log": "masked personal data"}))
