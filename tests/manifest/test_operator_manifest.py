"""Operator review of manifests: YAML that nests or refers to itself without end, aliases and
merge keys, and the edges of ``${VAR}``."""

from __future__ import annotations

from pathlib import Path

import pytest

from _manifest_support import problems, write, write_manifest
from tether import ManifestError, load_manifest
from tether.manifest import parse_manifest

# -- YAML without end ------------------------------------------------------------------------


@pytest.mark.slow
def test_yaml_nested_thousands_of_levels_deep_is_a_manifest_error(tmp_path: Path) -> None:
    """Regression: the YAML reader ran out of stack and load_manifest raised RecursionError
    (the CLI then printed "maximum recursion depth exceeded", naming no file)."""
    found = problems(tmp_path, "name: a\nmcp_servers: " + "[" * 5000 + "]" * 5000 + "\n")
    assert len(found) == 1
    assert found[0].startswith("2: ")
    assert "nested too deeply" in found[0]


def test_values_nested_deeper_than_a_manifest_reads_are_refused_with_their_path(
    tmp_path: Path,
) -> None:
    from tether._manifest_yaml import MAX_DEPTH

    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    found = problems(
        tmp_path, f"name: a\ntriggers:\n  - type: cron\n    payload: {{x: {nested}}}\n"
    )
    assert len(found) == 1
    assert found[0].startswith("4: triggers[0].payload.x")
    assert f"nested more than {MAX_DEPTH} levels deep" in found[0]


def test_an_alias_that_contains_itself_is_a_manifest_error(tmp_path: Path) -> None:
    """Regression: ``&a [*a]`` is a list that holds itself; resolving ${VAR} in it never ended
    (RecursionError)."""
    found = problems(tmp_path, "name: a\nmodel: scripted\nmcp_servers: &loop [*loop]\n")
    assert len(found) == 1
    assert found[0].startswith("3: mcp_servers")
    assert "refers to itself" in found[0]


def test_aliases_that_expand_beyond_what_a_manifest_holds_are_refused(tmp_path: Path) -> None:
    """Regression: each alias of an alias multiplies what every later step walks (the line
    map, ${VAR} resolution, validation); six levels of nine made half a million values."""
    from tether._manifest_yaml import MAX_VALUES

    levels = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 6):
        levels.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    text = "name: a\nmodel: scripted\ndescription: x\n" + "\n".join(levels) + "\n"
    found = problems(tmp_path, text)
    assert len(found) == 1
    assert f"more than {MAX_VALUES} values" in found[0]


def test_an_alias_used_a_few_times_and_a_merge_key_with_an_override_load(
    tmp_path: Path,
) -> None:
    """Regression: a key written beside ``<<: *gate`` that the merged mapping also has was
    refused as a "duplicate key" (the line map ran after the merge was flattened in)."""
    path = write(
        tmp_path,
        """\
        name: a
        model: scripted
        hooks:
          - &gate {event: user_prompt_submit, command: [gate], timeout: 5}
          - {<<: *gate, event: task_created}
        approval: {tools: &tools [refund, credit]}
        budget: {max_tool_calls_per_run: 3}
        guardrails: {markers: *tools}
        """,
    )
    manifest = load_manifest(path, environ={})
    assert [h.event for h in manifest.hooks] == ["user_prompt_submit", "task_created"]
    assert manifest.guardrails.markers == ["refund", "credit"]


