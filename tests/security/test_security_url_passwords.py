"""Passwords in URLs (Redis, MCP servers, model base URLs) are shown masked: one helper,
``tether._urls.masked_url``, used wherever a URL is printed, logged or answered."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tether import AgentRuntime, ProcessConfig
from tether._urls import masked_in, masked_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret-pw@10.0.0.5:6379/0", "redis://:****@10.0.0.5:6379/0"),
        ("rediss://app:s3cret-pw@cache.internal/2", "rediss://app:****@cache.internal/2"),
        ("https://bot:p@ss@mcp.example/mcp", "https://bot:****@mcp.example/mcp"),
        ("https://bot:p%40ss@mcp.example/mcp?x=a@b", "https://bot:****@mcp.example/mcp?x=a@b"),
        ("https://ghp_tokenvalue@git.example/x", "https://****@git.example/x"),
        ("redis://:pw@host:notaport/0", "redis://:****@host:notaport/0"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("https://mcp.example/mcp?email=a@b", "https://mcp.example/mcp?email=a@b"),
    ],
)
def test_a_urls_password_is_shown_as_four_stars(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_an_error_quoting_a_urls_password_elsewhere_is_masked_too() -> None:
    url = "redis://:s3cret-pw@10.0.0.5:6379/0"
    text = f"cannot reach {url}: AUTH s3cret-pw refused"
    assert masked_in(text, url) == "cannot reach redis://:****@10.0.0.5:6379/0: AUTH **** refused"


async def test_a_base_urls_password_is_masked_in_a_config_and_redacted_by_its_process(
    runtime: AgentRuntime,
) -> None:
    base_url = "http://relay:pw-base-61c0@127.0.0.1:9/v1"
    config = ProcessConfig(model="scripted", base_url=base_url)
    assert "pw-base-61c0" not in repr(config)
    assert "http://relay:****@127.0.0.1:9/v1" in repr(config)
    process = await runtime.add_process("relayed", config)
    assert process.redactor.text("proxy said pw-base-61c0") == (
        "proxy said [REDACTED:base_url_password]"
    )


def test_a_base_url_refused_never_echoes_its_password() -> None:
    with pytest.raises(ValidationError) as caught:
        ProcessConfig(model="scripted", base_url="ftp://relay:pw-base-77@host/v1")
    assert "pw-base-77" not in str(caught.value)
    assert "ftp://relay:****@host/v1" in str(caught.value)
