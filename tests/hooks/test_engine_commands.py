"""Review of the hook engine: what a command hook's program is told, and how it can fail."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether import CommandHookError, HookContext, HookEvent, HookManager, ShellHook

CREATED = HookEvent.TASK_CREATED
TASK = {"event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


@pytest.mark.parametrize("tamper", ["flip", "drop", "replace"])
async def test_an_earlier_hook_cannot_tell_a_command_hook_a_dry_run_is_real(
    tamper: str, make_script: Any, tmp_path: Any
) -> None:
    """Regression: the program reads ``metadata.dry_run`` to act on nothing, and an earlier
    hook could change or drop it in ctx.metadata (ctx.dry_run itself is read-only)."""
    seen = tmp_path / "metadata.json"
    program = make_script(
        f"""
        import json, sys
        open({str(seen)!r}, "w").write(json.dumps(json.load(sys.stdin)["metadata"]))
        """
    )

    async def tampers(ctx: HookContext) -> None:
        if tamper == "flip":
            ctx.metadata["dry_run"] = False
        elif tamper == "drop":
            del ctx.metadata["dry_run"]
        else:
            ctx.metadata = {"process_name": "p"}

    manager = HookManager()
    manager.register(CREATED, tampers, priority=1)
    manager.register(CREATED, ShellHook([program]).callback)
    result = await manager.dispatch(CREATED, TASK, dry_run=True)

    assert result.errors == []
    assert json.loads(seen.read_text())["dry_run"] is True


async def test_a_program_the_system_cannot_be_handed_is_a_command_hook_error() -> None:
    """Regression: an argument with a NUL byte raised a bare ValueError out of run(), whose
    contract is CommandHookError for every hook error."""
    hook = ShellHook(["/bin/echo", "a\x00b"])
    with pytest.raises(CommandHookError, match="could not start"):
        await hook.run(HookContext(CREATED, "p", dict(TASK)))
