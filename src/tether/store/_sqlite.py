"""One SQLite file per runtime: the event journal (and, beside it, hook-run history).

WAL mode; journal writes are committed before the call returns, so an event that ``inject``
accepted survives a SIGKILL of the host process.

``PRAGMA synchronous=NORMAL`` on every connection that writes: in WAL mode a commit appends
its pages to the WAL file with ``write()`` before ``COMMIT`` returns (no ``fsync``), so once
it returned the commit is in the OS's hands and survives the death of the host process (a
SIGKILL, a crash); the WAL is synced when it is checkpointed into the file. A power cut or a
kernel crash can lose the last commits (never corrupt the file): that is beyond what the
journal promises. ``FULL`` would sync the WAL at each commit (about 5x the cost of one here).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from ..errors import TetherError
from . import _leases

__all__ = ["Journal", "JournalFileGone", "JournalWriteAbandoned", "Lease", "connect"]

#: The events table holds only what is not finished (queued, running) and the dead letters: a row
#: is deleted once its event is done. Its reads (recovery at a start, the dead letters) take a
#: process's rows by the primary key's first column, so no second index: one would be written on
#: every state change of every event (a third of each commit's WAL pages) for reads made once a
#: start. A file an earlier version made loses that index when it is opened.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    process     TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    event       TEXT NOT NULL,
    state       TEXT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    reason      TEXT,
    error       TEXT,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (process, event_id)
);
DROP INDEX IF EXISTS events_state;
"""

#: Seconds a write waits for a file another connection has locked before it raises
#: ``sqlite3.OperationalError`` ("database is locked").
BUSY_TIMEOUT: Final = 5.0
#: Seconds a first open waits for a file another program holds (see _take).
OPEN_WAIT: Final = 0.5

_connections: dict[str, sqlite3.Connection] = {}
#: One lock per file, held by each write on its shared connection: the connection is used
#: from several threads (the file's writer thread, the loop), and a write of one must not land
#: inside another's transaction. Reentrant: a write made inside the writer's batch (see
#: Lease.writing) takes it again on the same thread.
_write_locks: dict[str, threading.RLock] = {}
#: How many holders each shared connection has (``connect`` and every Lease holding it).
_holders: dict[str, int] = {}
#: A second connection per file for the reads made on the event loop (see Lease.reader).
_readers: dict[str, sqlite3.Connection] = {}
#: A third connection per file for the writes made at once on the event loop (see
#: Lease.write_now): it never waits for a lock (busy timeout 0) and never checkpoints the WAL
#: (a checkpoint copies the WAL into the file and syncs both: the writer thread does it).
_quick: dict[str, sqlite3.Connection] = {}
#: The connection of the transaction a write made at once runs in, while it runs (set and read
#: with the file's write lock held: see Lease.writing).
_now: dict[str, sqlite3.Connection] = {}
#: (st_dev, st_ino) of each file when its shared connection opened it (see Lease.check).
_identities: dict[str, tuple[int, int]] = {}
#: The tables each open connection has made sure of (see Lease.prepare).
_prepared: dict[str, set[str]] = {}
#: The resolved path of each absolute path given for a file whose connection is open (see
#: _key_of).
_keys: dict[str, str] = {}
_lock = threading.Lock()


class JournalWriteAbandoned(TetherError, sqlite3.OperationalError):
    """A guarded write whose waiter gave up on it before it took the file's lock: nothing
    was written (see Journal._write)."""


class FileInUse(TetherError, sqlite3.OperationalError):
    """The file is held by another program (a second runtime over the same journal)."""


class JournalFileGone(TetherError, sqlite3.OperationalError):
    """The file was deleted or replaced while its connection held it open: what is written
    goes to a file no later process will read, so the write is refused."""


def connect(path: str | Path) -> sqlite3.Connection:
    """A shared connection per file (WAL, NORMAL sync), schema created; held for good.

    A file SQLite cannot open or read (a folder, not a database) raises the sqlite3 error at
    once, its message naming the file; nothing is cached then.
    """
    return _acquire(str(Path(path).resolve()))


def _acquire(key: str) -> sqlite3.Connection:
    with _lock:
        conn = _connections.get(key)
        if conn is None:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            conn = _open(key)
            _connections[key] = conn
            with contextlib.suppress(OSError):
                found = os.stat(key)
                _identities[key] = (found.st_dev, found.st_ino)
        _holders[key] = _holders.get(key, 0) + 1
        return conn


