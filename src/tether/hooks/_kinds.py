"""The registry of executor kinds a HookConfig can declare: one line per kind.

Each kind is a HookConfig class in a module of its own (its fields, its validation, and
``executor()``, which builds what runs it). A kind is selected by its ``key`` field being set;
when several kinds share a key (a refinement, such as a persistent command), the last one
listed whose ``selects(data)`` holds wins.
"""

from __future__ import annotations

from typing import Any, Final

from ._callback import CallbackHookConfig
from ._command import CommandHookConfig
from ._config import HookConfig, not_exactly_one
from ._persistent_command import PersistentHookConfig
from ._prompt import PromptHookConfig
from ._url import UrlHookConfig

__all__ = ["EXECUTOR_KINDS", "KINDS", "kind_class"]

#: kind -> its HookConfig class. Add a kind here (and nowhere else).
KINDS: Final[dict[str, type[HookConfig]]] = {
    "command": CommandHookConfig,
    "callback": CallbackHookConfig,
    "persistent": PersistentHookConfig,
    "url": UrlHookConfig,
    "prompt": PromptHookConfig,
}

#: Every kind that can run a hook: those a HookConfig declares, and a plugin's methods.
EXECUTOR_KINDS: Final = (*dict.fromkeys(("callback", "command", *KINDS)), "plugin")

#: The fields that select a kind, in the order error messages name them.
_KEYS: Final = tuple(dict.fromkeys(k.key for k in KINDS.values()))


def kind_class(data: dict[str, Any]) -> type[HookConfig]:
    """The HookConfig class of the kind ``data`` declares; raise the 'exactly one' error when
    it names none or several."""
    given = [key for key in _KEYS if data.get(key) is not None]
    if len(given) != 1:
        raise not_exactly_one(list(_KEYS), given)
    candidates = [k for k in KINDS.values() if k.key == given[0]]
    for kind in reversed(candidates):
        if kind.selects(data):
            return kind
    return candidates[0]


def _ready() -> None:
    from . import _config

    _config._KINDS_READY = True
    HookConfig.model_rebuild(force=True)


_ready()
