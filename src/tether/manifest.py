"""Manifests: ``.agent`` YAML files that describe one agent process as data.

``load_manifest(path)`` reads, resolves and validates a file into an :class:`AgentManifest`;
``manifest_to_process_config(manifest)`` turns that into a :class:`~tether.ProcessConfig`.

What a manifest may hold is what can be written down safely as data: hooks run a ``command``
(Python callbacks, approval handlers and guardrail scanners are registered in code); tools
are named by import path (``package.module:function``) and imported when the process is
created; ``claude_code_hooks`` names Claude Code settings files whose hooks the process runs.
``${VAR}`` and ``${VAR:-default}`` are replaced from the environment when the file is loaded,
everywhere except the ``secrets:`` section; ``$${VAR}`` stands for a literal ``${VAR}``. The
built-in ``${TETHER_MANIFEST_DIR}`` is the folder of the manifest file, and relative paths in
``cwd``, ``watch_path``, ``journal_path`` and ``artifacts_dir`` are relative to that folder;
``${TETHER_PYTHON}`` is the environment's ``TETHER_PYTHON``, else the Python running tether.

Every problem is reported at once, each with its path (``triggers[1].cron``) and line::

    ManifestError (ValueError)      the file cannot be used; ``errors`` lists every problem

``__all__`` is the public API; the other names imported here (the YAML reading of
``_manifest_yaml.py``, the error wording of ``_manifest_errors.py``, the Claude Code settings
of ``_manifest_claude.py``) are for tether's other packages, which import this module only.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import warnings
from collections.abc import Collection, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PrivateAttr,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError, core_schema

from ._manifest_claude import ClaudeCodeSource, rebased
from ._manifest_claude import load_claude_code as load_claude_code
from ._manifest_errors import MAX_ISSUE_CHARS as MAX_ISSUE_CHARS
from ._manifest_errors import ManifestError as ManifestError
from ._manifest_errors import ManifestIssue as ManifestIssue
from ._manifest_errors import issues_of as issues_of
from ._manifest_errors import secretish as secretish
from ._manifest_problems import hook_order_problems as hook_order_problems
from ._manifest_problems import mcp_problems, plugin_problems
from ._manifest_programs import program_problems
from ._manifest_tools import Origin, import_tools, tool_issues
from ._manifest_yaml import Loc as Loc
from ._manifest_yaml import line_of as line_of
from ._manifest_yaml import path_of as path_of
from ._manifest_yaml import read_yaml as read_yaml
from ._manifest_yaml import resolve as resolve
from ._manifest_yaml import yaml_type as yaml_type
from .agent import BudgetConfig, ContextConfig, GuardrailConfig, ModelPrice, check_import_path
from .approval import ApprovalPolicy
from .hooks import (
    MAX_FILE_BYTES,
    BaseHookConfig,
    CommandHookConfig,
    FileRefused,
    HookConfig,
    HttpHookConfig,
    PromptHookConfig,
    SecretText,
    read_small_file,
)
from .process import (
    FileWatchTrigger,
    McpServers,
    OpenModeConfig,
    ProcessConfig,
    RestartPolicy,
    TriggerConfig,
    WebhookTrigger,
    check_base_url,
    check_mission,
    repr_args,
    validate_name,
)

__all__ = [
    "MANIFEST_VERSION",
    "AgentManifest",
    "AnyManifestHook",
    "ManifestError",
    "ManifestHook",
    "ManifestIssue",
    "ManifestPromptHook",
    "ManifestUrlHook",
    "ProcessSpec",
    "load_manifest",
    "manifest_json_schema",
    "manifest_to_process_config",
    "parse_manifest",
    "spec_to_process_config",
]

MANIFEST_VERSION: Final = "1.0"
#: The name of the built-in variable holding the manifest's folder.
MANIFEST_DIR_VAR: Final = "TETHER_MANIFEST_DIR"
#: The built-in variable naming the Python to run hook programs with: the environment's, else
#: the interpreter running tether (the one with tether and its extras installed).
PYTHON_VAR: Final = "TETHER_PYTHON"
SCHEMA_RESOURCE: Final = "manifest_schema.json"

CALLBACK_MESSAGE: Final = (
    "a manifest hook runs a 'command'; Python callbacks are registered in code (process.hooks)"
)
#: Keys that hold Python objects in a ProcessConfig: registered in code, never written as data.
CODE_ONLY: Final[dict[str, str]] = {}


# -- the models ------------------------------------------------------------------------------


class ManifestHook(CommandHookConfig):
    """A hook in a manifest: a HookConfig that runs a ``command`` (never a callback);
    ``persistent: true`` keeps its program running for every event (JSON lines)."""

    command: str | list[str] = Field(
        description="Program and arguments (a string is split with shlex.split; no shell)"
    )
    persistent: StrictBool = Field(
        default=False, description="Keep one program running for every event (JSON lines)"
    )
    callback: SkipJsonSchema[None] = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _no_callback(cls, data: Any) -> Any:
        if isinstance(data, dict) and "callback" in data:
            raise PydanticCustomError("manifest_callback", CALLBACK_MESSAGE)
        return data


class ManifestUrlHook(HttpHookConfig):
    """A hook in a manifest answered by an HTTP service (``url``)."""


class ManifestPromptHook(PromptHookConfig):
    """A hook in a manifest answered by a model under a policy ``prompt``."""

    model: str | None = Field(
        default=None,
        description="Model spec ('openai:<name>', 'scripted'); unset: the process's model",
    )


#: The kinds a manifest hook may be, by the key that selects it (a command otherwise).
_MANIFEST_KINDS: Final[dict[str, type[BaseHookConfig]]] = {
    "url": ManifestUrlHook,
    "prompt": ManifestPromptHook,
}


class _ByKind:
    """Validation of a manifest hook by its kind's class (a command, persistent or not; a url;
    a prompt), so errors keep plain paths (hooks[0].url) instead of one per kind tried."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        kinds: tuple[type[BaseHookConfig], ...] = (ManifestHook, *_MANIFEST_KINDS.values())

        def validate(data: Any) -> Any:
            if isinstance(data, kinds) or not isinstance(data, dict):
                return data
            keys = [k for k in _MANIFEST_KINDS if data.get(k) is not None]
            if "callback" in data or "command" in data or len(keys) != 1:
                return ManifestHook.model_validate(data)  # its errors say what is missing
            return _MANIFEST_KINDS[keys[0]].model_validate(data)

        union = core_schema.union_schema([handler.generate_schema(k) for k in kinds])
        return core_schema.no_info_before_validator_function(validate, union)


