"""An MCP server of the shop's orders, written with the official SDK (stdio).

tether starts it for the triage agent (``mcp_servers:`` in ``examples/triage.agent``) and offers
its tools to the model as ``mcp__orders__lookup_order`` and ``mcp__orders__cancel_order``.
Every call goes through the agent's tool hooks first: ``hooks/guard_tools.py`` refuses
cancellations, so this server never sees one from the demo.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

ORDERS = {
    "1182": {"status": "delivered", "carrier": "DHL", "items": 2},
    "7731": {"status": "shipped", "carrier": "UPS", "items": 1},
}

server = MCPServer("orders")


@server.tool()
def lookup_order(order_id: str) -> str:
    """The status of one order."""
    order = ORDERS.get(order_id)
    if order is None:
        return f"order {order_id}: not found"
    return f"order {order_id}: {order['status']} by {order['carrier']}, {order['items']} item(s)"


@server.tool()
def cancel_order(order_id: str) -> str:
    """Cancel one order."""
    ORDERS.pop(order_id, None)
    return f"order {order_id}: cancelled"


if __name__ == "__main__":
    server.run("stdio")
