"""The version of tether (one place; pyproject.toml says the same, a test checks it)."""

__version__ = "0.1.0"
