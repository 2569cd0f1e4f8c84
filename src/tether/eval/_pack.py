"""Scenario packs: YAML files naming an agent, its scenarios (turns, runs) and their scorers.

``load_pack(path)`` reads, resolves ``${VAR}`` references and validates a pack; every problem
is reported at once with its path (``scenarios[1].turns[0].expect[0]``) and line, as for
manifests. What can be checked when the pack is read is checked then: the agent (a manifest
file, or an importable ``module:factory``), each scorer (a built-in, a ``tether.scorers``
entry point or ``module:callable``), regular expressions and JSON Schemas::

    PackError (ManifestError, ValueError)   the pack cannot be used; ``errors`` lists problems
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..manifest import (
    Loc,
    ManifestError,
    ManifestIssue,
    issues_of,
    line_of,
    path_of,
    read_yaml,
    resolve,
    yaml_type,
)

__all__ = [
    "PACK_VERSION",
    "FakeLLMSpec",
    "Pack",
    "PackError",
    "ResetSpec",
    "Scenario",
    "ScorerSpec",
    "ToolCallScript",
    "ToolCheck",
    "Turn",
    "load_pack",
    "pack_json_schema",
    "shipped_pack_schema",
]

PACK_VERSION: Final = "1.0"
SCHEMA_RESOURCE: Final = "pack_schema.json"
#: A scenario id or pack name: part of file names, so a slug (no dot: see the sidecar rule).
ID_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
_ID: Final = re.compile(ID_PATTERN)
_FACTORY: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$")
#: The scorer kinds, each with the layer its checks count in unless ``layer`` says otherwise.
BUILTIN_SCORERS: Final[dict[str, str]] = {
    "contains": "outcome",
    "not_contains": "outcome",
    "matches": "outcome",
    "json_schema": "outcome",
    "tool_called": "trajectory",
    "tool_not_called": "trajectory",
    "hook_refused": "constraint",
    "scorer": "outcome",
}
SCORER_GROUP: Final = "tether.scorers"


class PackError(ManifestError):
    """A scenario pack cannot be used; ``errors`` holds every problem found, in file order."""


PackError.__module__ = "tether.eval"


# -- the models ------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


class ToolCheck(_Model):
    """A tool call to look for: its name, and arguments it must have (a subset, compared equal)."""

    name: str = Field(min_length=1, description="The tool's name")
    arguments: dict[str, Any] | None = Field(
        default=None, description="Arguments the call must have (other arguments may be there)"
    )


class HookRefusal(_Model):
    """A hook refusal to look for: any, or one of an event and/or a hook name."""

    event: str | None = Field(default=None, description="The event refused, e.g. pre_tool_use")
    hook: str | None = Field(default=None, description="The refusing hook's name or id")


class ScorerSpec(_Model):
    """One check. Exactly one kind: contains, not_contains, matches, json_schema, tool_called,
    tool_not_called, hook_refused, or scorer (a ``tether.scorers`` entry point or
    ``module:callable``, given ``with`` as its options)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True, populate_by_name=True)

    contains: str | None = Field(default=None, description="The reply holds this text")
    not_contains: str | None = Field(default=None, description="The reply does not hold this")
    matches: str | None = Field(default=None, description="A regular expression the reply matches")
    json_schema: dict[str, Any] | str | None = Field(
        default=None,
        description="The reply is JSON valid against this schema (inline, or a .json file "
        "relative to the pack)",
    )
    tool_called: ToolCheck | None = Field(default=None, description="This tool was called")
    tool_not_called: ToolCheck | None = Field(default=None, description="It was not called")
    hook_refused: HookRefusal | bool | None = Field(
        default=None, description="A hook refused something (true: any refusal)"
    )
    scorer: str | None = Field(
        default=None, description="A 'tether.scorers' entry point name, or 'module:callable'"
    )
    with_: dict[str, Any] = Field(
        default_factory=dict, alias="with", description="Options handed to a 'scorer'"
    )
    case_sensitive: bool = Field(default=False, description="contains / not_contains: exact case")
    layer: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9_-]{1,64}$",
        description="The score layer this check counts in (default: by kind)",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> ScorerSpec:
        kinds = [k for k in BUILTIN_SCORERS if getattr(self, k) is not None]
        if len(kinds) != 1:
            got = f"got {', '.join(kinds)}" if kinds else "got none"
            raise ValueError(
                f"a scorer has exactly one kind of {', '.join(BUILTIN_SCORERS)} ({got})"
            )
        if self.with_ and kinds[0] != "scorer":
            raise ValueError("'with' holds the options of a 'scorer'; this check is no scorer")
        if self.hook_refused is False:
            raise ValueError(
                "hook_refused is true or a mapping (event, hook); false checks nothing"
            )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in BUILTIN_SCORERS if getattr(self, k) is not None)

    @property
    def layer_name(self) -> str:
        return self.layer or BUILTIN_SCORERS[self.kind]


