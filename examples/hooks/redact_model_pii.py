#!/usr/bin/env python3
"""pre_model_call hook: mask e-mail addresses and card numbers in every message before the
request leaves for the model provider (tool results included, which user_prompt_submit never
sees).

A command hook reads the event as JSON on stdin. To change the request it writes
{"data": {...}} to stdout with the new "messages"; the process checks them (a malformed
message is this hook's error, and the original request is sent). Writing nothing means
"send it unchanged".
"""

import json
import re
import sys

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
CARD = re.compile(r"\b(?:\d[ -]?){13,16}\b")


def mask(text: str) -> str:
    return CARD.sub("[card]", EMAIL.sub("[email]", text))


event = json.load(sys.stdin)
messages = event["data"]["messages"]
masked = [
    dict(m, content=mask(m["content"])) if isinstance(m.get("content"), str) else m
    for m in messages
]

if masked != messages:
    data = dict(event["data"], messages=masked)
    print(json.dumps({"data": data, "log": "masked personal data before the provider"}))
