"""Scores: each check of a run passes or fails with a detail; checks are grouped into layers.

A layer passes when every check in it passes. ``integrity`` is always there: every turn ran to
an end of its own (a reply, or a hook's refusal), none failed, timed out or was lost. A run's
verdict is PASS when every layer passes, else FAIL. Scores are computed from the frozen trace
alone, before any run-level hook sees the run: nothing a hook does can change one.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from typing import Any, Final

from ._pack import HookRefusal, LoadedPack, Scenario, ScorerSpec, ToolCheck

__all__ = ["SCORE_SCHEMA_VERSION", "compute_score", "refusals"]

SCORE_SCHEMA_VERSION: Final = 1
#: Turn outcomes that are an end of the turn's own: a reply, or a hook refusing it.
SOUND_OUTCOMES: Final = frozenset({"success", "blocked"})
_DETAIL_CHARS: Final = 300


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def refusals(hook_runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hook runs that refused something: blocked, or a required (fail-closed) hook that
    failed or timed out."""
    return [
        run
        for run in hook_runs
        if run.get("outcome") == "blocked"
        or (run.get("required") and run.get("outcome") in ("failed", "timed_out"))
    ]


def _tool_matches(call: Mapping[str, Any], check: ToolCheck) -> bool:
    if call.get("name") != check.name:
        return False
    if check.arguments is None:
        return True
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        return False
    return all(key in arguments and arguments[key] == want for key, want in check.arguments.items())


def _tool_text(check: ToolCheck) -> str:
    if check.arguments is None:
        return check.name
    return f"{check.name}({json.dumps(check.arguments, sort_keys=True)})"


async def _check(
    pack: LoadedPack,
    where: str,
    spec: ScorerSpec,
    reply: str,
    tool_calls: list[dict[str, Any]],
    hook_runs: list[dict[str, Any]],
    trace: dict[str, Any],
) -> tuple[bool, str]:
    kind = spec.kind
    if kind in ("contains", "not_contains"):
        needle = spec.contains if kind == "contains" else spec.not_contains
        assert needle is not None
        found = needle in reply if spec.case_sensitive else needle.lower() in reply.lower()
        if kind == "contains":
            return found, (
                f"reply contains {needle!r}"
                if found
                else f"reply does not contain {needle!r}: {_short(reply)!r}"
            )
        return not found, (
            f"reply contains {needle!r}: {_short(reply)!r}"
            if found
            else f"reply does not contain {needle!r}"
        )
    if kind == "matches":
        assert spec.matches is not None
        ok = re.search(spec.matches, reply) is not None
        return ok, (
            f"reply matches /{spec.matches}/"
            if ok
            else f"reply does not match /{spec.matches}/: {_short(reply)!r}"
        )
    if kind == "json_schema":
        return _json_schema(pack.schemas[where], reply)
    if kind in ("tool_called", "tool_not_called"):
        check = spec.tool_called if kind == "tool_called" else spec.tool_not_called
        assert check is not None
        matching = [c for c in tool_calls if _tool_matches(c, check)]
        names = ", ".join(str(c.get("name")) for c in tool_calls) or "none"
        if kind == "tool_called":
            return bool(matching), (
                f"{_tool_text(check)} was called"
                if matching
                else f"{_tool_text(check)} was not called (calls: {names})"
            )
        return not matching, (
            f"{_tool_text(check)} was called {len(matching)} time(s)"
            if matching
            else f"{_tool_text(check)} was not called"
        )
    if kind == "hook_refused":
        want = spec.hook_refused
        refused = refusals(hook_runs)
        wanted = ""
        if isinstance(want, HookRefusal):
            wanted = f" ({want.model_dump(exclude_none=True)})"
            refused = [
                r
                for r in refused
                if (want.event is None or r.get("event") == want.event)
                and (want.hook is None or want.hook in (r.get("hook_name"), r.get("hook_id")))
            ]
        if refused:
            first = refused[0]
            why = f": {first['error']}" if first.get("error") else ""
            return True, f"{first.get('hook_name')} refused {first.get('event')}{why}"
        return False, f"no hook refused{wanted}"
    assert spec.scorer is not None
    return await _python(pack, spec, trace)