class Turn(_Model):
    """One prompt injected into the run, and what its reply must show (optional)."""

    prompt: str = Field(min_length=1, description="The text sent to the agent")
    expect: list[ScorerSpec] = Field(
        default_factory=list, description="Checks of this turn's reply, tool calls and refusals"
    )


class ToolCallScript(_Model):
    """A tool call the fake model answers with."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class FakeLLMSpec(_Model):
    """What ``tether.testing.FakeLLM`` answers: its reply, after these tool calls (per run)."""

    reply: str | None = Field(default=None, description="The reply (default: FakeLLM's)")
    tool_calls: list[ToolCallScript] = Field(
        default_factory=list, description="Tool calls answered first, in order, once per run"
    )
    latency: float = Field(default=0.0, ge=0, le=60, description="Seconds before each answer")


class ResetSpec(_Model):
    """What each run starts without: the conversation and the state notes of the run before."""

    conversation: bool = Field(default=True, description="Start each run with no conversation")
    state: bool = Field(default=True, description="Start each run with the initial state")


class Scenario(_Model):
    """A scenario: turns injected in order, ``runs`` times, each run scored."""

    id: str = Field(pattern=ID_PATTERN, description="Identifier: letters, digits, '_', '-'")
    description: str | None = None
    turns: list[Turn] = Field(min_length=1, description="Prompts, injected in order")
    runs: int | None = Field(default=None, ge=1, le=10_000, description="Runs (default: pack's)")
    score: list[ScorerSpec] = Field(
        default_factory=list, description="Checks of the whole run (replies: the last turn's)"
    )
    pass_rate: float = Field(
        default=1.0, ge=0, le=1, description="The share of runs that must pass (default: all)"
    )
    fake_llm: FakeLLMSpec | None = Field(
        default=None, description="The fake model's script for this scenario's runs"
    )
    reset: ResetSpec = Field(default_factory=ResetSpec)

    @field_validator("turns", mode="before")
    @classmethod
    def _plain_prompts(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"prompt": v} if isinstance(v, str) else v for v in value]
        return value


class Pack(_Model):
    """A ``pack.yaml``: an agent and the scenarios it is judged on."""

    model_config = ConfigDict(
        extra="forbid",
        hide_input_in_errors=True,
        title="tether scenario pack",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    version: str = Field(default=PACK_VERSION, description="Pack format version: '1.0'")
    name: str = Field(pattern=ID_PATTERN, description="The pack's name")
    description: str | None = None
    agent: str = Field(
        min_length=1,
        description="An .agent manifest (relative to the pack) or 'module:factory' (a callable "
        "answering a ProcessConfig or a manifest; modules beside the pack are importable)",
    )
    runs: int = Field(default=1, ge=1, le=10_000, description="Runs per scenario")
    turn_timeout: float = Field(
        default=120.0, gt=0, le=3600, description="Seconds a turn may take before it is cut off"
    )
    fake_llm: FakeLLMSpec | None = Field(
        default=None,
        description="Serve the agent from tether.testing.FakeLLM (offline; for examples and CI)",
    )
    scenarios: list[Scenario] = Field(min_length=1)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = f"{float(value):.1f}"
        if value not in ("1", PACK_VERSION):
            raise ValueError(f"unsupported pack version {value!r}; this tether reads '1.0'")
        return PACK_VERSION


for _cls in (Pack, Scenario, Turn, ScorerSpec, ToolCheck, HookRefusal, FakeLLMSpec, ResetSpec):
    _cls.__module__ = "tether.eval"
ToolCallScript.__module__ = "tether.eval"


# -- a loaded pack ---------------------------------------------------------------------------


Scorer = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class LoadedPack:
    """A validated pack with what it names resolved: the agent and the Python scorers."""

    spec: Pack
    source: str
    base_dir: Path
    #: The manifest file, or None for a factory.
    manifest: Path | None
    #: The factory, or None for a manifest.
    factory: Callable[[], Any] | None
    #: ``scorer`` name -> the callable (entry points and module:callable).
    scorers: Mapping[str, Scorer]
    #: Each ``json_schema`` check's schema, by its path in the file.
    schemas: Mapping[str, dict[str, Any]]

    @property
    def name(self) -> str:
        return self.spec.name


LoadedPack.__module__ = "tether.eval"


def load_pack(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> LoadedPack:
    """Read, resolve and validate the pack at ``path``; raise PackError listing every problem."""
    file = Path(path)
    source = str(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PackError([ManifestIssue("", None, f"cannot read: {reason}")], source) from None
    base = file.resolve().parent
    data, lines, problems = read_yaml(text)
    issues = [ManifestIssue(*problem) for problem in problems]
    if data is None and not issues:
        issues.append(ManifestIssue("", 1, "the pack is empty; expected a mapping of keys"))
    elif data is not None and not isinstance(data, dict):
        issues.append(ManifestIssue("", 1, f"expected a mapping of keys, got a {yaml_type(data)}"))
    if not isinstance(data, dict):
        raise PackError(issues, source)
    env = dict(os.environ if environ is None else environ)
    env["TETHER_PACK_DIR"] = str(base)
    unresolved: list[tuple[Loc, str]] = []
    data = resolve(data, env, (), unresolved)
    for loc, name in unresolved:
        issues.append(
            ManifestIssue(
                path_of(loc),
                line_of(lines, loc),
                f"environment variable {name!r} is not set "
                f"(set it, or give a default: ${{{name}:-default}})",
            )
        )
    if issues:
        raise PackError(issues, source)
    try:
        spec = Pack.model_validate(data)
    except ValidationError as exc:
        raise PackError([issue for _, issue, _ in issues_of(exc, Pack, lines)], source) from None
    checker = _Checker(spec, base, lines)
    loaded = checker.run()
    if checker.issues:
        raise PackError(checker.issues, source)
    return LoadedPack(spec, source, base, *loaded)


class _Checker:
    """What pydantic cannot check: the agent, scorer names, regexes, schemas, unique ids."""

    def __init__(self, spec: Pack, base: Path, lines: Mapping[Loc, int]) -> None:
        self.spec = spec
        self.base = base
        self.lines = lines
        self.issues: list[ManifestIssue] = []
        self.scorers: dict[str, Scorer] = {}
        self.schemas: dict[str, dict[str, Any]] = {}

    def problem(self, loc: Loc, message: str) -> None:
        self.issues.append(ManifestIssue(path_of(loc), line_of(self.lines, loc), message))

    def run(
        self,
    ) -> tuple[Path | None, Callable[[], Any] | None, dict[str, Scorer], dict[str, Any]]:
        manifest, factory = self.agent()
        seen: dict[str, int] = {}
        for i, scenario in enumerate(self.spec.scenarios):
            if scenario.id in seen:
                self.problem(
                    ("scenarios", i, "id"),
                    f"duplicate scenario id {scenario.id!r} "
                    f"(first at scenarios[{seen[scenario.id]}])",
                )
            seen.setdefault(scenario.id, i)
            for j, turn in enumerate(scenario.turns):
                for k, check in enumerate(turn.expect):
                    self.scorer(("scenarios", i, "turns", j, "expect", k), check)
            for k, check in enumerate(scenario.score):
                self.scorer(("scenarios", i, "score", k), check)
        return manifest, factory, self.scorers, self.schemas

    def agent(self) -> tuple[Path | None, Callable[[], Any] | None]:
        agent = self.spec.agent
        loc: Loc = ("agent",)
        if _FACTORY.fullmatch(agent) and not (self.base / agent).exists():
            try:
                target = import_target(agent, self.base)
            except (ImportError, AttributeError) as exc:
                self.problem(loc, f"cannot load the agent factory {agent!r}: {exc}")
                return None, None
            if not callable(target):
                self.problem(
                    loc, f"agent factory {agent!r} is a {type(target).__name__}, not callable"
                )
                return None, None
            return None, target
        file = Path(agent) if os.path.isabs(agent) else self.base / agent
        if not file.is_file():
            self.problem(
                loc,
                f"no manifest file {agent!r} (relative to the pack's folder {self.base}); "
                "the agent is an .agent manifest or 'module:factory'",
            )
            return None, None
        return file, None

    def scorer(self, loc: Loc, check: ScorerSpec) -> None:
        kind = check.kind
        if kind == "matches":
            assert check.matches is not None
            try:
                re.compile(check.matches)
            except re.error as exc:
                self.problem((*loc, "matches"), f"not a valid regular expression: {exc}")
        elif kind == "json_schema":
            self.json_schema(loc, check)
        elif kind == "scorer":
            assert check.scorer is not None
            if check.scorer not in self.scorers:
                try:
                    self.scorers[check.scorer] = resolve_scorer(check.scorer, self.base)
                except LookupError as exc:
                    self.problem((*loc, "scorer"), str(exc))

    def json_schema(self, loc: Loc, check: ScorerSpec) -> None:
        schema = check.json_schema
        where = (*loc, "json_schema")
        if isinstance(schema, str):
            file = Path(schema) if os.path.isabs(schema) else self.base / schema
            try:
                schema = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                self.problem(where, f"cannot read the JSON Schema file {file}: {exc}")
                return
            if not isinstance(schema, dict):
                self.problem(where, f"the JSON Schema in {file} is not an object")
                return
        try:
            import jsonschema
        except ImportError:
            self.problem(
                where, "json_schema checks need the jsonschema package: pip install 'tether[eval]'"
            )
            return
        assert isinstance(schema, dict)
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            self.problem(where, f"not a valid JSON Schema: {exc.message}")
            return
        self.schemas[path_of(loc)] = schema


def import_target(spec: str, base: Path | None = None) -> Any:
    """``module:attr`` imported, modules in ``base`` (the pack's folder) importable too."""
    module_name, _, attr = spec.partition(":")
    added = base is not None and str(base) not in sys.path
    if added:
        sys.path.insert(0, str(base))
    try:
        target: Any = importlib.import_module(module_name)
    finally:
        if added:
            sys.path.remove(str(base))
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def _scorer_entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=SCORER_GROUP)}


