"""``tether hooks test EVENT --command ...``: run one command hook and explain its answer."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import TYPE_CHECKING, Any, Final

from rich.markup import escape

from ._console import console

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["explain", "test_hook"]

#: What a block of each blockable event does in a process.
BLOCK_EFFECT: Final = {
    "user_prompt_submit": "the run is skipped and the event dead-lettered ('blocked by hook'), "
    "before any budget is counted",
    "permission_request": "the tool call is denied without asking the approval handler",
    "subagent_start": "the spawn is refused",
    "file_changed": "the change is dropped and counted as filtered",
    "config_change": "an agent's change is not applied (operator changes always apply)",
    "task_created": "the event is dead-lettered ('blocked by hook') instead of queued",
    "pre_tool_use": "the tool is not run: the model reads that it was refused and why, and "
    "permission_denied is dispatched (kind 'hook')",
    "pre_model_call": "the model is not called: the run fails with the hook's reason and the "
    "event is dead-lettered ('blocked by hook')",
    "post_model_call": "the agent loop does not read the answer: the run fails with the hook's "
    "reason and the event is dead-lettered ('blocked by hook')",
}

#: What a process reads back from each event's data, and what it does with it.
READ_BACK: Final = {
    "user_prompt_submit": {"prompt": "the model receives the rewritten prompt"},
    "pre_tool_use": {
        "arguments": "the tool runs with the rewritten arguments, if its schema accepts them "
        "(else the hook's error, and the original arguments stand)",
        "require_approval": "the call goes to the approval gate (denied with no handler)",
        "additional_context": "the text is added after the result the model reads",
    },
    "post_tool_use": {"result": "the model reads the replaced result"},
    "pre_model_call": {
        "messages": "the model receives the rewritten messages, if they are valid chat "
        "messages (else the hook's error, and the original messages stand)",
        "tools": "the model is offered the rewritten tool specs",
        "params": "the request carries the rewritten params (temperature, max_tokens, ...)",
        "model": "the call goes to the rewritten model, if the run's model or the pricing "
        "names it (else the hook's error)",
        "response": "the model is not called: the loop reads this answer instead",
    },
    "post_model_call": {"response": "the loop reads the rewritten text and tool calls"},
}


def explain(
    event: str, data: dict[str, Any], block: bool, reason: str, new_data: dict[str, Any] | None
) -> list[str]:
    """What a process would do with this answer, in lines."""
    lines: list[str] = []
    if block:
        effect = BLOCK_EFFECT.get(event)
        if effect is None:
            lines.append(
                f"asks to block, but {event} cannot be blocked: the block is ignored "
                "(a warning is logged)"
            )
        else:
            lines.append(f"BLOCKED ({reason or 'no reason given'}): {effect}")
        return lines
    if new_data is None:
        return ["passed: nothing changed"]
    changed = sorted(k for k in set(data) | set(new_data) if data.get(k) != new_data.get(k))
    if not changed:
        return ["passed: data returned unchanged"]
    lines.append(f"data replaced; changed: {', '.join(changed)}")
    read = READ_BACK.get(event, {})
    if event == "user_prompt_submit" and "prompt" in changed:
        if isinstance(new_data.get("prompt"), str):
            lines.append(read["prompt"])
        else:
            lines.append("'prompt' is not a string: the original prompt is kept")
    elif any(key in read for key in changed):
        lines += [read[key] for key in changed if key in read]
    else:
        lines.append(
            "a process reads back only the prompt of user_prompt_submit, the arguments, "
            "require_approval and additional_context of pre_tool_use, the result of "
            "post_tool_use, the request or response of pre_model_call and the response of "
            "post_model_call: these changes are seen by later hooks of the same event but not "
            "used"
        )
    return lines


def test_hook(
    event: str,
    command: str,
    *,
    data: dict[str, Any] | None,
    timeout: float,
    env: dict[str, str],
    env_passthrough: list[str],
    cwd: str | None,
    process: str,
    protocol: str,
    persistent: bool,
) -> int:
    """Run the hook once; 0 when it answered (whatever it answered), 1 on a hook error.
    ``persistent``: the program is a persistent hook's, sent the event as one JSON line with
    an ``id`` and answering one line (then its stdin is closed and it is stopped).

    What the program was handed from ``env`` and ``env_passthrough`` is redacted from what is
    printed, as a process redacts it from its records and logs: a terminal's output often ends
    up in a CI log.
    """
    from pydantic import SecretStr

    from .._redact import Redactor
    from ..hooks import (
        BLOCKABLE_EVENTS,
        ClaudeCodeHook,
        CommandHookError,
        HookContext,
        PersistentHook,
        ShellHook,
        parse_event,
    )
    from ._samples import sample_data

    hook_event = parse_event(event)
    payload = sample_data(hook_event.value)
    if data:
        payload.update(data)
    secret_env = {name: SecretStr(value) for name, value in env.items()}
    options: dict[str, Any] = {
        "timeout": timeout,
        "env": secret_env,
        "env_passthrough": env_passthrough,
        "cwd": cwd,
    }
    hook: ShellHook | PersistentHook
    if protocol == "claude-code":
        hook = ClaudeCodeHook(command, **options)
    elif persistent:
        hook = PersistentHook(command, **options)
    else:
        hook = ShellHook(command, **options)
    redactor = Redactor(learned=lambda: tuple(hook.secrets()))

    def shown(text: str) -> str:
        return escape(redactor.text(text))

    ctx = HookContext(
        hook_event,
        process,
        json.loads(json.dumps(payload)),
        {"process_name": process, "process_id": str(uuid.uuid4())},
    )
    out = console()
    out.print(
        f"[bold]event[/]    {hook_event.value} (blockable: "
        f"{'yes' if hook_event in BLOCKABLE_EVENTS else 'no'})"
    )
    out.print(f"[bold]command[/]  {shown(hook.display_name)}")
    if isinstance(hook, ClaudeCodeHook):
        return _claude_code(hook, ctx, payload, out, shown)
    out.print("[bold]stdin[/]" + (" (one JSON line)" if persistent else ""))
    sent = {"id": "1", **ctx.envelope()} if persistent else ctx.envelope()
    out.print(shown(json.dumps(sent, indent=2, default=str)))
    try:
        result = asyncio.run(_once(hook, ctx))
    except CommandHookError as exc:
        out.print(f"[bold]answer[/]   [red]hook error[/]: {shown(str(exc))}")
        if hook_event in BLOCKABLE_EVENTS:
            meaning = (
                "a hook error: logged and ignored (the action proceeds); with "
                "fail_closed: true it blocks the action"
            )
        else:
            meaning = f"a hook error: logged and ignored ({hook_event.value} cannot be blocked)"
        out.print(f"[bold]meaning[/]  {meaning}")
        return 1
    raw = result.raw.strip() or (_answer_line(result) if persistent else "")
    out.print(f"[bold]answer[/]   {shown(raw) if raw else '(no output)'}")
    if not raw:
        out.print(f"[dim]hint[/]     {escape(_NO_OUTPUT_HINT)}")
    if result.log:
        out.print(f"[bold]log[/]      {shown(result.log)}")
    if result.stderr.strip():
        out.print("[bold]stderr[/]")
        out.print(shown(result.stderr.rstrip()))
    for i, line in enumerate(
        explain(hook_event.value, payload, result.block, result.reason, result.data)
    ):
        style = "red" if line.startswith("BLOCKED") else "yellow" if "replaced" in line else ""
        text = f"[{style}]{shown(line)}[/]" if style else shown(line)
        out.print(f"[bold]{'meaning' if i == 0 else '':<8}[/] {text}")
    if result.data is not None and hook_event.value == "user_prompt_submit":
        prompt = result.data.get("prompt")
        if isinstance(prompt, str) and prompt != payload.get("prompt"):
            out.print("[bold]prompt[/]")
            out.print(shown(prompt))
    return 0


#: Said when a program wrote nothing: a persistent hook's program skips a line without an id.
_NO_OUTPUT_HINT: Final = (
    "a persistent hook's program (persistent: true) skips an event line without an 'id': "
    "test it with --persistent"
)


async def _once(hook: Any, ctx: Any) -> Any:
    """The hook's answer to ``ctx``; a persistent hook's program is stopped after it."""
    try:
        return await hook.run(ctx)
    finally:
        aclose = getattr(hook, "aclose", None)
        if aclose is not None:
            await aclose()


def _answer_line(result: Any) -> str:
    """A persistent hook's answer (parsed already), as the JSON line it amounts to."""
    answer = {"id": "1", "block": result.block, "reason": result.reason, "data": result.data}
    answer["log"] = result.log
    return json.dumps({k: v for k, v in answer.items() if v not in (None, "", False)})


