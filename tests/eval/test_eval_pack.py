"""Scenario packs: what a pack file may hold, and its errors with path and line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from _eval_support import PackFactory

from tether.eval import PackError, load_pack, pack_json_schema
from tether.eval._pack import render_pack_schema, shipped_pack_schema

GOOD = """\
name: demo
agent: _eval_agents:plain
runs: 2
scenarios:
  - id: one
    turns:
      - "hello"
      - prompt: "and again"
        expect:
          - contains: ok
    score:
      - matches: "P[1-3]"
"""


def _messages(exc: PackError) -> list[str]:
    return [issue.format(exc.source) for issue in exc.errors]


def score_problems(write_pack: PackFactory, *score: str) -> tuple[Path, list[str]]:
    """The problems of a pack whose one scenario scores with ``score`` (YAML items, from line 7)."""
    scenario = textwrap.dedent(
        """\
        name: demo
        agent: _eval_agents:plain
        scenarios:
          - id: one
            turns: ["hi"]
            score:
        """
    )
    path = write_pack(scenario + "".join(f"      - {item}\n" for item in score))
    with pytest.raises(PackError) as caught:
        load_pack(path)
    return path, _messages(caught.value)


def test_a_valid_pack_loads_with_its_agent_factory_resolved(write_pack: PackFactory) -> None:
    pack = load_pack(write_pack(GOOD))
    assert pack.name == "demo"
    assert pack.factory is not None
    assert pack.factory.__name__ == "plain"
    assert [t.prompt for t in pack.spec.scenarios[0].turns] == ["hello", "and again"]
    assert pack.spec.scenarios[0].turns[1].expect[0].contains == "ok"


def test_every_problem_is_reported_at_once_with_its_path_and_line(
    write_pack: PackFactory,
) -> None:
    path = write_pack(
        """\
        name: demo
        agent: _eval_agents:plain
        runs: 0
        scenarios:
          - id: one
            turns: ["hi"]
            score:
              - contains: a
                matches: b
          - id: two
            turns: []
            surprise: 1
        """
    )
    with pytest.raises(PackError) as caught:
        load_pack(path)
    lines = _messages(caught.value)
    assert any(
        f"{path}:3: runs: " in line and "greater than or equal to 1" in line for line in lines
    )
    assert any(
        f"{path}:8: scenarios[0].score[0]: " in line and "exactly one kind" in line
        for line in lines
    )
    assert any(f"{path}:11: scenarios[1].turns: " in line for line in lines)
    assert any(
        f"{path}:12: scenarios[1].surprise: unknown key 'surprise'" in line for line in lines
    )


def test_an_unknown_scorer_is_an_error_naming_what_is_available(
    write_pack: PackFactory,
) -> None:
    path, (line,) = score_problems(write_pack, "scorer: no-such-scorer")
    assert f"{path}:7: scenarios[0].score[0].scorer: unknown scorer 'no-such-scorer'" in line
    assert "tether.scorers" in line


def test_a_bad_regex_and_a_bad_json_schema_are_refused_when_the_pack_is_read(
    write_pack: PackFactory,
) -> None:
    _, lines = score_problems(write_pack, 'matches: "(unclosed"', "json_schema: {type: 12}")
    assert any(
        ":7: scenarios[0].score[0].matches: not a valid regular expression" in x for x in lines
    )
    assert any(":8: scenarios[0].score[1].json_schema: not a valid JSON Schema" in x for x in lines)


def test_the_agent_must_be_a_manifest_file_or_an_importable_factory(
    write_pack: PackFactory,
) -> None:
    for agent, wanted in (
        ("missing.agent", "no manifest file 'missing.agent'"),
        ("_eval_agents:nothing_here", "cannot load the agent factory"),
        ("no_such_module_xyz:build", "cannot load the agent factory"),
    ):
        path = write_pack(f"name: demo\nagent: {agent}\nscenarios: [{{id: a, turns: [hi]}}]\n")
        with pytest.raises(PackError) as caught:
            load_pack(path)
        (line,) = _messages(caught.value)
        assert f"{path}:2: agent: {wanted}" in line


def test_duplicate_scenario_ids_and_ids_with_a_dot_are_refused(write_pack: PackFactory) -> None:
    path = write_pack(
        """\
        name: demo
        agent: _eval_agents:plain
        scenarios:
          - {id: same, turns: [hi]}
          - {id: same, turns: [hi]}
        """
    )
    with pytest.raises(PackError) as caught:
        load_pack(path)
    (line,) = _messages(caught.value)
    assert ":5: scenarios[1].id: duplicate scenario id 'same'" in line
    path = write_pack(
        "name: demo\nagent: _eval_agents:plain\nscenarios: [{id: a.b, turns: [hi]}]\n"
    )
    with pytest.raises(PackError) as caught:
        load_pack(path)
    (line,) = _messages(caught.value)
    assert ":3: scenarios[0].id: " in line
    assert "should match pattern" in line


def test_an_unset_variable_is_an_error_and_a_default_applies(write_pack: PackFactory) -> None:
    path = write_pack(
        "name: demo\nagent: ${EVAL_AGENT_UNSET_X}\nscenarios: [{id: a, turns: ['${T:-hi}']}]\n"
    )
    with pytest.raises(PackError) as caught:
        load_pack(path, environ={})
    (line,) = _messages(caught.value)
    assert ":2: agent: environment variable 'EVAL_AGENT_UNSET_X' is not set" in line
    pack = load_pack(path, environ={"EVAL_AGENT_UNSET_X": "_eval_agents:plain"})
    assert pack.spec.scenarios[0].turns[0].prompt == "hi"


def test_the_shipped_json_schema_is_the_one_the_models_generate() -> None:
    assert shipped_pack_schema() == pack_json_schema()
    assert json.loads(render_pack_schema()) == pack_json_schema()


def test_the_example_pack_validates_against_the_shipped_schema() -> None:
    import jsonschema
    import yaml

    example = Path(__file__).resolve().parents[2] / "examples" / "eval" / "pack.yaml"
    data = yaml.safe_load(example.read_text())
    jsonschema.validate(data, shipped_pack_schema())
    assert load_pack(example).manifest is not None
