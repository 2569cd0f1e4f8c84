"""Old names of the agent package keep working, with a DeprecationWarning naming the new one
("deny" is the word of an approval decision only; a budget limit or a guardrail blocks)."""

from __future__ import annotations

import pytest

import tether.agent


@pytest.mark.parametrize(
    ("old", "new"), [("BudgetDenial", "BudgetBlock"), ("GuardrailDenial", "GuardrailBlock")]
)
def test_an_old_name_warns_and_gives_the_new_class(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"tether\.agent\.{new}"):
        value = getattr(tether.agent, old)

    assert value is getattr(tether.agent, new)
    assert old not in tether.agent.__all__


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = tether.agent.NoSuchThing  # type: ignore[attr-defined]
