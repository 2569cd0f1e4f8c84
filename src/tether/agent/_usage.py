"""What model calls use and cost: token counts from a model's answer, a price table, and the
running totals of a run and of a process (today's too, for the daily budget).

A cost is only ever computed from the price table: a model it does not name costs ``None``,
never a guess, and a total counts such calls in ``unpriced_calls`` (its cost is then what the
priced calls cost).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..models import ModelReply
from ._config import ModelPrice

__all__ = ["Tokens", "Usage", "UsageMeter", "model_identity", "tokens_of"]


@dataclass(frozen=True, slots=True)
class Tokens:
    """One model call's token counts; ``cached`` input tokens are part of ``input``."""

    input: int = 0
    output: int = 0
    cached: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cached_tokens": self.cached,
        }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def tokens_of(reply: ModelReply) -> Tokens:
    """The token counts of an OpenAI-style ``usage`` in the reply's body (zeros if none)."""
    usage = reply.raw.get("usage") if isinstance(reply.raw, dict) else None
    if not isinstance(usage, dict):
        return Tokens()
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Tokens(
        _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), cached
    )


def model_identity(model: Any) -> tuple[str, str]:
    """(provider, model name) of a model object: ``openai:gpt-4o`` is ("openai", "gpt-4o"),
    ``scripted`` is ("scripted", "scripted"), a name without a provider is ("custom", name)."""
    name = str(getattr(model, "name", "") or type(model).__name__)
    provider, sep, rest = name.partition(":")
    if sep and provider and rest:
        return provider, rest
    if name == "scripted":
        return name, name
    return "custom", name


@dataclass(slots=True)
class Usage:
    """Running totals of model calls: tokens, cost (of the priced calls) and call counts."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    model_calls: int = 0
    unpriced_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, tokens: Tokens, cost: float | None) -> None:
        self.input_tokens += tokens.input
        self.output_tokens += tokens.output
        self.cached_tokens += tokens.cached
        self.model_calls += 1
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost += cost

    def to_dict(self) -> dict[str, Any]:
        """The totals as hooks, the API and the status see them."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "total_tokens": self.total_tokens,
            "cost": round(self.cost, 8),
            "model_calls": self.model_calls,
            "unpriced_calls": self.unpriced_calls,
        }


class UsageMeter:
    """A process's price table and its totals: since it was created, and today (UTC)."""

    __slots__ = ("_day", "pricing", "today", "total")

    def __init__(self, pricing: Mapping[str, ModelPrice] | None = None) -> None:
        self.pricing: Mapping[str, ModelPrice] = dict(pricing or {})
        self.total = Usage()
        self.today = Usage()
        self._day = -1

    def price_of(self, provider: str, model: str) -> ModelPrice | None:
        """The price of a model, listed as ``provider:model`` or as ``model``."""
        found = self.pricing.get(f"{provider}:{model}")
        return found if found is not None else self.pricing.get(model)

    def cost(self, provider: str, model: str, tokens: Tokens) -> float | None:
        """What a call cost, or None when the price table does not name its model."""
        price = self.price_of(provider, model)
        if price is None:
            return None
        cached = price.input if price.cached is None else price.cached
        fresh = max(tokens.input - tokens.cached, 0)
        return (fresh * price.input + tokens.cached * cached + tokens.output * price.output) / 1e6

    def roll(self) -> Usage:
        """Today's totals (reset when the UTC day changed)."""
        day = int(time.time() // 86400)  # the UTC day's number (a day is 86400 s in Unix time)
        if day != self._day:
            self._day = day
            self.today = Usage()
        return self.today

    def add(self, tokens: Tokens, cost: float | None) -> None:
        self.total.add(tokens, cost)
        self.roll().add(tokens, cost)

    def to_dict(self) -> dict[str, Any]:
        """The process's totals, with today's cost (what max_cost_per_day is checked on)."""
        return {**self.total.to_dict(), "cost_today": round(self.roll().cost, 8)}