#: A hook in a manifest (or a process deployed over the API), of any data kind.
AnyManifestHook = Annotated[ManifestHook | ManifestUrlHook | ManifestPromptHook, _ByKind()]


class ManifestApproval(BaseModel):
    """Tools whose calls need approval; the handler that decides is set in code."""

    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(default_factory=list, description="Tool names or glob patterns")
    operator: bool = Field(
        default=False,
        description="Wait for an operator's answer (API, `tether approvals`); with a handler "
        "in code, the first answer wins",
    )


class ManifestGuardrails(BaseModel):
    """The payload scan of trigger events (scanner functions are registered in code)."""

    model_config = ConfigDict(extra="forbid")

    payload_scan: bool = Field(
        default=True, description="Refuse payloads that carry prompt-injection markers"
    )
    markers: list[str] | None = Field(
        default=None, description="Case-insensitive phrases to refuse (default: built-in list)"
    )


def _same(name: str) -> Any:
    """ProcessConfig's field ``name`` (default, limits, description), for a spec field."""
    return copy.copy(ProcessConfig.model_fields[name])


#: ProcessSpec's own number fields (a flag is no number there).
_NUMBERS: Final = (
    "model_timeout",
    "model_max_retries",
    "max_turns",
    "max_continuations",
    "tool_timeout",
    "concurrency",
    "max_queue_size",
    "max_retries",
    "retry_backoff",
    "retry_backoff_max",
    "stop_timeout",
    "hook_timeout",
)


