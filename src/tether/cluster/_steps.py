"""The step journal of the processes a host holds, in the cluster's Redis.

Each process of the runtime gets a ``RedisStepStore`` (its steps, conversation, state and
approvals, fenced by the token of the lease its stream queue holds) and ``RedisWrites``, what
its durable runs write through: the same calls as the journal writes of one host
(``JournalWrites``), made on the store's thread, in order, off the event loop. A write that
fails is logged and counted (in the process's ``journal_errors`` too), never raised (a run
goes on; a step lost makes it run again after a takeover, a call's mark lost leaves the
call's outcome unknown: never a call run twice unasked); one that finds the lease another
host's stops this host's copy (``fenced``), and is not counted.

Each takeover hands them to the process before it starts (``AgentProcess.use_steps``), and
forgets the steps of every run that will not resume (``prune_except``: those of the events the
claim did not take over).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec

from ..process import JournalWrites
from ..store import RedisStepStore, StepsFenced

if TYPE_CHECKING:
    from .._redact import Redactor

__all__ = ["RedisWrites"]

logger = logging.getLogger("tether.cluster")

_P = ParamSpec("_P")


class RedisWrites(JournalWrites):
    """The step journal's writes of one clustered process, on ``store``'s thread (see the
    module docstring); ``fenced`` is called, on the event loop, when one found the lease
    taken."""

    def __init__(
        self, name: str, redactor: Redactor, store: RedisStepStore, fenced: Callable[[], None]
    ) -> None:
        super().__init__(name, redactor, running=lambda: True, path=store.path)
        self.store = store
        self._fenced = fenced
        self._handed = 0

    @property
    def pending(self) -> int:
        """Writes handed to the store's thread whose outcome is not recorded yet."""
        return self._handed

    def write(
        self, about: str, write: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs
    ) -> None:
        """``write(*args)`` on the store's thread, not waited for; its error logged and
        counted (a fenced one stops this host's copy)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:  # (the store hands it to its thread and waits)
            try:
                write(*args, **kwargs)
            except Exception as exc:
                self.failed(about, write.__name__, exc)
            return
        done = asyncio.wrap_future(self.store.submit(write, *args, **kwargs), loop=loop)
        self._handed += 1
        name = write.__name__

        def settled(done: asyncio.Future[None]) -> None:
            self._handed -= 1
            if not done.cancelled() and (exc := done.exception()) is not None:
                self.failed(about, name, exc)

        done.add_done_callback(settled)

    async def landed(
        self, about: str, write: Callable[..., None], *args: Any, **kwargs: Any
    ) -> None:
        """``write(*args)`` on the store's thread, waited for until it landed (a call's
        ``started`` mark, before the tool runs); its error logged and counted."""
        future: concurrent.futures.Future[None] = self.store.submit(write, *args, **kwargs)
        self._handed += 1
        try:
            await asyncio.shield(asyncio.wrap_future(future))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failed(about, write.__name__, exc)
        finally:
            self._handed -= 1

    def failed(self, about: str, name: str, exc: BaseException) -> None:
        """A fenced write stops this host's copy (not counted); any other is counted."""
        if isinstance(exc, StepsFenced):
            logger.error("%s", exc)
            with contextlib.suppress(RuntimeError):  # no event loop: nothing runs anyway
                self._fenced()
            return
        super().failed(about, name, exc)
