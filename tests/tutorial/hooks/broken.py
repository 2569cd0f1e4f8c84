#!/usr/bin/env python3
"""A command hook that is broken: it exits 2 with a message on stderr."""
import sys

sys.stdin.read()
print("cannot reach the ticket database", file=sys.stderr)
sys.exit(2)