class ProcessSpec(BaseModel):
    """A process configuration written as data: what a manifest or an API request may set."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)  # as ProcessConfig's

    model: str = Field(default="openai:gpt-5-mini", description="'openai:<name>' or 'scripted'")
    model_timeout: float = _same("model_timeout")
    model_max_retries: int = _same("model_max_retries")
    base_url: str | None = _same("base_url")
    instructions: str = _same("instructions")
    mission: str | None = _same("mission")
    triggers: list[TriggerConfig] = _same("triggers")
    hooks: list[AnyManifestHook] = Field(
        default_factory=list,
        description="Lifecycle hooks: commands (persistent or not), URL hooks, prompt hooks",
    )
    approval: ManifestApproval | None = Field(default=None, description="Tools needing approval")
    budget: BudgetConfig | None = _same("budget")
    pricing: dict[str, ModelPrice] = _same("pricing")
    context: ContextConfig = _same("context")
    guardrails: ManifestGuardrails = Field(default_factory=ManifestGuardrails)
    execution_mode: Literal["strict", "open"] = _same("execution_mode")
    open_mode: OpenModeConfig = _same("open_mode")
    mcp_servers: McpServers = _same("mcp_servers")
    tools: list[Annotated[str, AfterValidator(check_import_path)]] = Field(
        default_factory=list,
        description="Python tools by import path, 'package.module:function' (an async function "
        "or a Tool), imported when the process is created",
    )
    claude_code_hooks: list[str | ClaudeCodeSource] = Field(
        default_factory=list,
        description="Claude Code settings.json or plugin hooks/hooks.json files whose hooks "
        "this process runs, or {project: <folder>, ...} for a project's settings scopes "
        "(relative paths: from the manifest's folder)",
    )
    secrets: dict[str, SecretText] = Field(
        default_factory=dict,
        description="Secret values, redacted everywhere; ${VAR} is NOT resolved here",
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="Hook plugins to activate, by name (built-ins, then the 'tether.plugins' "
        "entry points)",
    )
    max_turns: int = _same("max_turns")
    max_continuations: int = _same("max_continuations")
    tool_timeout: float = _same("tool_timeout")
    concurrency: int = _same("concurrency")
    max_queue_size: int = _same("max_queue_size")
    max_retries: int = _same("max_retries")
    retry_backoff: float = _same("retry_backoff")
    retry_backoff_max: float = _same("retry_backoff_max")
    restart: RestartPolicy = _same("restart")
    journal_path: str | None = _same("journal_path")
    durable_steps: bool = _same("durable_steps")
    artifacts_dir: str | None = _same("artifacts_dir")
    stop_timeout: float = _same("stop_timeout")
    hook_timeout: float = _same("hook_timeout")

    @model_validator(mode="before")
    @classmethod
    def _no_code_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, why in CODE_ONLY.items():
                if key in data:
                    raise PydanticCustomError("code_only", f"'{key}': {why}")
        return data

    @field_validator(*_NUMBERS, mode="before")
    @classmethod
    def _not_a_flag(cls, value: Any) -> Any:
        # YAML reads true/yes/on as flags; pydantic would take one as the number 1.
        if isinstance(value, bool):
            raise ValueError(f"expected a number, got a flag ({str(value).lower()})")
        return value

    @field_validator("mission")
    @classmethod
    def _mission(cls, value: str | None) -> str | None:
        return check_mission(value)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        return check_base_url(value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        return repr_args(super().__repr_args__())

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if value != "scripted" and not (value.startswith("openai:") and value[7:].strip()):
            raise ValueError(f"model {value!r} is not supported; use 'openai:<name>' or 'scripted'")
        return value


class AgentManifest(ProcessSpec):
    """An ``.agent`` file: a named process configuration (``tether validate`` checks one)."""

    model_config = ConfigDict(
        extra="forbid",
        title="tether agent manifest",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    version: str = Field(default=MANIFEST_VERSION, description="Manifest format version: '1.0'")
    name: str = Field(description="Process name: letters, digits, '_', '-', '.' (at most 64)")
    description: str | None = Field(default=None, description="What this agent is for")

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = f"{float(value):.1f}"
        if value not in ("1", MANIFEST_VERSION):
            raise ValueError(f"unsupported manifest version {value!r}; this tether reads '1.0'")
        return MANIFEST_VERSION

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return validate_name(value)

    #: Where it was read from, for a manifest read from a file: its tools are importable
    #: from its folder, and one that cannot be imported is an error naming its line.
    _origin: Origin | None = PrivateAttr(default=None)


for _cls in (
    AgentManifest,
    ManifestHook,
    ManifestUrlHook,
    ManifestPromptHook,
    ManifestApproval,
    ManifestGuardrails,
    ProcessSpec,
):
    _cls.__module__ = "tether.manifest"


# -- loading ---------------------------------------------------------------------------------


def load_manifest(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    hook_names: Collection[str] | None = None,
    check_programs: bool = False,
    unset_env_ok: bool = False,
) -> AgentManifest:
    """Read, resolve and validate the manifest at ``path``; raise ManifestError listing problems.

    ``environ`` (default ``os.environ``) is where ``${VAR}`` references are looked up.
    ``hook_names``: the names of the hooks a run adds to the manifest's (its runtime's shared
    hooks); given, a before/after name that is neither is a problem. ``None`` (the default):
    such names are left for the process to check when it is created. ``check_programs``:
    a hook or MCP server program that cannot run on this host (not found, not executable, a
    script its interpreter is given missing) is a problem too (``tether validate``).
    ``unset_env_ok``: a ``${VAR}`` whose variable is not set is a ``UserWarning``, not a
    problem, unless the value it holds cannot be checked without it (``tether validate``, where
    the secrets of the host that runs the manifest are not set).
    """
    file = Path(path)
    try:
        text = _read_manifest_file(file)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ManifestError(
            [ManifestIssue("", None, f"cannot read: {reason}")], str(path)
        ) from None
    except FileRefused as exc:
        raise ManifestError([ManifestIssue("", None, str(exc))], str(path)) from None
    return _parse(
        text,
        str(path),
        file.resolve().parent,
        environ,
        stacklevel=3,
        hook_names=hook_names,
        check_programs=check_programs,
        unset_env_ok=unset_env_ok,
    )


#: The largest manifest file read (a manifest is a few kilobytes; this refuses ``/dev/zero``,
#: a log file named by mistake, or a file that grows while it is read).
MAX_MANIFEST_BYTES: Final = MAX_FILE_BYTES


def _read_manifest_file(file: Path) -> str:
    """The text of ``file``, refused at once unless it is a regular file of at most 1 MiB
    (see read_small_file, which the Claude Code hooks files it names are read with too)."""
    return read_small_file(file, "a manifest").decode("utf-8")


def parse_manifest(
    text: str,
    *,
    source: str | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> AgentManifest:
    """Like :func:`load_manifest`, for manifest text; relative paths resolve against base_dir."""
    return _parse(text, source, base_dir, environ, stacklevel=3)


def _parse(
    text: str,
    source: str | None,
    base_dir: str | os.PathLike[str] | None,
    environ: Mapping[str, str] | None,
    *,
    stacklevel: int,
    hook_names: Collection[str] | None = None,
    check_programs: bool = False,
    unset_env_ok: bool = False,
) -> AgentManifest:
    data, lines, problems = read_yaml(text)
    issues = [ManifestIssue(*problem) for problem in problems]
    if data is None and not issues:
        issues.append(ManifestIssue("", 1, "the manifest is empty; expected a mapping of keys"))
    elif data is not None and not isinstance(data, dict):
        issues.append(ManifestIssue("", 1, f"expected a mapping of keys, got a {yaml_type(data)}"))
    if not isinstance(data, dict):
        raise ManifestError(issues, source)
    if "entrypoint" in data:
        data.pop("entrypoint")
        where = f"{source or '<manifest>'}:{lines.get(('entrypoint',), '?')}"
        warnings.warn(
            f"{where}: the top-level 'entrypoint' key is not read by the runtime and will be an "
            "error in a future version; remove it",
            FutureWarning,
            stacklevel=stacklevel,  # the caller of load_manifest / parse_manifest
        )
    env = dict(os.environ if environ is None else environ)
    if base_dir is not None:
        env[MANIFEST_DIR_VAR] = str(base_dir)
    if not env.get(PYTHON_VAR):
        env[PYTHON_VAR] = sys.executable
    unresolved: list[tuple[tuple[str | int, ...], str]] = []
    data = resolve(data, env, (), unresolved)
    unset = _issues(lines, [(loc, _unset(name)) for loc, name in unresolved])
    if not unset_env_ok:
        issues += unset
    if check_programs:
        base = Path(base_dir) if base_dir is not None else None
        issues += _issues(lines, program_problems(data, base))
    try:
        manifest = AgentManifest.model_validate(data)
    except ValidationError as exc:
        skip = {loc for loc, _ in unresolved}
        for issue_loc, issue, _ in issues_of(exc, AgentManifest, lines):
            if not any(issue_loc[: len(s)] == s for s in skip):
                issues.append(issue)
        # The MCP servers are checked apart from the model: their problems too, at once.
        servers = data.get("mcp_servers")
        if isinstance(servers, list):
            issues += _issues(lines, mcp_problems(servers))
        if not issues:  # only values the unset variables hold are wrong: they are the problem
            issues, unset = unset, []
    else:
        issues += [
            ManifestIssue(path_of(loc), line_of(lines, loc), message)
            for loc, message in spec_problems(manifest, hook_names=hook_names)
        ]
    for issue in unset if unset_env_ok else ():
        warnings.warn(
            f"{issue.format(source)}; it must be set where the manifest runs",
            UserWarning,
            stacklevel=stacklevel,
        )
    if issues:  # in the file's order (the checks apart from the model's come after it)
        issues.sort(key=lambda issue: (issue.line is None, issue.line or 0))
        raise ManifestError(issues, source)
    if base_dir is not None:
        manifest = _rebase(manifest, Path(base_dir))
        lines_of_tools = tuple(line_of(lines, ("tools", i)) for i in range(len(manifest.tools)))
        manifest._origin = Origin(Path(base_dir), source, lines_of_tools)
    issues = [  # read once the paths are the manifest folder's
        ManifestIssue(path_of(loc), line_of(lines, loc), message)
        for loc, message in claude_code_problems(manifest.claude_code_hooks)
    ]
    if issues:
        raise ManifestError(issues, source)
    return manifest


def _unset(name: str) -> str:
    return (
        f"environment variable {name!r} is not set "
        f"(set it, or give a default: ${{{name}:-default}})"
    )


def _issues(
    lines: Mapping[tuple[str | int, ...], int], problems: list[tuple[tuple[str | int, ...], str]]
) -> list[ManifestIssue]:
    return [ManifestIssue(path_of(loc), line_of(lines, loc), text) for loc, text in problems]


def claude_code_problems(
    paths: list[str | ClaudeCodeSource],
) -> list[tuple[tuple[str | int, ...], str]]:
    """The Claude Code hook files that cannot be read or mapped, each with its problem."""
    if not paths:
        return []
    from .hooks import ClaudeCodeHooksError

    problems: list[tuple[tuple[str | int, ...], str]] = []
    for i, path in enumerate(paths):
        try:
            load_claude_code(path)
        except ClaudeCodeHooksError as exc:
            problems.append((("claude_code_hooks", i), str(exc)))
    return problems


def manifest_to_process_config(manifest: ProcessSpec) -> ProcessConfig:
    """The ProcessConfig a manifest (or any ProcessSpec) describes; its hooks are recorded
    with source "manifest" in catalogs and history. The tools of a manifest read from a file
    are imported now, from its folder too (ManifestError naming the line of one that cannot
    be); other tools by import path when the process is created."""
    origin = manifest._origin if isinstance(manifest, AgentManifest) else None
    tools = import_tools(manifest.tools, origin) if origin is not None else None
    return spec_to_process_config(manifest, hook_source="manifest", tools=tools)


def manifest_tool_issues(manifest: AgentManifest) -> list[ManifestIssue]:
    """Each tool of ``manifest`` that cannot be imported, with its line when it was read
    from a file (searched for in its folder too)."""
    if manifest._origin is not None:
        return tool_issues(manifest.tools, manifest._origin)
    from .agent import import_tool

    issues = []
    for index, path in enumerate(manifest.tools):
        try:
            import_tool(path)
        except ValueError as exc:
            issues.append(ManifestIssue(f"tools[{index}]", None, str(exc)))
    return issues


def spec_to_process_config(
    spec: ProcessSpec, *, hook_source: str = "config", tools: list[Any] | None = None
) -> ProcessConfig:
    """Build the ProcessConfig. Plugin names are kept as names: the process activates each
    one (built-ins, then the ``tether.plugins`` entry points) when it is created."""
    values: dict[str, Any] = {
        name: getattr(spec, name)
        for name in ProcessSpec.model_fields
        if name in ProcessConfig.model_fields and name not in _CONVERTED
    }
    hooks = []
    for declared in spec.hooks:
        # A command not declared persistent stays a plain command (no 'persistent' key).
        plain = not getattr(declared, "persistent", True)
        hook = HookConfig.model_validate(
            declared.model_dump(exclude={"callback", "persistent"} if plain else {"callback"})
        )
        hook._source = hook_source
        hooks.append(hook)
    for entry in spec.claude_code_hooks:  # ClaudeCodeHooksError (a ValueError) names it
        hooks += load_claude_code(entry)
    values["hooks"] = hooks
    values["plugins"] = list(spec.plugins)
    if tools is not None:  # imported already (a manifest's, from its folder)
        values["tools"] = tools
    if spec.approval is not None:
        values["approval"] = ApprovalPolicy(
            tools=list(spec.approval.tools), operator=spec.approval.operator
        )
    guard = spec.guardrails
    values["guardrails"] = (
        GuardrailConfig(payload_scan=guard.payload_scan, markers=list(guard.markers))
        if guard.markers is not None
        else GuardrailConfig(payload_scan=guard.payload_scan)
    )
    return ProcessConfig(**values)


_CONVERTED: Final = frozenset({"hooks", "approval", "guardrails", "plugins"})


def spec_problems(
    spec: ProcessSpec, *, hook_names: Collection[str] | None = None
) -> list[tuple[tuple[str | int, ...], str]]:
    """Checks across entries: trigger ids must be unique, webhook port+path pairs too; plugin
    names must be available (and named once); each MCP server entry is a valid
    McpServerConfig, as ``add_mcp_server`` requires, with a name of its own; the hooks'
    before/after make no cycle (and, with ``hook_names``, see hook_order_problems, name
    known hooks)."""
    problems: list[tuple[tuple[str | int, ...], str]] = hook_order_problems(
        spec.hooks, known=hook_names
    )
    if spec.plugins:
        problems += plugin_problems(spec.plugins)
    problems += mcp_problems(spec.mcp_servers)
    ids: dict[str, int] = {}
    hooks_at: dict[tuple[int, str], int] = {}
    hosts: dict[int, tuple[str, int]] = {}
    for i, trigger in enumerate(spec.triggers):
        if trigger.id is not None:
            if trigger.id in ids:
                problems.append(
                    (
                        ("triggers", i, "id"),
                        f"trigger id {trigger.id!r} is already used by triggers[{ids[trigger.id]}]",
                    )
                )
            ids.setdefault(trigger.id, i)
        if isinstance(trigger, WebhookTrigger):
            key = (trigger.webhook_port, trigger.webhook_path)
            if key in hooks_at:
                problems.append(
                    (
                        ("triggers", i, "webhook_path"),
                        f"webhook path {trigger.webhook_path} on port {trigger.webhook_port} "
                        f"is already served by triggers[{hooks_at[key]}]",
                    )
                )
            hooks_at.setdefault(key, i)
            host = hosts.setdefault(trigger.webhook_port, (trigger.webhook_host, i))
            if host[0] != trigger.webhook_host:
                problems.append(
                    (
                        ("triggers", i, "webhook_host"),
                        f"port {trigger.webhook_port} is served on {host[0]} by "
                        f"triggers[{host[1]}]; one port listens on one host",
                    )
                )
    return problems


def _rebase(manifest: AgentManifest, base: Path) -> AgentManifest:
    """Make relative paths relative to the manifest's folder."""

    def absolute(value: str | None) -> str | None:
        if value is None or os.path.isabs(value):
            return value
        return str(base / value)

    update: dict[str, Any] = {
        "journal_path": absolute(manifest.journal_path),
        "artifacts_dir": absolute(manifest.artifacts_dir),
        "hooks": [
            h.model_copy(update={"cwd": absolute(h.cwd)})
            if isinstance(h, ManifestHook) and h.cwd
            else h
            for h in manifest.hooks
        ],
        "claude_code_hooks": [rebased(p, absolute) for p in manifest.claude_code_hooks],
        "triggers": [
            t.model_copy(update={"watch_path": absolute(t.watch_path)})
            if isinstance(t, FileWatchTrigger)
            else t
            for t in manifest.triggers
        ],
    }
    return manifest.model_copy(update=update)


