"""Test doubles shipped with tether: ``FakeLLM``, a real OpenAI-compatible HTTP server.

Importing this package imports starlette and uvicorn; ``import tether`` never does.
"""

from ._fake_llm import FakeLLM as FakeLLM

__all__ = ["FakeLLM"]
