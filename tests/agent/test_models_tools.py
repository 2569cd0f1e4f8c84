"""Review: tool declarations the OpenAI API would refuse are refused when they are declared."""

from __future__ import annotations

import pytest

from tether.agent import Tool, as_tool, tool


async def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id} shipped"


@pytest.mark.parametrize("name", ["look up", "crm.lookup", "x" * 65, "lookup!"])
def test_a_tool_name_the_api_refuses_is_refused_when_declared(name: str) -> None:
    """Regression: a name OpenAI refuses (^[a-zA-Z0-9_-]{1,64}$) was accepted, and every run
    offering it then failed with the endpoint's HTTP 400."""
    with pytest.raises(ValueError, match=r"tool name .* letters, digits, '_' and '-'"):
        as_tool(lookup, name=name)


def test_the_tool_decorator_and_a_tool_built_by_hand_check_the_name_too() -> None:
    with pytest.raises(ValueError, match="tool name 'crm lookup'"):
        tool(name="crm lookup")(lookup)
    with pytest.raises(ValueError, match="tool name ''"):
        Tool(name="", fn=lookup)


@pytest.mark.parametrize("name", ["lookup", "crm-lookup_2", "x" * 64])
def test_names_of_letters_digits_underscores_and_dashes_are_accepted(name: str) -> None:
    assert as_tool(lookup, name=name).name == name