# -- the JSON Schema -------------------------------------------------------------------------


#: A string holding a ``${VAR}`` reference (not ``$${VAR}``), as the schema's pattern.
REFERENCE_PATTERN: Final = r"(^|[^$])\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}"
_TYPED: Final = ("integer", "number", "boolean")


def manifest_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``.agent`` files, generated from the models.

    A number or a flag may also be written as a ``${VAR}`` reference (resolved when the file is
    loaded), so the schema takes such a string there too.
    """
    schema: dict[str, Any] = _with_references(AgentManifest.model_json_schema())
    schema["properties"]["entrypoint"] = {
        "deprecated": True,
        "description": "Not read by the runtime; loads with a FutureWarning",
    }
    return schema


def _with_references(node: Any) -> Any:
    if isinstance(node, list):
        return [_with_references(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _with_references(value) for key, value in node.items()}
    if out.get("type") in _TYPED:
        outer = {key: out.pop(key) for key in ("title", "description", "default") if key in out}
        reference = {"type": "string", "pattern": REFERENCE_PATTERN}
        return {**outer, "anyOf": [out, reference]}
    return out


def shipped_json_schema() -> dict[str, Any]:
    """The schema file shipped in the package (``tether/manifest_schema.json``)."""
    text = resources.files("tether").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    result: dict[str, Any] = json.loads(text)
    return result


def render_json_schema() -> str:
    """The schema as the text of the shipped file."""
    return json.dumps(manifest_json_schema(), indent=2, sort_keys=False) + "\n"


# -- validation errors -----------------------------------------------------------------------


def validation_issues(
    exc: ValidationError, root: type[BaseModel] = ProcessSpec
) -> list[ManifestIssue]:
    """A pydantic error of ``root`` as issues with manifest-style paths (no lines)."""
    return [issue for issue, _ in validation_errors(exc, root)]


def validation_errors(
    exc: ValidationError, root: type[BaseModel] = ProcessSpec
) -> list[tuple[ManifestIssue, Mapping[str, Any] | None]]:
    """Like :func:`validation_issues`, each with its pydantic error (None: several merged)."""
    return [(issue, err) for _, issue, err in issues_of(exc, root, {})]
