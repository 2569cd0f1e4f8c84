"""Budget accounting: runs and tool calls per UTC day, tool calls per run, and model tokens
and cost per run and per UTC day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ._config import BudgetConfig

if TYPE_CHECKING:
    from ._usage import Usage, UsageMeter

__all__ = ["BudgetBlock", "BudgetTracker"]


@dataclass(slots=True, frozen=True)
class BudgetBlock:
    """A budget limit blocks a step: which limit, its value and what had been used."""

    limit_name: str
    limit_value: int | float
    current_value: int | float

    @property
    def reason(self) -> str:
        return (
            f"budget limit {self.limit_name}={self.limit_value} reached "
            f"(current {self.current_value})"
        )


class BudgetTracker:
    """Counts what a process spends and says when a limit refuses the next step."""

    def __init__(self, config: BudgetConfig | None) -> None:
        self.config = config or BudgetConfig()
        self._day = ""
        self.runs_today = 0
        self.tool_calls_today = 0

    def _roll(self) -> None:
        today = datetime.now(UTC).date().isoformat()
        if today != self._day:
            self._day = today
            self.runs_today = 0
            self.tool_calls_today = 0

    def check_run(self) -> BudgetBlock | None:
        """Refuse a run past max_runs_per_day; otherwise count it."""
        self._roll()
        limit = self.config.max_runs_per_day
        if limit is not None and self.runs_today >= limit:
            return BudgetBlock("max_runs_per_day", limit, self.runs_today)
        self.runs_today += 1
        return None

    def check_tool_call(self, calls_this_run: int) -> BudgetBlock | None:
        """Refuse a tool call past a per-run or per-day limit; otherwise count it."""
        self._roll()
        per_run = self.config.max_tool_calls_per_run
        if per_run is not None and calls_this_run >= per_run:
            return BudgetBlock("max_tool_calls_per_run", per_run, calls_this_run)
        per_day = self.config.max_tool_calls_per_day
        if per_day is not None and self.tool_calls_today >= per_day:
            return BudgetBlock("max_tool_calls_per_day", per_day, self.tool_calls_today)
        self.tool_calls_today += 1
        return None

    def check_model_call(self, run: Usage, meter: UsageMeter | None) -> BudgetBlock | None:
        """Refuse the next model call once the run's tokens or cost, or the process's cost
        today, reached its limit (a call's use is only known after it: the call that
        reaches a limit is made, the next one refused)."""
        config = self.config
        tokens = config.max_tokens_per_run
        if tokens is not None and run.total_tokens >= tokens:
            return BudgetBlock("max_tokens_per_run", tokens, run.total_tokens)
        cost = config.max_cost_per_run
        if cost is not None and run.cost >= cost:
            return BudgetBlock("max_cost_per_run", cost, round(run.cost, 8))
        per_day = config.max_cost_per_day
        if per_day is not None and meter is not None:
            today = meter.roll().cost
            if today >= per_day:
                return BudgetBlock("max_cost_per_day", per_day, round(today, 8))
        return None
