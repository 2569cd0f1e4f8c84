"""What the model reads of an MCP tool: its name, and the text of its result (built from the
SDK's own result types)."""

from __future__ import annotations

import pytest
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from tether.process._mcp_link import McpToolError, mcp_tool_name, result_text


def test_a_tool_is_named_after_its_server_with_characters_apis_refuse_made_underscores() -> None:
    assert mcp_tool_name("crm", "lookup_order") == "mcp__crm__lookup_order"
    assert mcp_tool_name("acme.crm", "find order") == "mcp__acme_crm__find_order"


def test_a_name_past_64_characters_is_shortened_with_a_hash_of_the_whole() -> None:
    long_a = mcp_tool_name("server", "a" * 80)
    long_b = mcp_tool_name("server", "a" * 79 + "b")
    assert len(long_a) == len(long_b) == 64
    assert long_a.startswith("mcp__server__aaaa")
    assert long_a != long_b


def test_text_blocks_are_joined_and_other_blocks_described() -> None:
    result = CallToolResult(
        content=[
            TextContent(type="text", text="first"),
            ImageContent(type="image", data="aGVsbG8h", mime_type="image/png"),
            ResourceLink(type="resource_link", name="report", uri="file:///r.pdf"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///n.txt", text="embedded text"),
            ),
        ]
    )
    assert result_text(result) == (
        "first\n[image image/png, about 6 bytes]\n[resource report file:///r.pdf]\nembedded text"
    )


def test_structured_content_without_content_is_shown_as_json() -> None:
    result = CallToolResult(content=[], structured_content={"status": "shipped", "items": 2})
    assert result_text(result) == '{"status": "shipped", "items": 2}'


def test_an_is_error_result_raises_its_text_as_the_tools_error() -> None:
    with pytest.raises(McpToolError, match=r"^no such order$"):
        result_text(
            CallToolResult(content=[TextContent(type="text", text="no such order")], is_error=True)
        )
    with pytest.raises(McpToolError, match="gave no message"):
        result_text(CallToolResult(content=[], is_error=True))