@pytest.mark.slow
def test_the_cli_names_the_file_of_a_manifest_nested_too_deeply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tether.cli import main

    path = write(tmp_path, "name: a\nmcp_servers: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SystemExit) as exited:
        main(["validate", str(path)])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:2: ")
    assert "Traceback" not in err


# -- ${VAR} ----------------------------------------------------------------------------------


def test_a_default_may_hold_colons_and_dashes(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\ninstructions: ${ENDPOINT:-http://user:pw@host:8080/a-b}\n")
    assert load_manifest(path, environ={}).instructions == "http://user:pw@host:8080/a-b"


def test_a_default_ends_at_the_first_closing_brace_as_in_a_shell(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\ninstructions: '${GREETING:-{hi}} there'\n")
    assert load_manifest(path, environ={}).instructions == "{hi} there"
    path = write(tmp_path, "name: a\ninstructions: '${GREETING:-a}b}'\n")
    assert load_manifest(path, environ={}).instructions == "ab}"


def test_a_set_variable_wins_over_its_default(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\ninstructions: ${GREETING:-hello}\n")
    assert load_manifest(path, environ={"GREETING": "hi"}).instructions == "hi"


def test_a_value_is_never_resolved_again_nor_read_as_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\ninstructions: ${TEXT}\ndescription: ${NOTE:-x}\n")
    environ = {"TEXT": "${HOME}", "NOTE": "a: b\n- c\n{d: e}"}
    manifest = load_manifest(path, environ=environ)
    assert manifest.instructions == "${HOME}"
    assert manifest.description == "a: b\n- c\n{d: e}"


def test_every_missing_variable_is_reported_with_its_path_and_line(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        name: a
        instructions: ${TONE} and ${LENGTH}
        triggers:
          - type: webhook
            webhook_path: /t
            webhook_port: ${PORT}
        approval:
          tools: ["${TOOL}"]
        """,
    )
    assert [f.split(" is not set")[0] for f in found] == [
        "2: instructions: environment variable 'TONE'",
        "2: instructions: environment variable 'LENGTH'",
        "6: triggers[0].webhook_port: environment variable 'PORT'",
        "8: approval.tools[0]: environment variable 'TOOL'",
    ]


def test_references_in_secrets_are_kept_as_written_defaults_included(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: a
        secrets:
          CRM_TOKEN: ${CRM_TOKEN}
          API_KEY: ${API_KEY:-dev-key}
          ESCAPED: $${LITERAL}
        """,
    )
    manifest = load_manifest(path, environ={"CRM_TOKEN": "resolved-would-be-wrong"})
    assert {k: v.get_secret_value() for k, v in manifest.secrets.items()} == {
        "CRM_TOKEN": "${CRM_TOKEN}",
        "API_KEY": "${API_KEY:-dev-key}",
        "ESCAPED": "$${LITERAL}",
    }


def test_a_key_named_secrets_below_the_top_level_is_resolved(tmp_path: Path) -> None:
    cron = {
        "type": "cron",
        "cron_expression": "0 9 * * *",
        "payload": {"secrets": "${WHERE:-vault}"},
    }
    path = write_manifest(tmp_path / "a.agent", name="a", triggers=[cron])
    manifest = load_manifest(path, environ={})
    assert manifest.triggers[0].payload == {"secrets": "vault"}  # type: ignore[union-attr]


# -- YAML edges ------------------------------------------------------------------------------


def test_a_tab_in_the_indentation_is_a_yaml_error_with_its_line(tmp_path: Path) -> None:
    found = problems(tmp_path, "name: a\n\tmodel: scripted\n")
    assert len(found) == 1
    assert found[0].startswith("2: : not valid YAML: ")
    assert "'\\t'" in found[0]


def test_a_scalar_at_the_top_is_not_a_manifest(tmp_path: Path) -> None:
    assert problems(tmp_path, "just text\n") == ["1: : expected a mapping of keys, got a string"]


def test_a_second_document_is_refused(tmp_path: Path) -> None:
    found = problems(tmp_path, "name: a\n---\nname: b\n")
    assert len(found) == 1
    assert "expected a single document" in found[0]


def test_a_duplicate_key_inside_a_section_names_its_path_and_line(tmp_path: Path) -> None:
    found = problems(
        tmp_path, "name: a\nbudget:\n  max_tool_calls_per_run: 1\n  max_tool_calls_per_run: 2\n"
    )
    assert found == ["4: budget.max_tool_calls_per_run: duplicate key 'max_tool_calls_per_run'"]


def test_a_python_tag_is_refused_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    found = problems(
        tmp_path,
        f"name: a\ninstructions: !!python/object/apply:os.system ['touch {marker}']\n",
    )
    assert len(found) == 1
    assert "not valid YAML" in found[0]
    assert not marker.exists()


def test_parse_manifest_reports_the_same_problems_without_a_file() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest("name: a\ntriggers:\n  - {type: cron, cron: x}\n", source="inline")
    assert str(caught.value).startswith("inline:3: triggers[0].cron: unknown key 'cron'")