def _json_schema(schema: dict[str, Any], reply: str) -> tuple[bool, str]:
    import jsonschema

    try:
        value = json.loads(reply)
    except ValueError as exc:
        return False, f"reply is not JSON ({exc}): {_short(reply)!r}"
    errors = sorted(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(value),
        key=lambda e: list(e.absolute_path),
    )
    if not errors:
        return True, "reply is valid against the JSON Schema"
    first = errors[0]
    at = "/".join(str(p) for p in first.absolute_path) or "(root)"
    return False, f"reply is not valid against the JSON Schema at {at}: {first.message}"


async def _python(pack: LoadedPack, spec: ScorerSpec, trace: dict[str, Any]) -> tuple[bool, str]:
    """A Python scorer, called with a copy of the trace and its ``with`` options. It answers a
    bool, a (bool, detail) pair or a mapping with ``passed`` and ``detail`` (maybe awaitable);
    a scorer that raises fails its check, with the error as the detail."""
    assert spec.scorer is not None
    fn = pack.scorers[spec.scorer]
    try:
        answer = fn(json.loads(json.dumps(trace)), dict(spec.with_))
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        return False, f"scorer {spec.scorer} raised {exc!r}"
    if isinstance(answer, bool):
        return answer, f"scorer {spec.scorer}: {'passed' if answer else 'failed'}"
    if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], bool):
        return answer[0], str(answer[1])
    if isinstance(answer, Mapping) and isinstance(answer.get("passed"), bool):
        return answer["passed"], str(answer.get("detail") or "")
    return False, (
        f"scorer {spec.scorer} answered a {type(answer).__name__}; a scorer answers a bool, "
        "a (bool, detail) pair or a mapping with 'passed' and 'detail'"
    )


async def compute_score(
    pack: LoadedPack, index: int, scenario: Scenario, trace: dict[str, Any]
) -> dict[str, Any]:
    """The score of one run of ``scenario`` (the pack's ``index``-th) from its frozen trace."""
    layers: dict[str, dict[str, Any]] = {}

    def add(layer: str, where: str, kind: str, passed: bool, detail: str) -> None:
        entry = layers.setdefault(layer, {"passed": True, "detail": "", "checks": []})
        entry["checks"].append(
            {"check": where, "kind": kind, "passed": passed, "detail": _short(detail, 300)}
        )
        entry["passed"] = entry["passed"] and passed

    turns: list[dict[str, Any]] = trace["turns"]
    problems = [
        f"turn {t['index'] + 1}: {t['outcome']}" + (f" ({t['error']})" if t.get("error") else "")
        for t in turns
        if t["outcome"] not in SOUND_OUTCOMES
    ]
    missing = len(scenario.turns) - len(turns)
    if missing > 0:
        problems.append(f"{missing} turn(s) never ran")
    add(
        "integrity",
        "turns",
        "integrity",
        not problems,
        "; ".join(problems) if problems else f"all {len(turns)} turn(s) ran to an end",
    )
    base = f"scenarios[{index}]"
    for j, turn_spec in enumerate(scenario.turns):
        turn = turns[j] if j < len(turns) else None
        for k, spec in enumerate(turn_spec.expect):
            where = f"{base}.turns[{j}].expect[{k}]"
            if turn is None:
                add(spec.layer_name, where, spec.kind, False, f"turn {j + 1} never ran")
                continue
            passed, detail = await _check(
                pack,
                where,
                spec,
                turn.get("reply") or "",
                turn["tool_calls"],
                turn["hook_runs"],
                trace,
            )
            add(spec.layer_name, where, spec.kind, passed, f"turn {j + 1}: {detail}")
    last = turns[-1].get("reply") or "" if turns else ""
    all_calls = [call for t in turns for call in t["tool_calls"]]
    for k, spec in enumerate(scenario.score):
        where = f"{base}.score[{k}]"
        passed, detail = await _check(pack, where, spec, last, all_calls, trace["hook_runs"], trace)
        add(spec.layer_name, where, spec.kind, passed, detail)
    for entry in layers.values():
        failing = [c["detail"] for c in entry["checks"] if not c["passed"]]
        entry["detail"] = (
            "; ".join(failing)[:_DETAIL_CHARS]
            if failing
            else f"{len(entry['checks'])} check(s) passed"
        )
    passed = all(entry["passed"] for entry in layers.values())
    return {
        "schema_version": SCORE_SCHEMA_VERSION,
        "run_id": trace["run_id"],
        "pack": trace["pack"],
        "scenario_id": scenario.id,
        "verdict": "PASS" if passed else "FAIL",
        "passed": passed,
        "failed_layers": [name for name, entry in layers.items() if not entry["passed"]],
        "layers": layers,
    }
