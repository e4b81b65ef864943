"""Parsing, help text, script lines and rendering, against the real command registry."""

from __future__ import annotations

import io

import pytest

from kafka_shell.base.errors import UsageError
from kafka_shell.face.modes import script_lines
from kafka_shell.declarations.parsing import help_text, parse, tokenize
from kafka_shell.declarations.registry import load_commands
from kafka_shell.declarations.render import Result, Table, render
from tests.output import json_rows, json_tables

REGISTRY = load_commands()


def p(line: str, **context):
    return parse(tokenize(line), REGISTRY, context or None)


def test_tokenize_quotes_escapes_and_comments():
    assert tokenize("create-topic --topic 'a b' --config x=\"1 2\" # note") == \
        ["create-topic", "--topic", "a b", "--config", "x=1 2"]
    assert tokenize("alter-configs --add-config a=b#c") == ["alter-configs", "--add-config", "a=b#c"]
    assert tokenize("   # only a comment") == []
    assert tokenize("topic '#hash' # comment") == ["topic", "#hash"]
    assert tokenize("x --config 'a # b'") == ["x", "--config", "a # b"]
    with pytest.raises(UsageError, match="Unbalanced quotes"):
        tokenize('create-topic --topic "x')


def test_values_types_repeats_and_defaults():
    parsed = p("create-topic --topic a --topic=b --partitions 3 --config k=v --if-not-exists")
    assert parsed.args["topic"] == ["a", "b"]
    assert parsed.args["partitions"] == 3 and parsed.args["replication_factor"] is None
    assert parsed.args["config"] == [("k", "v")]
    assert parsed.args["if_not_exists"] is True and parsed.args["dry_run"] is False
    assert parsed.given == {"topic", "partitions", "config", "if_not_exists"}
    assert p("create-topic --topic a --replica-assignment 1:2,2:3").args["replica_assignment"] == [[1, 2], [2, 3]]
    # Choices as Kafka's tools spell them (upper case) are taken too.
    assert p("elect-leaders --election-type PREFERRED --all-topic-partitions").args["election_type"] == "preferred"


@pytest.mark.parametrize("line,message", [
    ("create-topc --topic a", "Unknown command create-topc (did you mean create-topic?)"),
    ("frobnicate", "Unknown command frobnicate (type help for the list of commands)"),
    ("create-topic --topic a --partiton 3", "Unknown option --partiton for create-topic (did you mean --partitions?)"),
    ("create-topic --partitions 3", "Missing required option --topic for create-topic"),
    ("create-topic --topic a --partitions", "Option --partitions of create-topic needs a value (N)"),
    ("create-topic --topic a --partitions x", 'Invalid value "x" for --partitions of create-topic: expected a positive integer'),
    ("create-topic --topic a --partitions 1 --partitions 2", "Option --partitions given twice"),
    ("create-topic --topic a --if-not-exists=yes", "takes no value"),
    ("create-topic --topic a extra", 'Unexpected argument "extra" for create-topic (see create-topic --help)'),
    ("create-topic orders", 'Unexpected argument "orders" for create-topic (did you mean --topic orders?)'),
    ("produce --topic t --value x", "Unknown option --value for produce (VALUE is given without an option; see produce --help)"),
    ("reassign-partitions --generate a", 'Unexpected argument "a" for reassign-partitions (see reassign-partitions --help)'),
    ("output yaml", 'Invalid value "yaml" for FORMAT of output: choose one of table, json, jsonl, csv'),
    ("describe-configs --all", "describe-configs needs one of --topic, --broker, --entity-name, --entity-default"),
    ("describe-configs --topic a --broker 1", "Options --topic and --broker of describe-configs cannot be used together"),
    ("api-versions --broker one", 'Invalid value "one" for --broker of api-versions: expected a broker id from 0 to 2147483647'),
])
def test_usage_errors_name_the_bad_part(line, message):
    with pytest.raises(UsageError) as err:
        p(line)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_context_topic_fills_only_what_the_line_leaves_out():
    assert p("describe-topic", topic="orders").args["topic"] == ["orders"]
    assert p("describe-topic --topic other", topic="orders").args["topic"] == ["other"]
    assert p("describe-configs", topic="orders").args["topic"] == "orders"
    # another option of the same required group wins over the context
    assert p("describe-configs --broker 1", topic="orders").args["topic"] is None
    assert "topic" not in p("create-topic --topic x", topic="orders").given - {"topic"}


