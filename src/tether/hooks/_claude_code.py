"""Claude Code hook compatibility: run a Claude Code hook program unchanged.

A hook declared with ``protocol="claude-code"`` gets Claude Code's input on stdin (compact
JSON, as Claude Code writes it: ``session_id``, ``transcript_path``, ``cwd``,
``permission_mode``, ``hook_event_name``, ``tool_name``, ``tool_input``, ...) mapped from
tether's event data, and its answer is applied by Claude Code's rules (hooks/_claude_answer.py).

A hook loaded from a Claude Code file runs as Claude Code runs it: the command string with
``sh -c`` in the project directory (for this protocol only: tether's own command hooks run no
shell), with the host environment less the declared secrets and ``withhold_env``, plus
``CLAUDE_PROJECT_DIR``, ``CLAUDE_ENV_FILE`` (the ``export`` lines a hook writes there reach the
later hooks of the session), ``CLAUDE_PLUGIN_ROOT`` and ``CLAUDE_PLUGIN_DATA``. What each answer
does to tether is written down in docs/tool-hooks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shlex
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ._claude_answer import add_context, apply_answer, block
from ._claude_notification import notice_fields
from ._context import HookContext
from ._errors import CommandHookError
from ._events import HookEvent
from ._shell import STDERR_IN_MESSAGE, ShellHook

if TYPE_CHECKING:
    from ._programs import Completed
    from ._shell import CommandFields

__all__ = [
    "CLAUDE_EVENTS",
    "CLAUDE_MATCHED",
    "TETHER_TO_CLAUDE",
    "ClaudeCodeHook",
    "claude_input",
    "claude_matches",
    "remove_session",
    "session_folder",
]

logger = logging.getLogger("tether.hooks")

#: Claude Code's event names and the tether event each one is run on.
CLAUDE_EVENTS: Final[dict[str, HookEvent]] = {
    "PreToolUse": HookEvent.PRE_TOOL_USE,
    "PostToolUse": HookEvent.POST_TOOL_USE,
    "PostToolUseFailure": HookEvent.POST_TOOL_USE,
    "PermissionRequest": HookEvent.PERMISSION_REQUEST,
    "PermissionDenied": HookEvent.PERMISSION_DENIED,
    "Notification": HookEvent.PERMISSION_REQUEST,
    "UserPromptSubmit": HookEvent.USER_PROMPT_SUBMIT,
    "SessionStart": HookEvent.SESSION_START,
    "SessionEnd": HookEvent.SESSION_END,
    "SubagentStart": HookEvent.SUBAGENT_START,
    "SubagentStop": HookEvent.AGENT_STOP,
    "Stop": HookEvent.AGENT_STOP,
    "PreCompact": HookEvent.PRE_COMPACT,
    "PostCompact": HookEvent.POST_COMPACT,
    "TaskCompleted": HookEvent.TASK_COMPLETED,
    "TaskCreated": HookEvent.TASK_CREATED,
    "ConfigChange": HookEvent.CONFIG_CHANGE,
    "FileChanged": HookEvent.FILE_CHANGED,
}

#: The input field a Claude Code matcher selects on, for the events that are not about a
#: tool (a tool event's matcher is on ``tool_name``, a tether matcher).
CLAUDE_MATCHED: Final[dict[str, str]] = {
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "Notification": "notification_type",
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    "ConfigChange": "source",
    "FileChanged": "file_path",
}

#: The ``hook_event_name`` a program sees for each tether event (post_tool_use: PostToolUse,
#: or PostToolUseFailure for a call that failed; agent_stop: Stop, or SubagentStop in a
#: spawned child).
TETHER_TO_CLAUDE: Final[dict[HookEvent, str]] = {
    HookEvent.PRE_TOOL_USE: "PreToolUse",
    HookEvent.POST_TOOL_USE: "PostToolUse",
    HookEvent.PERMISSION_REQUEST: "PermissionRequest",
    HookEvent.PERMISSION_DENIED: "PermissionDenied",
    HookEvent.USER_PROMPT_SUBMIT: "UserPromptSubmit",
    HookEvent.SESSION_START: "SessionStart",
    HookEvent.SESSION_END: "SessionEnd",
    HookEvent.SUBAGENT_START: "SubagentStart",
    HookEvent.SUBAGENT_STOP: "SubagentStop",
    HookEvent.PRE_COMPACT: "PreCompact",
    HookEvent.POST_COMPACT: "PostCompact",
    HookEvent.TASK_COMPLETED: "TaskCompleted",
    HookEvent.TASK_CREATED: "TaskCreated",
    HookEvent.CONFIG_CHANGE: "ConfigChange",
    HookEvent.FILE_CHANGED: "FileChanged",
    HookEvent.AGENT_STOP: "Stop",
}

#: Claude Code's default timeout of a handler, in seconds, per type.
CLAUDE_DEFAULT_TIMEOUT: Final = {"command": 600.0, "http": 600.0, "prompt": 30.0}
#: The block reason of a program that exited 2 with nothing on stderr.
EXIT_2_NO_REASON: Final = "blocked by a Claude Code hook (exit 2, nothing on stderr)"
_EXACT: Final = re.compile(r"[A-Za-z0-9_-]+(\|[A-Za-z0-9_-]+)*")


def claude_event_name(ctx: HookContext, declared: str | None) -> str:
    """The ``hook_event_name`` a Claude Code hook sees for ``ctx``: the event it was declared
    for, else the one tether's event maps to (a failed tool call, a subagent's stop)."""
    if declared is not None:
        return declared
    if ctx.event is HookEvent.POST_TOOL_USE and ctx.data.get("error") is not None:
        return "PostToolUseFailure"
    if ctx.event is HookEvent.AGENT_STOP and ctx.metadata.get("parent"):
        return "SubagentStop"
    return TETHER_TO_CLAUDE[ctx.event]


def _tool_response(result: Any) -> Any:
    """A tool's result as Claude Code hands it over: the JSON value it holds, or the text."""
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result


