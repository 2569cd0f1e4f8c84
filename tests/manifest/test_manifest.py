"""Manifests: loading, ${VAR} resolution, conversion to ProcessConfig, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _manifest_support import problems, write
from tether import ProcessConfig, WebhookTrigger
from tether.hooks.kinds._base import BaseHookConfig
from tether.manifest import (
    CODE_ONLY,
    AgentManifest,
    ManifestError,
    ProcessSpec,
    load_manifest,
    manifest_json_schema,
    manifest_to_process_config,
    parse_manifest,
    render_json_schema,
    shipped_json_schema,
)

STEP_4 = """\
version: "1.0"
name: triage
model: openai:gpt-5-mini
instructions: You triage support tickets.
triggers:
  - type: webhook
    webhook_path: /tickets
    webhook_port: 9782
hooks:
  - event: user_prompt_submit
    command: ["python3", "hooks/gate.py"]
    timeout: 5
    fail_closed: true
    env_passthrough: [TICKET_QUEUE, AUDIT_LOG]
  - event: task_completed
    command: "python3 hooks/notify.py --channel ops"
"""


# -- loading and converting --------------------------------------------------------------------


def test_the_step_4_manifest_loads_into_a_process_config(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, STEP_4), environ={})
    config = manifest_to_process_config(manifest)

    assert isinstance(manifest, AgentManifest)
    assert manifest.name == "triage"
    assert isinstance(config, ProcessConfig)
    assert config.model == "openai:gpt-5-mini"
    assert config.instructions == "You triage support tickets."
    [trigger] = config.triggers
    assert isinstance(trigger, WebhookTrigger)
    assert (trigger.webhook_path, trigger.webhook_port) == ("/tickets", 9782)
    gate, notify = config.hooks
    # A plain declaration of the command kind (not the manifest's own class).
    assert isinstance(gate, BaseHookConfig)
    assert (type(gate).__name__, gate.kind) == ("CommandHookConfig", "command")
    assert (gate.event, gate.command, gate.timeout, gate.fail_closed) == (
        "user_prompt_submit",
        ["python3", "hooks/gate.py"],
        5.0,
        True,
    )
    assert gate.env_passthrough == ["TICKET_QUEUE", "AUDIT_LOG"]
    assert (notify.event, notify.command, notify.timeout, notify.fail_closed) == (
        "task_completed",
        "python3 hooks/notify.py --channel ops",
        None,
        False,
    )


def test_every_section_reaches_the_process_config(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: full
        model: scripted
        instructions: Do things.
        triggers:
          - {type: cron, id: nightly, cron_expression: "0 3 * * *", payload: {job: export}}
          - {type: file_watch, watch_path: inbox, patterns: ["*.txt"]}
          - {type: event, event_type: deploy}
        approval: {tools: [update_state, "refund_*"]}
        budget: {max_runs_per_day: 10, max_tool_calls_per_run: 3}
        context: {conversation_max_messages: 20, state_tool: true}
        guardrails: {payload_scan: true, markers: [drop table]}
        execution_mode: open
        open_mode: {allow_spawn: false, max_children: 2}
        mcp_servers: [{name: docs, transport: http, url: "http://127.0.0.1:1/mcp"}]
        secrets: {API_KEY: s3cret}
        plugins: [debrief]
        max_turns: 4
        concurrency: 2
        max_retries: 1
        restart: {policy: never}
        journal_path: state/journal.db
        """,
    )
    manifest = load_manifest(path, environ={})
    config = manifest_to_process_config(manifest)

    assert [t.type for t in config.triggers] == ["cron", "file_watch", "event"]
    assert config.triggers[1].watch_path == str(tmp_path / "inbox")  # type: ignore[union-attr]
    assert config.approval is not None
    assert config.approval.tools == ["update_state", "refund_*"]
    assert config.approval.handler is None
    assert config.budget is not None
    assert config.budget.max_tool_calls_per_run == 3
    assert config.context.state_tool is True
    assert config.guardrails.markers == ["drop table"]
    assert config.execution_mode == "open"
    assert config.open_mode.allow_spawn is False
    assert config.mcp_servers == [
        {"name": "docs", "transport": "http", "url": "http://127.0.0.1:1/mcp"}
    ]
    assert config.secrets["API_KEY"].get_secret_value() == "s3cret"
    assert (config.max_turns, config.concurrency, config.max_retries) == (4, 2, 1)
    assert config.restart.policy == "never"
    assert config.journal_path == str(tmp_path / "state" / "journal.db")
    assert manifest.plugins == ["debrief"]
    assert config.plugins == ["debrief"]  # activated by name when the process is created


