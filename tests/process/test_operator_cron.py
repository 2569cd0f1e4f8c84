"""Operator review of cron triggers as a manifest or a deploy declares them.

The expression is checked by ``CronTrigger``: five fields or a nickname, and a date that comes.
"""

from __future__ import annotations

import pytest

from tether import ManifestError
from tether.manifest import parse_manifest


def manifest(expression: str) -> str:
    return (
        "name: a\nmodel: scripted\ntriggers:\n  - type: cron\n"
        f"    cron_expression: {expression!r}\n"
    )


@pytest.mark.parametrize("expression", ["*/5 * * * *", "0 9 * * mon-fri", "@hourly"])
def test_a_five_field_expression_or_a_nickname_loads(expression: str) -> None:
    assert parse_manifest(manifest(expression), environ={}).triggers[0].cron_expression == (
        expression
    )


@pytest.mark.parametrize("expression", ["not a cron", "61 * * * *", "* * * * 8", "*/0 * * * *"])
def test_an_expression_that_does_not_parse_names_its_path_and_the_form(expression: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(manifest(expression), environ={})
    [issue] = caught.value.errors
    assert (issue.path, issue.line) == ("triggers[0].cron_expression", 5)
    assert "expected five fields" in issue.message


@pytest.mark.parametrize("expression", ["* * * * * *", "* * * * * * *"])
def test_an_expression_with_more_than_five_fields_is_refused(expression: str) -> None:
    with pytest.raises(ManifestError, match="expected five fields"):
        parse_manifest(manifest(expression), environ={})


def test_an_expression_that_never_fires_is_refused() -> None:
    with pytest.raises(ManifestError, match="cron_expression"):
        parse_manifest(manifest("0 0 31 2 *"), environ={})
