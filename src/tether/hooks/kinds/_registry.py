"""The registry of hook kinds: one line per kind, and ``HookConfig`` built from it.

Each kind is a module of this package holding its config (a BaseHookConfig subclass naming
its ``kind`` and the ``key`` field that selects it), its runtime object and its executor. A
declaration's kind is the one whose ``key`` it sets; when several kinds share a key (a
refinement, such as a persistent command), the last one listed whose ``selects(data)`` holds.

``HookConfig`` is the public name of a declaration of any kind. Calling it, its
``model_validate`` / ``model_validate_json`` and a ``list[HookConfig]`` field all go through
:func:`parse_hook`, which builds the class of the kind the data names (a ``command`` makes a
CommandHookConfig). It is a class, not a function, so that what users wrote keeps working
(``HookConfig(...)``, ``HookConfig.model_validate``, ``list[HookConfig]`` as a field type); it
is never instantiated itself. Every kind's config derives from BaseHookConfig
(kinds/_base.py): the kinds cannot derive from HookConfig, which is built from them, so
HookConfig's metaclass makes ``isinstance(x, HookConfig)`` true of any kind's config.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Annotated, Any, Final, Union

from pydantic import BeforeValidator, ConfigDict, GetCoreSchemaHandler, TypeAdapter
from pydantic_core import core_schema

from ._base import BaseHookConfig, not_exactly_one
from ._callback import CallbackHookConfig
from ._command import CommandHookConfig
from ._http import HttpHookConfig
from ._persistent import PersistentHookConfig
from ._prompt import PromptHookConfig

__all__ = ["EXECUTOR_KINDS", "KINDS", "HookConfig", "kind_class", "parse_hook"]

#: kind -> its config class. Add a kind here (and nowhere else).
KINDS: Final[dict[str, type[BaseHookConfig]]] = {
    "command": CommandHookConfig,
    "callback": CallbackHookConfig,
    "persistent": PersistentHookConfig,
    "url": HttpHookConfig,
    "prompt": PromptHookConfig,
}

#: Every kind that can run a hook: those a declaration names, and a plugin's methods.
EXECUTOR_KINDS: Final = (*dict.fromkeys(("callback", "command", *KINDS)), "plugin")

#: The fields that select a kind, in the order error messages name them.
_KEYS: Final = tuple(dict.fromkeys(k.key for k in KINDS.values()))


def kind_class(data: dict[str, Any]) -> type[BaseHookConfig]:
    """The config class of the kind ``data`` declares; raise the 'exactly one' error when it
    names none or several."""
    given = [key for key in _KEYS if data.get(key) is not None]
    if len(given) != 1:
        raise not_exactly_one(list(_KEYS), given)
    candidates = [k for k in KINDS.values() if k.key == given[0]]
    for kind in reversed(candidates):
        if kind.selects(data):
            return kind
    return candidates[0]


def _by_kind(data: Any) -> Any:
    # Validated by the class of its kind alone, so an error keeps its plain location
    # (hooks[0].timeout), not one per kind tried; a declaration already built goes as it is.
    if isinstance(data, dict):
        return kind_class(data).model_validate(data)
    if isinstance(data, BaseHookConfig):
        return data
    raise ValueError(
        "a hook is declared by a mapping of its fields (event, and one of "
        f"{', '.join(_KEYS)}), got {type(data).__name__}"
    )


def _any_kind() -> Any:
    """The type of a declaration of any kind: the union of KINDS, each validated by its own
    class (see _by_kind). Built from the table, so a kind is listed once."""
    return Annotated[Union[tuple(KINDS.values())], BeforeValidator(_by_kind)]  # noqa: UP007


@functools.cache
def _adapter() -> TypeAdapter[BaseHookConfig]:
    # Built at the first declaration, not on import (as each kind's class defers its own).
    return TypeAdapter(_any_kind(), config=ConfigDict(title="HookConfig"))


def parse_hook(data: Any) -> BaseHookConfig:
    """The declaration ``data`` (a mapping) describes, as the config class of its kind (whose
    errors are a HookConfig's)."""
    if isinstance(data, dict):
        return kind_class(data).model_validate(data)
    return _adapter().validate_python(data)  # an instance as it is; anything else refused


class _AnyKind(type):
    """HookConfig's type: any kind's declaration is an instance of HookConfig, as the reference
    says ("each entry is a HookConfig"), though the kinds derive from BaseHookConfig."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, BaseHookConfig)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return isinstance(subclass, type) and issubclass(subclass, BaseHookConfig)


if TYPE_CHECKING:
    #: To a type checker, a declaration of any kind is what every kind derives from.
    HookConfig = BaseHookConfig
else:

    class HookConfig(metaclass=_AnyKind):
        """A hook declaration of any kind: ``HookConfig(event=..., command=...)`` builds the config
        class of the kind its fields name (see :func:`parse_hook`), a BaseHookConfig, and every
        kind's declaration is an instance of HookConfig.
        """

        def __new__(cls, /, **fields: Any) -> Any:
            return parse_hook(fields)

        @classmethod
        def model_validate(cls, obj: Any, **_: Any) -> Any:
            return parse_hook(obj)

        @classmethod
        def model_validate_json(cls, json_data: str | bytes | bytearray, **_: Any) -> Any:
            data = json.loads(json_data)
            if isinstance(data, dict):  # validated as JSON by the class of its kind
                return kind_class(data).model_validate_json(json_data)
            return parse_hook(data)

        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            """The JSON Schema of a declaration of any kind."""
            return _adapter().json_schema()

        @classmethod
        def __get_pydantic_core_schema__(
            cls, source: Any, handler: GetCoreSchemaHandler
        ) -> core_schema.CoreSchema:
            return handler.generate_schema(_any_kind())

    HookConfig.__module__ = "tether"