def test_omitted_guardrail_markers_keep_the_built_in_list(tmp_path: Path) -> None:
    config = manifest_to_process_config(
        load_manifest(write(tmp_path, "name: a\nmodel: scripted\n"), environ={})
    )
    assert config.guardrails.markers == ProcessConfig().guardrails.markers


def test_a_numeric_version_is_read_as_text(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, "version: 1.0\nname: a\n"), environ={})
    assert manifest.version == "1.0"


def test_every_process_config_field_is_in_the_spec_or_code_only() -> None:
    """A new ProcessConfig field must be added to the manifest (or named code-only here)."""
    code_only = {"tools", "plugins"} | set(CODE_ONLY)
    missing = set(ProcessConfig.model_fields) - set(ProcessSpec.model_fields) - code_only
    assert missing == set()


# -- ${VAR} ------------------------------------------------------------------------------------


def test_variables_are_resolved_at_load_time_with_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: ${AGENT_NAME}
        instructions: "Queue ${QUEUE:-general}, team ${TEAM:-none}"
        triggers:
          - {type: webhook, webhook_path: /t, webhook_port: "${PORT:-9782}"}
        hooks:
          - event: task_completed
            command: ["notify", "--channel", "${CHANNEL}"]
            env: {SLACK_TOKEN: "${SLACK_TOKEN}"}
        """,
    )
    environ = {"AGENT_NAME": "triage", "TEAM": "eu", "CHANNEL": "ops", "SLACK_TOKEN": "xoxb-1"}
    manifest = load_manifest(path, environ=environ)

    assert manifest.name == "triage"
    assert manifest.instructions == "Queue general, team eu"
    assert manifest.triggers[0].webhook_port == 9782  # type: ignore[union-attr]
    assert manifest.hooks[0].command == ["notify", "--channel", "ops"]
    assert manifest.hooks[0].env["SLACK_TOKEN"].get_secret_value() == "xoxb-1"


def test_the_secrets_section_is_never_resolved(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\nsecrets:\n  TOKEN: ${NOT_SET_ANYWHERE}\n")
    manifest = load_manifest(path, environ={})
    assert manifest.secrets["TOKEN"].get_secret_value() == "${NOT_SET_ANYWHERE}"


def test_a_doubled_dollar_keeps_a_reference_for_run_time(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'name: a\nhooks:\n  - event: task_completed\n    command: x\n    env: {T: "$${TOKEN}"}\n',
    )
    manifest = load_manifest(path, environ={})
    assert manifest.hooks[0].env["T"].get_secret_value() == "${TOKEN}"


def test_the_manifest_folder_is_a_built_in_variable(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: a\nhooks:\n  - event: task_completed\n"
        '    command: ["python3", "${TETHER_MANIFEST_DIR}/hooks/notify.py"]\n',
    )
    manifest = load_manifest(path, environ={})
    assert manifest.hooks[0].command == ["python3", f"{tmp_path.resolve()}/hooks/notify.py"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            """\
            name: a
            hooks:
              - event: task_completed
                command: x
                env: {SLACK_TOKEN: "${SLACK_TOKEN}"}
            """,
            [
                "5: hooks[0].env.SLACK_TOKEN: environment variable 'SLACK_TOKEN' is not set "
                "(set it, or give a default: ${SLACK_TOKEN:-default})"
            ],
            id="a_missing_variable_names_the_variable_the_path_and_the_line",
        ),
        pytest.param(
            """\
            name: a
            max_turns: many
            triggers:
              - type: webhook
                webhook_path: /t
                webhook_port: [1]
            context:
              state_tool: maybe
            """,
            [
                "2: max_turns: Input should be a valid integer, unable to parse string as an "
                "integer (got 'many')",
                "6: triggers[0].webhook_port: Input should be a valid integer (got a list)",
                "8: context.state_tool: Input should be a valid boolean, unable to interpret input "
                "(got 'maybe')",
            ],
            id="wrong_types_name_the_path_the_line_and_the_value",
        ),
        pytest.param(
            """\
            name: a
            triggers:
              - {type: webhook, webhook_path: /t}
              - type: cron
                cron: "* * * * *"
                cron_expression: "* * * * *"
            approval: {tools: [x], handler: mine}
            colour: blue
            """,
            [
                "5: triggers[1].cron: unknown key 'cron'; allowed keys: id, type, "
                "cron_expression, payload",
                "7: approval.handler: unknown key 'handler'; allowed keys: tools, operator",
                "8: colour: unknown key 'colour'; allowed keys: "
                + ", ".join(k for k in AgentManifest.model_fields),
            ],
            id="unknown_keys_name_the_key_and_its_path",
        ),
        pytest.param(
            """\
            name: a
            hooks:
              - event: user_prompt_submit
                callback: mymodule.no_passwords
            """,
            [
                "3: hooks[0]: a manifest hook runs a 'command'; Python callbacks are registered in "
                "code (process.hooks)"
            ],
            id="a_hook_with_a_callback_is_the_documented_error",
        ),
        pytest.param(
            "name: a\nhooks:\n  - {event: task_created, command: x, callback: y}\n",
            [
                "3: hooks[0]: a manifest hook runs a 'command'; Python callbacks are registered in "
                "code (process.hooks)"
            ],
            id="a_hook_with_both_command_and_callback_is_refused",
        ),
        pytest.param(
            "name: a\nhooks:\n  - event: task_created\n    timeout: 3\n",
            ["3: hooks[0].command: missing required key 'command'"],
            id="a_hook_with_neither_command_nor_callback_is_refused",
        ),
        pytest.param(
            "name: a\ntriggers:\n  - type: cron\n    cron_expression: every day\n",
            [
                "4: triggers[0].cron_expression: cron_expression 'every day' does not parse; "
                "expected five fields (minute hour day-of-month month day-of-week), "
                "e.g. '*/5 * * * *'"
            ],
            id="a_cron_expression_that_does_not_parse_is_refused",
        ),
        pytest.param(
            """\
            name: a
            triggers:
              - {type: webhook, webhook_path: /tickets, webhook_port: 9782}
              - {type: webhook, webhook_path: /other, webhook_port: 9782}
              - {type: webhook, webhook_path: /tickets, webhook_port: 9782}
            """,
            [
                "5: triggers[2].webhook_path: webhook path /tickets on port 9782 is already served "
                "by triggers[0]"
            ],
            id="two_webhooks_on_one_port_and_path_clash",
        ),
        pytest.param(
            """\
            name: a
            triggers:
              - {type: webhook, webhook_path: /a, webhook_port: 9782}
              - {type: webhook, webhook_path: /b, webhook_port: 9782, webhook_host: 0.0.0.0}
            """,
            [
                "4: triggers[1].webhook_host: port 9782 is served on 127.0.0.1 by triggers[0]; "
                "one port listens on one host"
            ],
            id="one_port_cannot_listen_on_two_hosts",
        ),
        pytest.param(
            "name: a\ntriggers:\n  - {type: event, id: x, event_type: a}\n"
            "  - {type: event, id: x, event_type: b}\n",
            ["4: triggers[1].id: trigger id 'x' is already used by triggers[0]"],
            id="duplicate_trigger_ids_are_refused",
        ),
        pytest.param(
            "name: a\ntriggers:\n  - {type: email}\n  - {webhook_path: /x}\n",
            [
                "3: triggers[0]: unknown trigger type 'email'; expected one of 'cron', 'webhook', "
                "'file_watch', 'event'",
                "4: triggers[1]: a trigger needs a 'type': one of 'cron', 'webhook', "
                "'file_watch', 'event'",
            ],
            id="unknown_trigger_types_and_missing_types_are_named",
        ),
        pytest.param(
            "name: a\nmodel: scripted\nname: b\n",
            ["3: name: duplicate key 'name'"],
            id="duplicate_keys_are_reported",
        ),
    ],
)
def test_a_manifest_problem_is_reported_at_its_line(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    """Each problem of a bad manifest, with its line and path."""
    assert problems(tmp_path, text) == expected


def test_a_set_but_empty_variable_takes_the_default(tmp_path: Path) -> None:
    path = write(tmp_path, "name: ${NAME:-fallback}\n")
    assert load_manifest(path, environ={"NAME": ""}).name == "fallback"


# -- entrypoint --------------------------------------------------------------------------------


def test_the_old_entrypoint_key_loads_with_a_future_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\nentrypoint: agent.py\n")
    with pytest.warns(FutureWarning, match=r"agent.agent:2: the top-level 'entrypoint' key"):
        manifest = load_manifest(path, environ={})
    assert manifest.name == "a"


# -- bad input ---------------------------------------------------------------------------------


def test_bad_yaml_is_reported_with_its_line(tmp_path: Path) -> None:
    found = problems(tmp_path, "name: a\ntriggers: [\n  {type: cron\n")
    assert len(found) == 1
    assert found[0].startswith("4: : not valid YAML: ")


def test_an_empty_file_or_a_list_is_not_a_manifest(tmp_path: Path) -> None:
    assert problems(tmp_path, "") == ["1: : the manifest is empty; expected a mapping of keys"]
    assert problems(tmp_path, "- a\n- b\n") == ["1: : expected a mapping of keys, got a list"]


def test_a_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"cannot read: No such file"):
        load_manifest(tmp_path / "nope.agent")


def test_a_wrong_type_where_a_secret_may_be_does_not_echo_the_value(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        name: a
        secrets:
          API_KEY: 8675309123
        """,
    )
    assert len(found) == 1
    assert found[0].startswith("3: secrets.API_KEY: Input should be a valid string")
    assert "8675309123" not in found[0]