def _key_of(path: str | Path) -> str:
    """The resolved path of ``path``. An absolute path given for a file whose connection is
    open names that file while it stays open (as the connection does: see Lease.gone), so
    the stores of thousands of processes over one file resolve it once, not each (a
    ``resolve`` reads every folder of the path)."""
    key = _keys.get(os.fspath(path))
    if key is not None and key in _connections:
        return key
    return str(Path(path).resolve())


def _release(key: str) -> None:
    with _lock:
        left = _holders.get(key, 0) - 1
        if left > 0:
            _holders[key] = left
            return
        _holders.pop(key, None)
        _identities.pop(key, None)
        _prepared.pop(key, None)
        for given in [given for given, resolved in _keys.items() if resolved == key]:
            del _keys[given]
        conn = _connections.pop(key, None)
        others = [c for c in (_readers.pop(key, None), _quick.pop(key, None)) if c is not None]
    for other in others:
        other.close()
    if conn is not None:
        conn.close()


class Lease:
    """A share of the connection to one file, taken when first used and given back by
    ``release`` (the last share given back closes the file, its descriptors with it). Used
    again after that, it takes a share anew."""

    __slots__ = ("_conn", "_setups", "key", "write_lock")

    def __init__(self, path: str | Path) -> None:
        self.key = _key_of(path)
        # Opened now, so that a path SQLite cannot use is refused where it is declared; a file
        # another program holds is opened again at the first use (db), a start, which says so.
        self._conn: sqlite3.Connection | None = None
        with contextlib.suppress(FileInUse):
            self._conn = _acquire(self.key)
        #: What prepare asked to be run on the file's connection once it is open.
        self._setups: dict[str, Callable[[sqlite3.Connection], None]] = {}
        with _lock:
            if os.path.isabs(path):
                _keys[os.fspath(path)] = self.key
            #: Held by every write on the file's shared connection (see _write_locks).
            self.write_lock = _write_locks.setdefault(self.key, threading.RLock())

    @property
    def db(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            conn = self._conn = _acquire(self.key)
            self._set_up(conn)
        return conn

    def release(self) -> None:
        if self._conn is not None:
            self._conn = None
            _release(self.key)

    def prepare(self, name: str, setup: Callable[[sqlite3.Connection], None]) -> None:
        """Have ``setup`` (a store's ``CREATE TABLE IF NOT EXISTS`` ...) run on the file's
        connection once while it is open, under the write lock: the stores made after it over
        the same file (one per process: thousands) find ``name`` ready. Run when this share
        is first used (at once if it is open): a store made opens nothing."""
        self._setups[name] = setup
        if self._conn is not None:
            self._set_up(self._conn)

    def _set_up(self, conn: sqlite3.Connection) -> None:
        with self.write_lock:
            done = _prepared.setdefault(self.key, set())
            for name, setup in self._setups.items():
                if name not in done:
                    setup(conn)
                    done.add(name)

    @contextlib.contextmanager
    def writing(
        self, shown: str | None = None, *, many: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """The file's shared connection inside a write transaction of this thread's, the
        write lock held: committed when the block ends, rolled back if it raises.

        Outside a transaction, a new one: the file checked first (see ``check``; ``shown``
        names it), then ``BEGIN IMMEDIATE`` (a file another program holds locked fails here,
        up to the busy timeout, with nothing written). Inside one this thread opened (the
        writer's batch, see ``_writer``), that one, which checked the file and commits: a
        single statement that fails is undone alone by SQLite, and ``many`` (several
        statements, or ``executemany``) gets a savepoint, so a write that fails undoes all
        of itself and nothing else."""
        with self.write_lock:
            # Transactions are opened only under the write lock, which this thread holds:
            # one open now (a write made at once, see write_now; or the writer's batch on the
            # shared connection) is this thread's own.
            db = _now.get(self.key) or self.db
            if db.in_transaction:
                if many:
                    yield from _savepoint(db)
                else:
                    yield db
                return
            self.check(shown)
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # never leave the shared connection inside one
                    db.execute("ROLLBACK")
                raise

    def write_now(self, write: Callable[[], None]) -> bool:
        """Run ``write()`` (writes made through ``writing``) at once, in a transaction of its
        own, only if nothing can make it wait: False, and nothing written, when another thread
        holds the file's connection (its writer thread, inside a batch), another connection
        holds the file locked, the file is gone (see ``gone``), or the write failed (rolled
        back: the caller hands it to the writer thread, which runs it again and reports what
        fails). True once committed: in the file (WAL, ``synchronous=NORMAL``), safe from a
        crash of the host process.

        Made on the event loop, it never waits there: its connection's busy timeout is 0,
        and it never checkpoints the WAL (see ``_quick``)."""
        if self.gone() is not None or not self.write_lock.acquire(blocking=False):
            return False
        try:
            if self.key in _now or self.db.in_transaction:
                return False  # this thread is inside a write already: not a new one now
            db = self._quick_db()
            db.execute("BEGIN IMMEDIATE")
            _now[self.key] = db
            try:
                write()
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            finally:
                del _now[self.key]
        except sqlite3.Error:
            return False
        finally:
            self.write_lock.release()
        return True

    def _quick_db(self) -> sqlite3.Connection:
        with _lock:
            db = _quick.get(self.key)
            if db is None:
                db = _quick[self.key] = _open_quick(self.key)
            return db

    @property
    def reader(self) -> sqlite3.Connection:
        """The file's connection for reads (opened at the first, held as ``db`` is).

        A connection of its own: a read on the event loop never waits for the shared
        connection, which a journal writer thread may hold for as long as another program
        holds the file locked (WAL: a reader does not wait for writers)."""
        self.db  # noqa: B018 - holds a share: the reader closes with the file's last share
        with _lock:
            reader = _readers.get(self.key)
            if reader is None:
                reader = _readers[self.key] = _open_reader(self.key)
            return reader

    def gone(self) -> str | None:
        """What became of the file since its connection opened it ("deleted", "replaced"),
        or None while the path still names the file the connection writes (or none is
        open). One ``stat`` of the path: cheap enough before every write."""
        opened = _identities.get(self.key)
        if self._conn is None or opened is None:
            return None
        try:
            found = os.stat(self.key)
        except FileNotFoundError:
            return "deleted"
        except OSError:
            return None  # unreadable folder, say: SQLite reports what it cannot do
        return None if (found.st_dev, found.st_ino) == opened else "replaced"

    def check(self, shown: str | None = None) -> None:
        """Raise JournalFileGone if the file was deleted or replaced (see gone); its message
        names the file as ``shown`` (its path as configured), else by its full path."""
        what = self.gone()
        if what is not None:
            raise JournalFileGone(
                f"SQLite file {shown or self.key}: {what} while open; writes to it are "
                f"refused (they would reach a file no later process reads): stop the "
                f"processes over it and start them again to open the file now at that path"
            )


@contextlib.contextmanager
def named(path: str) -> Iterator[None]:
    """Re-raise an ``sqlite3`` error raised inside with its message naming the file ``path``
    (SQLite's own name none); tether's (a write given up, a file gone) name it already."""
    try:
        yield
    except (JournalWriteAbandoned, JournalFileGone):
        raise
    except sqlite3.Error as exc:
        raise type(exc)(f"SQLite file {path}: {exc}") from exc


def _savepoint(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    db.execute("SAVEPOINT write")
    try:
        yield db
        db.execute("RELEASE write")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK TO write")
            db.execute("RELEASE write")
        raise


def _connect(path: str, timeout: float | None = None) -> sqlite3.Connection:
    """A connection through SQLite's ``unix-excl`` VFS.

    The file is this host's alone while it has it open (another program finds it locked):
    the WAL index then lives in this process's memory, shared by its connections, instead of
    a memory-mapped ``<file>-shm``. A ``-shm`` file that another program truncates, or that
    cannot be written, under such a map kills the whole process with SIGBUS; with no map
    there is nothing to fault on, and a truncated file is only a file.
    """
    return sqlite3.connect(
        f"{Path(path).as_uri()}?vfs=unix-excl",
        uri=True,
        timeout=BUSY_TIMEOUT if timeout is None else timeout,
        check_same_thread=False,
        isolation_level=None,
    )


def _take(conn: sqlite3.Connection, path: str) -> None:
    """Take the file for this host (its first read does), waiting OPEN_WAIT at most: a file
    another program holds is refused at once, naming the file, instead of waiting out the
    busy timeout wherever it is first opened (the event loop, at a start)."""
    conn.execute(f"PRAGMA busy_timeout={int(OPEN_WAIT * 1000)}")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        raise FileInUse(
            "in use by another program: a journal file is one runtime's while it runs (give "
            "each host a file of its own)"
        ) from exc
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")


def _open(path: str) -> sqlite3.Connection:
    # Created for this user only: the file holds event payloads and hook runs (secrets are
    # redacted, the rest of what the agent was sent is not). SQLite gives its -wal and -shm
    # files the database file's permissions. An existing file keeps its own.
    with contextlib.suppress(OSError):  # a folder, say: SQLite names the problem below
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    conn: sqlite3.Connection | None = None
    try:
        conn = _connect(path)
        _take(conn, path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise type(exc)(f"SQLite file {path}: {exc}") from exc
    return conn


def _open_reader(path: str) -> sqlite3.Connection:
    try:
        conn = _connect(path)
        conn.execute("PRAGMA query_only=1")
        # 8 MiB of pages at most, taken as reads need them (SQLite's default: 2 MiB): the
        # runs a history filter answers lie one to a page (1,000 blocked runs among 100,000
        # read 1,000 pages), re-read through the OS at each query past the default.
        conn.execute("PRAGMA cache_size=-8192")
    except sqlite3.Error as exc:
        raise type(exc)(f"SQLite file {path}: {exc}") from exc
    return conn


def _open_quick(path: str) -> sqlite3.Connection:
    try:
        conn = _connect(path, timeout=0)
        # Per connection, as the shared one's: a commit is in the WAL file before COMMIT
        # returns; synced at the checkpoints (the writer thread's).
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
    except sqlite3.Error as exc:
        raise type(exc)(f"SQLite file {path}: {exc}") from exc
    return conn


def close_all() -> None:
    with _lock:
        for conn in (*_connections.values(), *_readers.values(), *_quick.values()):
            conn.close()
        _readers.clear()
        _quick.clear()
        _connections.clear()
        _holders.clear()
        _identities.clear()
        _prepared.clear()
        _keys.clear()


class Journal:
    """The progress of each event of one process: queued, running, done or dead.

    ``queued`` and ``dead`` take the event as it is to be stored, secrets redacted (``redact``
    applied to its strings, its id included); the other calls take an event's id as the
    process knows it and apply ``redact`` to it, so they find the row an id holding a secret
    was stored under.

    A write that fails (the file locked past ``BUSY_TIMEOUT``, a full disk) raises the
    ``sqlite3`` error, its message naming the file.
    """

    def __init__(
        self, path: str | Path, process: str, *, redact: Callable[[str], str] | None = None
    ) -> None:
        self.path = str(path)
        self.process = process
        self._file = Lease(path)
        self._key: Callable[[str], str] = redact if redact is not None else str
        self._lease: weakref.finalize[[str, str], Journal] | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        return self._file.db

    def close(self) -> None:
        """Give back this journal's share of the file's connection (see Lease); a later call
        takes one anew."""
        self._file.release()

    def open(self) -> None:
        """Open the file now if it is not (a share of its connection): the ``sqlite3`` error,
        naming the file, when it cannot be (another program holds it, say)."""
        self._file.db  # noqa: B018 - opening is the point

    def claim(self) -> bool:
        """Take this name's lease on the file: a lock the OS drops when the host dies (a
        SIGKILL too), one byte of ``<file>.lock`` (see _leases). False while another live
        process (another host, or another object here) holds it; True if this one does.

        Recovery takes every unfinished row of the name: only the lease holder may recover.
        """
        if self._lease is not None:
            return True
        key = self._file.key  # the file's resolved path
        if not _leases.claim(key, self.process):
            return False
        # Given back by release(), or when this object is collected without one.
        self._lease = weakref.finalize(self, _leases.release, key, self.process)
        return True

    def release(self) -> None:
        """Give the lease up (see claim)."""
        lease, self._lease = self._lease, None
        if lease is not None:
            lease()

    def stored_id(self, event_id: str) -> str:
        """The id the row of event ``event_id`` is stored under (secrets redacted)."""
        return self._key(event_id)

    def queued(
        self,
        event: dict[str, Any],
        attempts: int = 0,
        *,
        proceed: Callable[[], bool] | None = None,
    ) -> None:
        self._write(
            "INSERT INTO events (process, event_id, event, state, attempts, updated_at) "
            "VALUES (?, ?, ?, 'queued', ?, ?) ON CONFLICT (process, event_id) DO UPDATE SET "
            "state='queued', attempts=excluded.attempts, reason=NULL, error=NULL, "
            "updated_at=excluded.updated_at",
            (self.process, event["event_id"], json.dumps(event), attempts, time.time()),
            proceed,
        )

    def running(
        self, event_id: str, attempts: int, *, proceed: Callable[[], bool] | None = None
    ) -> None:
        self._set(event_id, "running", attempts, proceed)

    def done(self, event_id: str) -> None:
        self._write(
            "DELETE FROM events WHERE process=? AND event_id=?", (self.process, self._key(event_id))
        )

    def dead(self, event: dict[str, Any], attempts: int, reason: str, error: str | None) -> None:
        self._write(
            "INSERT INTO events (process, event_id, event, state, attempts, reason, error, "
            "updated_at) VALUES (?, ?, ?, 'dead', ?, ?, ?, ?) ON CONFLICT (process, event_id) "
            "DO UPDATE SET state='dead', attempts=excluded.attempts, reason=excluded.reason, "
            "error=excluded.error, updated_at=excluded.updated_at",
            (
                self.process,
                event["event_id"],
                json.dumps(event),
                attempts,
                reason,
                error,
                time.time(),
            ),
        )

    def amend_dead(self, errors: list[tuple[str, str | None]]) -> None:
        """Replace the error of dead letters, given as (event_id, error); each keeps its place."""
        self._write_many(
            "UPDATE events SET error=? WHERE process=? AND event_id=? AND state='dead'",
            [(error, self.process, self._key(event_id)) for event_id, error in errors],
        )

    def _set(
        self, event_id: str, state: str, attempts: int, proceed: Callable[[], bool] | None
    ) -> None:
        self._write(
            "UPDATE events SET state=?, attempts=?, updated_at=? WHERE process=? AND event_id=?",
            (state, attempts, time.time(), self.process, self._key(event_id)),
            proceed,
        )

    def unfinished(self) -> list[tuple[dict[str, Any], int]]:
        """(event, attempts) of the events queued or running when the process went away."""
        return [(event, attempts) for event, attempts, _ in self.unfinished_states()]

    def unfinished_states(self) -> list[tuple[dict[str, Any], int, str]]:
        """Events queued or running when the process last went away, in the order queued.

        (The rowid is assigned when an event is first queued and kept by the upserts of its
        later progress, so a running event does not move behind those queued after it.)
        """
        rows = self._file.reader.execute(
            "SELECT event, attempts, state FROM events WHERE process=? AND state IN "
            "('queued', 'running') ORDER BY rowid",
            (self.process,),
        ).fetchall()
        return [(json.loads(e), a, state) for e, a, state in rows]

    def dead_letters(self) -> list[tuple[dict[str, Any], int, str, str | None, float]]:
        rows = self._file.reader.execute(
            "SELECT event, attempts, reason, error, updated_at FROM events "
            "WHERE process=? AND state='dead' ORDER BY updated_at",
            (self.process,),
        ).fetchall()
        return [(json.loads(e), a, r, err, t) for e, a, r, err, t in rows]

    def redelivering(self, event_id: str) -> None:
        """Move the dead letter ``event_id`` behind every event journaled so far: it is about
        to be queued anew. It stays dead until its new state is written (a crash meanwhile
        leaves it a dead letter), and then keeps its new place (see unfinished_states)."""
        self._write(
            "UPDATE events SET rowid = (SELECT MAX(rowid) + 1 FROM events) "
            "WHERE process=? AND event_id=? AND state='dead'",
            (self.process, self._key(event_id)),
        )

    def forget_dead(self, event_ids: list[str]) -> None:
        self._write_many(
            "DELETE FROM events WHERE process=? AND event_id=? AND state='dead'",
            [(self.process, self._key(e)) for e in event_ids],
        )

    def gone(self) -> str | None:
        """ "deleted" or "replaced" if the file went while open (see Lease.gone), else None."""
        return self._file.gone()

    def _write(
        self, sql: str, args: tuple[Any, ...], proceed: Callable[[], bool] | None = None
    ) -> None:
        """Run one write, committed before it returns (or by the writer's batch it is made
        in: see Lease.writing). With ``proceed``, the write takes the file's lock first (the
        wait for another program's lock happens there) and then asks ``proceed()``: False,
        and nothing is written (JournalWriteAbandoned)."""
        with named(self.path), self._file.writing(self.path) as db:
            if proceed is not None and not proceed():
                raise JournalWriteAbandoned(f"SQLite file {self.path}: write given up")
            db.execute(sql, args)

    def _write_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with named(self.path), self._file.writing(self.path, many=True) as db:
            db.executemany(sql, rows)