def available_scorers() -> list[str]:
    """The built-in check kinds, then the ``tether.scorers`` entry points."""
    return [*BUILTIN_SCORERS, *sorted(_scorer_entry_points())]


def resolve_scorer(name: str, base: Path | None = None) -> Scorer:
    """A Python scorer: a ``tether.scorers`` entry point, or ``module:callable``."""
    found = _scorer_entry_points().get(name)
    try:
        if found is not None:
            target = found.load()
        elif _FACTORY.fullmatch(name):
            target = import_target(name, base)
        else:
            names = ", ".join(sorted(_scorer_entry_points())) or "none installed"
            raise LookupError(
                f"unknown scorer {name!r}: not a '{SCORER_GROUP}' entry point ({names}) "
                "nor 'module:callable'"
            )
    except LookupError:
        raise
    except Exception as exc:
        raise LookupError(f"scorer {name!r} could not be loaded: {exc!r}") from None
    if not callable(target):
        raise LookupError(f"scorer {name!r} is a {type(target).__name__}, not callable")
    return target  # type: ignore[no-any-return]


# -- the JSON Schema -------------------------------------------------------------------------


def pack_json_schema() -> dict[str, Any]:
    """The JSON Schema of pack files, generated from the models."""
    schema: dict[str, Any] = Pack.model_json_schema(by_alias=True)
    # A turn may be written as its prompt alone.
    turns = schema["$defs"]["Scenario"]["properties"]["turns"]
    turns["items"] = {"anyOf": [{"type": "string", "minLength": 1}, turns["items"]]}
    return schema


def shipped_pack_schema() -> dict[str, Any]:
    """The schema file shipped in the package (``tether/eval/pack_schema.json``)."""
    text = resources.files("tether.eval").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    result: dict[str, Any] = json.loads(text)
    return result


def render_pack_schema() -> str:
    return json.dumps(pack_json_schema(), indent=2) + "\n"


def check_id(value: str) -> bool:
    return bool(_ID.fullmatch(value))