def test_the_callback_error_reads_as_documented_in_the_message() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(
            "name: a\nhooks:\n  - {event: task_created, callback: x}\n", source="triage.agent"
        )
    assert str(caught.value) == (
        "triage.agent:3: hooks[0]: a manifest hook runs a 'command'; Python callbacks are "
        "registered in code (process.hooks)"
    )


def test_code_only_fields_and_bad_names_and_versions_are_refused(tmp_path: Path) -> None:
    found = problems(tmp_path, "name: a\ntools: [x]\n")
    assert found == [
        "2: tools[0]: tool 'x' is not an import path; write 'package.module:function' (an "
        "async function, or a Tool, importable on the runtime's host)",
    ]
    found = problems(tmp_path, 'version: "2.0"\nname: ../etc\nmodel: gpt-4\n')
    assert found[0] == "1: version: unsupported manifest version '2.0'; this tether reads '1.0'"
    assert found[1].startswith("2: name: process name '../etc' is not allowed")
    assert found[2].startswith("3: model: model 'gpt-4' is not supported")


def test_every_problem_is_reported_at_once_in_file_order(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        name: a
        instructions: ${MISSING}
        max_turns: 0
        hooks:
          - {event: nope, command: x}
        """,
    )
    assert [f.split(":")[0] for f in found] == ["2", "3", "5"]


# -- the JSON Schema ---------------------------------------------------------------------------


def test_the_shipped_json_schema_is_the_generated_one() -> None:
    """If this fails, regenerate: tether schema > src/tether/manifest_schema.json"""
    assert shipped_json_schema() == manifest_json_schema()
    path = Path(__file__).parents[2] / "src" / "tether" / "manifest_schema.json"
    assert path.read_text() == render_json_schema()


def test_the_schema_describes_manifest_keys_and_forbids_others() -> None:
    schema = manifest_json_schema()
    assert schema["required"] == ["name"]
    assert schema["additionalProperties"] is False
    assert {"hooks", "triggers", "secrets", "approval", "entrypoint"} <= set(schema["properties"])
    assert schema["properties"]["entrypoint"]["deprecated"] is True
    hook = schema["$defs"]["ManifestHook"]
    assert "callback" not in hook["properties"]
    assert "command" in hook["required"]
    json.dumps(schema)
