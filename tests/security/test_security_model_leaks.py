"""A password in the model's base URL (a proxy's ``http://user:password@host/v1``) never
shows in the model's repr or in the errors a run records, against a real FakeLLM server."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from _loop_support import KEY
from tether.models import ModelUnavailableError, OpenAIModel
from tether.testing import FakeLLM

PASSWORD = "proxy-canary-61c9f0"


def with_password(base_url: str) -> str:
    parts = urlsplit(base_url)
    return parts._replace(netloc=f"relay:{PASSWORD}@{parts.netloc}").geturl()


async def test_a_password_in_the_base_url_never_shows_in_the_repr_or_an_error(
    llm: FakeLLM,
) -> None:
    """Regression: every model error (and the repr) quoted the base URL as given, so a proxy's
    password reached the run's error, dead letters, hooks, logs and API answers."""
    llm.errors = [503]
    model = OpenAIModel(
        "fake-llm", base_url=with_password(llm.base_url), api_key=KEY, max_retries=0
    )
    try:
        with pytest.raises(ModelUnavailableError) as failed:
            await model.complete([{"role": "user", "content": "hello"}])
        assert "relay:****@127.0.0.1" in str(failed.value)
        assert PASSWORD not in str(failed.value)
        assert "relay:****@" in repr(model)
        assert PASSWORD not in repr(model)
    finally:
        await model.aclose()
