"""Plugin artifacts in every store (folder, SQLite, memory): safe names and labels checked
alike, concurrent writers, payload depth, and how many tasks a memory store keeps."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from _process_support import plugin_process as make_process
from _process_support import run_one_task
from tether.hooks import Plugin, PluginContext, PluginError
from tether.store._artifacts import DirArtifacts, MemoryArtifacts, SqliteArtifacts


def test_a_memory_artifact_listing_is_a_copy() -> None:
    store = MemoryArtifacts()
    store.put("t1", "t1.audit.json", {"seen": [1]})

    store.list("t1")[0]["payload"]["seen"].append(2)

    assert store.list("t1")[0]["payload"] == {"seen": [1]}


def test_concurrent_writers_of_one_artifact_never_lose_or_corrupt_it(tmp_path: Path) -> None:
    store = DirArtifacts(tmp_path)
    payloads = [{"writer": i, "text": "x" * (200_000 * (i % 2))} for i in range(6)]
    errors: list[BaseException] = []

    def write(payload: dict[str, Any]) -> None:
        for _ in range(25):
            try:
                store.put("t1", "t1.audit.json", payload)
            except BaseException as exc:  # pragma: no cover - the failure being pinned
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    [artifact] = store.list("t1")
    assert artifact["payload"] in payloads
    assert sorted(os.listdir(tmp_path)) == ["t1.audit.json"]  # no temporary file left


@pytest.mark.parametrize(
    ("task_id", "name", "what"),
    [
        (".", "x.json", "task id"),
        ("t" * 201, "x.json", "task id"),
        ("t", "x" * 196 + ".json", "artifact name"),
        ("a/b", "x.json", "task id"),
        ("t", "../x.json", "artifact name"),
    ],
)
@pytest.mark.parametrize("kind", ["dir", "memory", "sqlite"])
def test_every_store_refuses_the_same_unsafe_or_overlong_parts(
    tmp_path: Path, kind: str, task_id: str, name: str, what: str
) -> None:
    store: Any = {
        "dir": lambda: DirArtifacts(tmp_path / "a"),
        "memory": MemoryArtifacts,
        "sqlite": lambda: SqliteArtifacts(tmp_path / "j.db", "triage"),
    }[kind]()

    with pytest.raises(ValueError, match=what):
        store.put(task_id, name, {})
    assert not (tmp_path / "a" / "by-task").exists()


@pytest.mark.parametrize("name", ["a" * 65, "x" * 10_000])
def test_an_overlong_plugin_name_is_refused_at_registration(name: str) -> None:
    class Long(Plugin):
        async def on_task_completed(self, ctx: PluginContext) -> None:
            pass

    Long.name = name
    with pytest.raises(PluginError, match="at most 64 characters") as info:
        make_process(Long())
    assert len(str(info.value)) < 300  # names the value without a page of it


async def test_a_bad_artifact_label_is_refused_naming_the_rule(tmp_path: Path) -> None:
    errors: list[str] = []

    class Labeller(Plugin):
        name = "labeller"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            for label in ("l" * 65, "Bad", 7):
                try:
                    ctx.emit_artifact({}, label=label)  # type: ignore[arg-type]
                except PluginError as exc:
                    errors.append(str(exc))

    process = make_process(Labeller(), artifacts_dir=str(tmp_path))
    event_id = await run_one_task(process)

    assert len(errors) == 3
    assert all("[a-z0-9_-]+ (at most 64 characters)" in e for e in errors)
    assert process.plugins.artifacts.list(event_id) == []


async def test_an_artifact_label_holding_a_declared_secret_is_refused(tmp_path: Path) -> None:
    secret = "tok4f9q2zx81"
    errors: list[str] = []

    class Leaky(Plugin):
        name = "leaky"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            try:
                ctx.emit_artifact({"k": 1}, label=f"run-{secret}")
            except PluginError as exc:
                errors.append(str(exc))

    process = make_process(Leaky(), artifacts_dir=str(tmp_path), secrets={"token": secret})
    await run_one_task(process)

    [error] = errors
    assert "declared secret" in error
    assert secret not in error
    assert not any(secret in name for name in os.listdir(tmp_path))


async def test_an_artifact_payload_nested_too_deeply_is_a_plugin_error() -> None:
    errors: list[str] = []

    class Deep(Plugin):
        name = "deep"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            payload: list[Any] = []
            for _ in range(100_000):
                payload = [payload]
            try:
                ctx.emit_artifact(payload)
            except PluginError as exc:
                errors.append(str(exc))

    process = make_process(Deep())
    event_id = await run_one_task(process)

    assert errors == ["artifact payload is nested too deeply to store"]
    assert process.plugins.artifacts.list(event_id) == []


def test_memory_artifacts_keep_the_last_tasks_and_say_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryArtifacts(tasks_kept=3)
    for i in range(6):
        store.put(f"t{i}", f"t{i}.audit.json", {"i": i})
        store.put(f"t{i}", f"t{i}.audit.more.json", {"i": i})

    assert [store.list(f"t{i}") != [] for i in range(6)] == [False] * 3 + [True] * 3
    assert len(store.list("t5")) == 2
    assert caplog.text.count("only the last 3 tasks") == 1
    with pytest.raises(ValueError, match="tasks_kept must be an int >= 1, got 0"):
        MemoryArtifacts(tasks_kept=0)
