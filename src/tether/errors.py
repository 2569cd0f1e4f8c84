"""The root of tether's exceptions (``tether.TetherError``), and the whole tree drawn in one place.

Every exception tether defines derives from :class:`TetherError`, so ``except
tether.TetherError`` catches anything tether raised and lets everything else through. Each
class also keeps the built-in base its callers already catch (shown in brackets), and its
one-line docstring says when it is raised. Each class lives beside the code that raises it
(the module after the name); the public ones are exported from ``tether``.

Exception tree::

    TetherError                         tether     (the root; never raised itself)
    ├── HookBlocked                     hooks      a hook refused the action, on purpose
    ├── HookError                       hooks      a hook failed (reported, never raised)
    │   ├── HookTimeoutError            hooks      [TimeoutError] a hook overran its timeout
    │   ├── CommandHookError            hooks      [RuntimeError] a command hook failed
    │   │   └── CommandHookTimeoutError hooks      (also a HookTimeoutError)
    │   ├── HttpHookError               hooks      [RuntimeError] an HTTP hook failed
    │   │   └── HttpHookTimeoutError    hooks      (also a HookTimeoutError)
    │   ├── PromptHookError             hooks      [RuntimeError] a prompt hook gave no decision
    │   ├── InvalidArgumentsRewrite     agent      a rewrite of tool arguments the schema refuses
    │   └── InvalidModelCallRewrite     agent      a model-call rewrite that cannot be sent or read
    ├── PluginError                     hooks      [ValueError] a plugin is malformed or misused
    │   └── PluginHandlerError          hooks      [TypeError] a handler is not callable
    ├── OrderError                      hooks      [ValueError] before/after form a cycle
    ├── DeclarationError                hooks      [ValueError] before/after names a missing hook
    ├── ClaudeCodeHooksError            hooks      [ValueError] an unusable Claude Code hooks file
    ├── _Skip                           hooks      a Claude Code entry that cannot be mapped
    ├── FileRefused                     hooks      a path that cannot be such a file (a FIFO, ...)
    ├── Expired                         hooks      [TimeoutError] awaited code ran past its timeout
    ├── Block                           hookserver a co-process handler refused the event
    ├── JournalWriteAbandoned           store      [sqlite3.OperationalError] a write given up
    ├── JournalFileGone                 store      [sqlite3.OperationalError] the file was replaced
    ├── FileInUse                       store      [sqlite3.OperationalError] another program has it
    ├── _Lost                           store      a batch's transaction rolled back under it
    ├── StepsFenced                     store      [RuntimeError] a step write after the lease went
    ├── ModelError                      models     a model call failed
    │   ├── ModelConfigError            models     the model is misconfigured
    │   ├── ModelUnavailableError       models     unreachable, timed out or kept failing
    │   └── ModelResponseError          models     the answer is not a chat completion
    ├── RunError                        agent      a run could not finish (turns, model failure)
    │   ├── RunBlocked                  agent      a model-call hook refused the call
    │   └── RunRefused                  agent      a budget refused the next model call
    ├── ToolArgumentsError              agent      [ValueError] arguments that do not fit the tool
    ├── ProcessError                    process    an AgentProcess refused or failed a call
    │   ├── ProcessStateError           process    not allowed in the current state
    │   │   └── NothingToRollBackError  process    no applied change to undo
    │   ├── ProcessBusyError            process    still running tasks past the wait
    │   ├── QueueUnavailableError       process    the queue cannot take an event (Redis away)
    │   ├── SpawnRefusedError           process    a subagent could not be spawned
    │   ├── ProcessExistsError          runtime    [ValueError] the name is taken
    │   └── WebhookClashError           runtime    [ValueError] a port and path already served
    ├── InvalidEventError               process    [ValueError, TypeError] a bad trigger event
    ├── McpToolError                    process    an MCP tool answered an error
    │   └── McpServerUnavailableError   process    its server is not connected now
    ├── ProgramNotFoundError            process    [OSError] an MCP server's program is missing
    ├── ManifestError                   manifest   [ValueError] a manifest cannot be used
    │   └── PackError                   eval       a scenario pack cannot be used
    ├── _Refused                        manifest   a YAML document too deep, looping or endless
    ├── ClusterError                    cluster    [RuntimeError] Redis unreachable, no host answers
    ├── APIError                        api        an error answer of the HTTP API
    ├── APIConfigError                  api        [ValueError] the API cannot start as configured
    ├── APIClientError                  cli        the API could not be reached or answered an error
    └── TokenFileError                  cli        [click.UsageError] the token file cannot be used

This module imports nothing: the engine, at the bottom of tether's layers, imports it.
"""

from __future__ import annotations

__all__ = ["TetherError"]


class TetherError(Exception):
    """Base of every exception tether raises; never raised itself."""


TetherError.__module__ = "tether"
