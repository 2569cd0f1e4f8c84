"""Tools importable by path in the tests (``_tool_support:lookup_order``): tests/ is on
sys.path, as a user's package is on the runtime's host."""

from __future__ import annotations

from typing import Any

from tether import Tool


async def lookup_order(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


async def _search(query: str) -> str:
    return f"found {query}"


#: A Tool object, importable by path as a function is.
search = Tool(
    name="search",
    fn=_search,
    description="Search the catalogue",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}},
)


def not_async(order_id: int) -> str:
    return "sync"