def claude_input(
    ctx: HookContext, hook_event_name: str, cwd: str, transcript: str | None = None
) -> dict[str, Any]:
    """The stdin of a Claude Code hook program for this dispatch.

    Beside Claude Code's own fields, ``tether`` holds the event and its data as tether
    dispatched them, for a program written for both.
    """
    data = ctx.data
    ev = ctx.event
    out: dict[str, Any] = {
        "session_id": str(ctx.metadata.get("process_id") or ctx.process_id),
        "transcript_path": transcript or _transcript_of(ctx),
        "cwd": cwd,
        "permission_mode": str(ctx.metadata.get("permission_mode") or "default"),
        "hook_event_name": hook_event_name,
    }
    if hook_event_name == "Notification":  # an approval waiting, or a hook error
        out.update(notice_fields(ctx))
    else:
        out.update(_fields(ctx, hook_event_name, data))
    out["tether"] = {"event": ev.value, "data": data}
    return out


def _fields(ctx: HookContext, name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The event's own fields of Claude Code's input."""
    ev = ctx.event
    if ev in (HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE):
        out = {
            "tool_name": data.get("tool_name"),
            "tool_input": data.get("arguments"),
            "tool_use_id": data.get("call_id"),
        }
        if name == "PostToolUseFailure":
            out |= {"error": data.get("error"), "is_interrupt": False}
        elif ev is HookEvent.POST_TOOL_USE:
            out["tool_response"] = _tool_response(data.get("result"))
        return out
    if ev is HookEvent.PERMISSION_REQUEST:
        return {
            "tool_name": data.get("tool_name"),
            "tool_input": data.get("arguments", {}),
            "permission_suggestions": [],
        }
    if ev is HookEvent.PERMISSION_DENIED:
        return {
            "tool_name": data.get("tool_name"),
            "tool_input": data.get("arguments", {}),
            "tool_use_id": data.get("call_id"),
            "reason": data.get("reason"),
        }
    if ev is HookEvent.USER_PROMPT_SUBMIT:
        return {"prompt": data.get("prompt")}
    if ev is HookEvent.SESSION_START:
        resumed = data.get("restart") or data.get("recovered")
        return {"source": "resume" if resumed else "startup", "model": ctx.metadata.get("model")}
    if ev is HookEvent.SESSION_END:
        return {"reason": "other"}
    if ev is HookEvent.SUBAGENT_START:
        return {"agent_id": data.get("process_name"), "agent_type": "process"}
    if ev is HookEvent.SUBAGENT_STOP:
        return {
            "agent_id": data.get("process_name"),
            "agent_type": "process",
            "stop_hook_active": False,
        }
    if ev is HookEvent.AGENT_STOP:
        out = {
            "stop_hook_active": bool(data.get("continuations")),
            "last_assistant_message": data.get("answer"),
        }
        if name == "SubagentStop":
            out |= {"agent_id": ctx.metadata.get("process_name"), "agent_type": "process"}
        return out
    if ev in (HookEvent.PRE_COMPACT, HookEvent.POST_COMPACT):
        return {"trigger": "auto", "custom_instructions": ""}
    if ev in (HookEvent.TASK_COMPLETED, HookEvent.TASK_CREATED):
        return {"task_id": data.get("event_id")}
    if ev is HookEvent.CONFIG_CHANGE:
        return {"source": data.get("source"), "change": data.get("change")}
    if ev is HookEvent.FILE_CHANGED:
        return {"file_path": data.get("path"), "event": data.get("event_type")}
    return {}


def session_dir(ctx: HookContext) -> str:
    """The folder of this session's Claude Code files (the env file, the transcript)."""
    return session_folder(str(ctx.metadata.get("process_id") or ctx.process_id or "session"))


def session_folder(process_id: str) -> str:
    """The folder of a process's Claude Code files: one per process of this tether process,
    under the temporary directory, private to its user (made when first asked for)."""
    folder = _folder_of(process_id)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def remove_session(process_id: str) -> None:
    """Remove a process's Claude Code files (its ``CLAUDE_ENV_FILE``, its transcript), and the
    folder of this tether process's sessions once it holds none; what is not there is fine."""
    folder = _folder_of(process_id)
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # another process's session is still there
        os.rmdir(os.path.dirname(folder))


def _folder_of(process_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", process_id)
    mine = f"tether-claude-{os.getuid()}-{os.getpid()}"
    return os.path.join(tempfile.gettempdir(), mine, safe)


def _transcript_of(ctx: HookContext) -> str:
    """The JSONL transcript tether writes of the process's runs (see agent/_transcript.py)."""
    path = ctx.metadata.get("transcript_path")
    return str(path) if path else os.path.join(session_dir(ctx), "transcript.jsonl")


def claude_matches(claude_event: str | None, pattern: str | None, claude: dict[str, Any]) -> bool:
    """Whether a group's matcher ``pattern`` takes the input ``claude`` in, on the field Claude
    Code matches for ``claude_event`` (CLAUDE_MATCHED): plain names exactly, else a regular
    expression searched in it. No pattern, or an event matched on no field: True."""
    if pattern is None or claude_event not in CLAUDE_MATCHED:
        return True
    value = claude.get(CLAUDE_MATCHED[claude_event])
    if not isinstance(value, str):
        return False
    if _EXACT.fullmatch(pattern):
        return value in pattern.split("|")
    return re.search(pattern, value) is not None


def read_env_file(path: str) -> dict[str, str]:
    """The variables the ``export NAME=value`` (or ``NAME=value``) statements of ``path`` set,
    quoted as a shell would read them; anything else is passed over."""
    found: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            words = list(lexer)
        except ValueError:
            continue
        for word in words:  # "export A=1; export B=2" as well as one a line
            name, eq, value = word.partition("=")
            if eq and name.isidentifier():
                found[name] = value
    return found


class ClaudeCodeHook(ShellHook):
    """A command hook speaking Claude Code's hook protocol (see the module docstring)."""

    protocol: ClassVar[str] = "claude-code"

    def __init__(
        self,
        command: Any,
        *,
        claude_event: str | None = None,
        plugin_root: str | None = None,
        claude: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        claude = dict(claude or {})
        loaded = bool(claude)
        if loaded:  # loaded from a Claude Code file: run as Claude Code runs it
            options.setdefault("shell", isinstance(command, str))
            options["inherit_env"] = bool(claude.get("inherit_env", True))
        parallel = claude.pop("parallel", [])
        group = options.pop("timeout", CLAUDE_DEFAULT_TIMEOUT["command"])
        super().__init__(command, timeout=claude.pop("own_timeout", None) or group, **options)
        #: The other command handlers of its matcher group, run at the same time as this one.
        self.siblings = [
            ClaudeCodeHook(
                other["command"],
                claude=claude,
                timeout=other.get("timeout") or CLAUDE_DEFAULT_TIMEOUT["command"],
                **options,
            )
            for other in parallel
        ]
        #: The Claude Code event the hook was declared for, when loaded from a settings file.
        self.claude_event = claude_event or claude.get("event")
        #: The plugin's folder (CLAUDE_PLUGIN_ROOT), for a hook a plugin's hooks.json declares.
        self.plugin_root = plugin_root or claude.get("CLAUDE_PLUGIN_ROOT")
        self.plugin_data: str | None = claude.get("CLAUDE_PLUGIN_DATA")
        #: The group's matcher for an event that is not about a tool (checked on the input).
        self.claude_matcher: str | None = claude.get("matcher")
        self.withhold_env: list[str] = list(claude.get("withhold_env", ()))
        self.loaded = loaded
        #: Applied to each inherited value: one holding a declared secret is withheld.
        self.declared: Any = None

    @classmethod
    def from_config(cls, config: CommandFields) -> ClaudeCodeHook:
        """The ClaudeCodeHook a HookConfig with ``protocol="claude-code"`` describes."""
        origin = config.claude_origin
        default = CLAUDE_DEFAULT_TIMEOUT["command"]
        return cls(
            config.command,
            claude=origin,
            timeout=config.timeout if config.timeout is not None else default,
            cwd=config.cwd,
            env=config.env,
            env_passthrough=config.env_passthrough,
            max_output_bytes=config.max_output_bytes,
        )

    @property
    def display_name(self) -> str:
        """The command, or a parallel group's commands joined with `` & ``."""
        own = self.command if isinstance(self.command, str) else shlex.join(self.command)
        return " & ".join([own, *(s.display_name for s in getattr(self, "siblings", ()))])

    def build_env(self, ctx: HookContext) -> dict[str, str]:
        env = super().build_env(ctx)
        if self.loaded:  # what earlier hooks of the session exported, then what is withheld
            env_file = os.path.join(session_dir(ctx), "env.sh")
            env.update(read_env_file(env_file))
            self._withhold(env)
            env["CLAUDE_ENV_FILE"] = env_file
        env.setdefault("CLAUDE_PROJECT_DIR", self.project_dir())
        if self.plugin_root is not None:
            env.setdefault("CLAUDE_PLUGIN_ROOT", self.plugin_root)
        if self.plugin_data is not None:
            env.setdefault("CLAUDE_PLUGIN_DATA", self.plugin_data)
        return env

    def _withhold(self, env: dict[str, str]) -> None:
        """Take out of a loaded hook's environment the variables the operator withholds and
        every one whose value holds a declared secret (inherited, or exported by a hook)."""
        for name in self.withhold_env:
            env.pop(name, None)
        declared = self.declared
        if declared is None:
            return
        for name, value in list(env.items()):
            if value and declared(value) != value:
                del env[name]

    def project_dir(self) -> str:
        """The project directory the program is told of (``CLAUDE_PROJECT_DIR``, its input's
        ``cwd``): the hook's ``cwd`` made absolute, else the current directory."""
        return os.path.abspath(self.cwd) if self.cwd is not None else os.getcwd()

    def applies(self, ctx: HookContext) -> bool:
        """False for a call a PostToolUse (or PostToolUseFailure) hook is not for, and for a
        run a Stop (SubagentStop) hook is not for: a loaded PostToolUse hook runs after calls
        that succeeded only, a Stop hook in the process it was declared for, as in Claude
        Code."""
        declared = self.claude_event
        if declared in (None, "Notification"):  # a notice is for it whatever event it is on
            return True
        if ctx.event is HookEvent.POST_TOOL_USE:
            failed = ctx.data.get("error") is not None
            return failed == (declared == "PostToolUseFailure")
        if ctx.event is HookEvent.AGENT_STOP:
            return bool(ctx.metadata.get("parent")) == (declared == "SubagentStop")
        return True

    def _matches(self, claude: dict[str, Any]) -> bool:
        """The group's matcher on the field Claude Code matches for this event."""
        return claude_matches(self.claude_event, self.claude_matcher, claude)

    async def callback(self, ctx: HookContext) -> None:
        """Run the program with Claude Code's input; apply its answer by Claude Code's rules."""
        if not self.applies(ctx):
            return
        name = claude_event_name(ctx, self.claude_event)
        claude = claude_input(ctx, name, self.project_dir())
        if not self._matches(claude):
            return
        # One line, ended: a pack's `set -e; read -r input` reads it whole and goes on.
        stdin = json.dumps(claude, default=str, separators=(",", ":"), ensure_ascii=False) + "\n"
        if not self.siblings:
            self._apply(ctx, name, await self.spawn(ctx, stdin))
            return
        await self._in_parallel(ctx, name, stdin)

    async def _in_parallel(self, ctx: HookContext, name: str, stdin: str) -> None:
        """Run the group's handlers at the same time; apply their answers in declaration
        order, whatever order they finished in: the first block (any deny) ends it, the
        rewrites and context of those before it are kept; a handler's error is raised once
        every answer is applied."""
        hooks = (self, *self.siblings)
        for sibling in self.siblings:
            sibling.declared, sibling.redact = self.declared, self.redact
        runs = await asyncio.gather(*(h.spawn(ctx, stdin) for h in hooks), return_exceptions=True)
        errors: list[Exception] = []
        for hook, done in zip(hooks, runs, strict=True):
            if isinstance(done, BaseException):
                if not isinstance(done, Exception):
                    raise done  # a cancellation: the dispatch's, not a handler's error
                errors.append(done)
                continue
            try:
                hook._apply(ctx, name, done)
            except CommandHookError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _apply(self, ctx: HookContext, name: str, done: Completed) -> None:
        """Apply one program's answer by Claude Code's rules."""
        shown = self.command if isinstance(self.command, str) else shlex.join(self.command)
        stderr = done.stderr.decode(self.encoding, errors="replace").strip()
        raw = done.stdout.decode(self.encoding, errors="replace")
        answer = _json_object(raw)
        if name == "Notification":  # a notice: nothing in its answer changes the request
            _notified(ctx, done.returncode or 0, stderr, shown)
            return
        if answer is not None:  # JSON decides, whatever the exit code
            apply_answer(ctx, answer, exit_code=done.returncode or 0, shown=shown)
            return
        if done.returncode == 2:
            block(ctx, stderr[:STDERR_IN_MESSAGE] or EXIT_2_NO_REASON)
            return
        if done.returncode != 0:
            said = f": {stderr[:STDERR_IN_MESSAGE]}" if stderr else " (nothing on stderr)"
            raise CommandHookError(f"hook command {shown!r} exited {done.returncode}{said}")
        if ctx.event in (HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START):
            add_context(ctx, raw.strip())  # plain text: context where Claude Code adds it


def _notified(ctx: HookContext, code: int, stderr: str, shown: str) -> None:
    """A Notification program's exit: 2 shows its stderr to the operator (as Claude Code
    shows it to the user), another non-zero exit is its error."""
    if code == 2:
        ctx.notify(stderr[:STDERR_IN_MESSAGE])
    elif code != 0:
        said = f": {stderr[:STDERR_IN_MESSAGE]}" if stderr else " (nothing on stderr)"
        raise CommandHookError(f"hook command {shown!r} exited {code}{said}")


def _json_object(raw: str) -> dict[str, Any] | None:
    text = raw.strip()
    if not text.startswith("{"):
        return None
    try:
        answer = json.loads(text)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None