def test_topic_partitions_are_parsed_with_the_line():
    """`--topic t:0,2` of the group offset commands is read when the line is parsed (a script is
    refused before anything runs); the context topic is read the same way."""
    from kafka_shell.base.names import TopicPartitions
    parsed = p("reset-offsets --group g --topic a --topic b:2,0,2 --to-earliest")
    assert parsed.args["topic"] == [TopicPartitions("a"), TopicPartitions("b", (2, 0))]
    assert [str(t) for t in parsed.args["topic"]] == ["a", "b:2,0"]
    assert p("delete-offsets --group g", topic="orders").args["topic"] == [TopicPartitions("orders")]
    assert p("reset-streams-group-offsets --group g --input-topic s:1 --to-earliest").args["input_topic"] == \
        [TopicPartitions("s", (1,))]
    for bad in ("t:x", "t:", "t:1,,2", ":1", "t:-1", "t:99999999999"):
        with pytest.raises(UsageError) as err:
            p(f"reset-offsets --group g --topic {bad} --to-earliest")
        assert str(err.value) == (f'Invalid value "{bad}" for --topic of reset-offsets: expected '
                                  "topic:partition,partition (e.g. orders:0,2)")


def test_help_flag_and_generated_help():
    assert p("create-topic --help").help and p("delete-topic -h").help
    text = help_text(REGISTRY.get("delete-topic"))
    assert text.startswith("Usage: delete-topic --topic NAME [--topic ...] [--if-exists] [--blocking]")
    assert "--yes" in text and "Examples:" in text and "context topic" in text
    assert "(choose" not in text
    assert "(one of: table, json, jsonl, csv)" in help_text(REGISTRY.get("output"))


def test_script_lines_join_continuations_and_drop_comments():
    raw = ["# header", "", "create-topic --topic a \\", "   --partitions 3", "topic a", "  # indented comment",
           "describe-topic"]
    assert script_lines(raw) == [(3, "create-topic --topic a --partitions 3"), (5, "topic a"), (7, "describe-topic")]


def test_render_json_csv_and_table_share_the_data():
    result = Result.table(["Topic", "Replicas", "Leader"], [["t", [1, 2], None]], "Done.")
    outs = {}
    for fmt in ("table", "json", "csv"):
        out, err = io.StringIO(), io.StringIO()
        render(result, fmt, out, err)
        assert err.getvalue() == "Done.\n"  # messages never pollute stdout
        outs[fmt] = out.getvalue()
    assert json_rows(outs["json"]) == [{"topic": "t", "replicas": [1, 2], "leader": None}]
    assert outs["csv"] == "topic,replicas,leader\nt,\"1,2\",\n"
    assert outs["table"].splitlines()[2].split() == ["t", "1,2"]   # a column empty in every row is left out
    two_rows = Result.table(["Topic", "Leader"], [["t", None], ["u", 1]])
    out = io.StringIO()
    render(two_rows, "table", out, io.StringIO())
    assert out.getvalue().splitlines()[2].split() == ["t", "-"]
    two = Result(tables=[Table(["A"], [[1]], name="x"), Table(["B"], [[2]], name="y")])
    out = io.StringIO()
    render(two, "json", out, io.StringIO())
    assert json_tables(out.getvalue()) == {"x": [{"a": 1}], "y": [{"b": 2}]}
