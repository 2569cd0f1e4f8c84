"""Hook kinds: how a declared hook runs, one module per kind.

=================  ==============  =====================================================
kind (key)         module          config / runtime object / executor
=================  ==============  =====================================================
callback           _callback.py    CallbackHookConfig / the callable / CallbackExecutor
command            _command.py     CommandHookConfig / ShellHook / CommandExecutor
persistent         _persistent.py  PersistentHookConfig / PersistentHook / PersistentExecutor
url (HTTP)         _http.py        HttpHookConfig / HttpHook / HttpExecutor
prompt             _prompt.py      PromptHookConfig / tether.agent.PromptHook / PromptExecutor
plugin             _plugin.py      (a Plugin's methods) / Plugin / PluginExecutor
=================  ==============  =====================================================

Adding a kind is one module here plus one line in ``_registry.py`` (see docs/executors.md).
``_base.py`` holds what every declaration shares. This package's ``__init__`` imports nothing,
so loading one kind (a Plugin, with ``import tether``) does not load pydantic or the others.

Two runtime objects live one level up, because code uses them without pydantic and other
hooks derive from them: ShellHook and CommandExecutor (hooks/_shell.py; the Claude Code hook
and the persistent hook build on it) and CallbackExecutor (hooks/_executor.py, the engine's
default for any callable registered in code).
"""