def _claude_code(hook: Any, ctx: Any, payload: dict[str, Any], out: Console, shown: Any) -> int:
    """``hooks test --protocol claude-code``: Claude Code's input, the answer applied."""
    from ..hooks import (
        BLOCKABLE_EVENTS,
        TETHER_TO_CLAUDE,
        CommandHookError,
        HookBlocked,
        claude_input,
    )

    name = TETHER_TO_CLAUDE[ctx.event]
    out.print(f"[bold]protocol[/] claude-code ({name})")
    out.print("[bold]stdin[/]")
    out.print(shown(json.dumps(claude_input(ctx, name, hook.project_dir()), indent=2, default=str)))
    try:
        asyncio.run(hook.callback(ctx))
    except HookBlocked as exc:
        lines = explain(ctx.event.value, payload, True, exc.reason, None)
    except CommandHookError as exc:
        out.print(f"[bold]answer[/]   [red]hook error[/]: {shown(str(exc))}")
        blockable = ctx.event in BLOCKABLE_EVENTS
        out.print(
            "[bold]meaning[/]  a non-blocking error: logged, the action proceeds"
            + ("; with fail_closed: true it blocks the action" if blockable else "")
        )
        return 1
    else:
        changed = ctx.data if ctx.data != payload else None
        lines = explain(ctx.event.value, payload, False, "", changed)
    for i, line in enumerate(lines):
        style = "red" if line.startswith("BLOCKED") else "yellow" if "replaced" in line else ""
        text = f"[{style}]{shown(line)}[/]" if style else shown(line)
        out.print(f"[bold]{'meaning' if i == 0 else '':<8}[/] {text}")
    return 0
