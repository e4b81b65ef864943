"""REPL completion, each stage alone: stage 1 (text -> typed suggestions) on a registry built here,
stage 2 (suggestions -> candidates) on a ClusterSnapshot built from plain data, and the lexer.
No cluster needed: like pgcli's tests/metadata.py."""

from __future__ import annotations

import os

from prompt_toolkit.document import Document
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, String, Text

from kafka_shell.connection.metadata import BrokerInfo, ClusterSnapshot, ControllerInfo, PartitionInfo, TopicInfo
from kafka_shell.declarations.registry import Command, Option, Registry
from kafka_shell.face.repl import suggest as s
from kafka_shell.face.repl.completer import MAX_CANDIDATES, KafkaCompleter
from kafka_shell.face.repl.lexer import lexer_for
from kafka_shell.face.repl.suggest import split_words, suggest


def _noop(session, args):
    return None


def make_registry() -> Registry:
    r = Registry()
    for cmd in [
        Command("create-topic", _noop, (
            Option("--topic", repeatable=True, completer="topic"),
            Option("--partitions", type=int), Option("--replication-factor", type=int),
            Option("--config", repeatable=True, metavar="KEY=VALUE", completer="config_key"),
            Option("--if-not-exists", flag=True), Option("--dry-run", flag=True)),
            help="Create topics.", mutates=True),
        Command("describe-topic", _noop, (Option("--topic", completer="topic"),
                                          Option("--unavailable", flag=True)),
                help="Describe a topic.", topic_context=True),
        Command("delete-topic", _noop, (Option("--topic", repeatable=True, completer="topic"),
                                        Option("--yes", flag=True)), help="Delete topics."),
        Command("topic", _noop, (Option("topic", completer="topic"),), help="Switch topic context."),
        Command("alter-configs", _noop, (
            Option("--entity-type", choices=("topics", "brokers", "groups")),
            Option("--entity-name", completer="entity_name"),
            Option("--add-config", metavar="K=V,K2=[A,B]", completer="config_key"),
            Option("--delete-config", metavar="K,K2", completer="config_key"),
            Option("--topic", completer="topic"), Option("--broker", type=int, completer="broker"),
            Option("--entity-default", flag=True)),
            help="Change configs."),
        Command("describe-group", _noop, (Option("--group", completer="group"),
                                          Option("--members", flag=True), Option("--offsets", flag=True)),
                help="Describe a group.", exclusive_groups=(("--members", "--offsets"),)),
        Command("elect-leaders", _noop, (Option("--election-type", choices=("preferred", "unclean")),
                                         Option("--path-to-json-file", completer="path"),
                                         Option("--broker", type=int, completer="broker")),
                help="Elect leaders."),
        Command("help", _noop, (Option("command"),), help="Show help."),
        Command("use-cluster", _noop, (Option("name", completer="cluster"),), help="Switch."),
        Command("set-config", _noop, (Option("--pair", completer="config_value"),), help="Test kind."),
    ]:
        r.add(cmd)
    return r


def _topic(name: str, partitions: int = 1) -> TopicInfo:
    return TopicInfo(name, None, tuple(PartitionInfo(name, p, 1, (1,), (1,)) for p in range(partitions)))


def make_snapshot(topics=("orders", "orders-dlq", "payments", "__consumer_offsets")) -> ClusterSnapshot:
    return ClusterSnapshot(
        cluster_id="c1", controller=ControllerInfo(100, 7),
        brokers={i: BrokerInfo(i, "127.0.0.1", 9090 + i) for i in (1, 2, 3, 12)},
        topics={t: _topic(t, 3) for t in topics},
        groups=("billing", "billing-audit", "search"),
    )


REGISTRY = make_registry()


def complete(text: str, snapshot: ClusterSnapshot | None = None) -> list[str]:
    completer = KafkaCompleter(REGISTRY, snapshot or make_snapshot())
    return [c.text for c in completer.get_completions(Document(text), None)]


# -- tokenizer ---------------------------------------------------------------------------------

def test_split_words_follows_shell_quoting():
    words = split_words("""create-topic --config 'a b' x\\ y "c\\"d" """)
    assert [w.value for w in words] == ["create-topic", "--config", "a b", "x y", 'c"d']
    assert all(w.open_quote == "" for w in words)


def test_split_words_tolerates_an_unfinished_quote():
    words = split_words('describe-topic --topic "ord')
    assert words[-1].value == "ord" and words[-1].open_quote == '"'


# -- stage 1: suggestions ----------------------------------------------------------------------

def test_first_word_suggests_commands():
    assert suggest("", REGISTRY).suggestions == (s.CommandName(),)
    ctx = suggest("desc", REGISTRY)
    assert ctx.suggestions == (s.CommandName(),) and ctx.prefix == "desc" and ctx.replace == 4


def test_option_value_suggests_its_completer_kind():
    assert suggest("describe-topic --topic ", REGISTRY).suggestions == (s.Topic(),)
    assert suggest("describe-group --group b", REGISTRY).suggestions == (s.Group(),)
    assert suggest("elect-leaders --broker ", REGISTRY).suggestions == (s.Broker(),)
    assert suggest("elect-leaders --path-to-json-file ", REGISTRY).suggestions == (s.Path(),)
    assert suggest("elect-leaders --election-type ", REGISTRY).suggestions == (
        s.Choice(("preferred", "unclean")),)


def test_options_already_given_are_excluded_but_repeatable_ones_stay():
    ctx = suggest("create-topic --topic a --partitions 3 --", REGISTRY)
    (names,) = ctx.suggestions
    assert names == s.OptionName("create-topic", frozenset({"--partitions"}))


def test_flags_take_no_value():
    assert suggest("create-topic --if-not-exists ", REGISTRY).suggestions == (
        s.OptionName("create-topic", frozenset({"--if-not-exists"})),)


def test_a_comment_gets_no_suggestions():
    assert suggest("describe-topic # --topic ", REGISTRY).suggestions == ()


def test_unknown_command_gets_no_suggestions():
    assert suggest("frobnicate --", REGISTRY).suggestions == ()


def test_config_entity_follows_entity_type():
    ctx = suggest("alter-configs --entity-type brokers --delete-config ", REGISTRY)
    assert ctx.suggestions == (s.ConfigKey("brokers", overrides=True),)
    ctx = suggest("alter-configs --delete-config ", REGISTRY)
    assert ctx.suggestions == (s.ConfigKey("topics", overrides=True),)
    ctx = suggest("alter-configs --topic orders --delete-config ", REGISTRY)
    assert ctx.suggestions == (s.ConfigKey("topics", overrides=True, name="orders"),)


def test_config_assignment_completes_key_then_value():
    ctx = suggest("create-topic --config clean", REGISTRY)
    assert ctx.suggestions == (s.ConfigKey("topics", suffix="="),) and ctx.replace == 5
    ctx = suggest("create-topic --config cleanup.policy=co", REGISTRY)
    assert ctx.suggestions == (s.ConfigValue("topics", "cleanup.policy"),)
    assert ctx.prefix == "co" and ctx.replace == 2


# -- stage 2: candidates -----------------------------------------------------------------------

def starts(got: list[str], expected: list[str]) -> bool:
    """Matches by prefix come first (fuzzy matches may follow)."""
    return got[:len(expected)] == expected


def test_command_names():
    assert starts(complete("de"), ["delete-topic", "describe-group", "describe-topic"])


def test_option_names_not_yet_given():
    got = complete("create-topic --topic a --partitions 3 --")
    assert "--partitions" not in got
    assert {"--topic", "--replication-factor", "--config", "--if-not-exists"} <= set(got)


def test_option_names_match_without_dashes():
    assert starts(complete("create-topic part"), ["--partitions"])


def test_exclusive_options_drop_each_other():
    assert starts(complete("describe-group --members --"), ["--group"])


def test_topic_names_by_prefix():
    assert starts(complete("describe-topic --topic ord"), ["orders", "orders-dlq"])
    assert starts(complete("describe-topic --topic=pay"), ["payments"])
    assert complete("describe-topic --topic nosuch") == []


def test_positional_topic_and_options_when_nothing_typed():
    got = complete("topic ")
    assert got == ["__consumer_offsets", "orders", "orders-dlq", "payments"]
    assert starts(complete("topic o"), ["orders", "orders-dlq"])


def test_unfinished_quote_keeps_the_quote():
    completer = KafkaCompleter(REGISTRY, make_snapshot())
    (c,) = completer.get_completions(Document('describe-topic --topic "pay'), None)
    assert c.text == '"payments"' and c.start_position == -4


def test_broker_ids_and_group_ids():
    assert starts(complete("elect-leaders --broker 1"), ["1", "12"])
    assert starts(complete("describe-group --group bill"), ["billing", "billing-audit"])


def test_entity_name_follows_entity_type():
    assert starts(complete("alter-configs --entity-type groups --entity-name s"), ["search"])
    assert starts(complete("alter-configs --entity-type brokers --entity-name "), ["1", "12", "2", "3"])
    assert starts(complete("alter-configs --entity-type topics --entity-name pay"), ["payments"])


def test_config_keys_for_topics_and_brokers():
    assert starts(complete("create-topic --config cleanup"), ["cleanup.policy="])
    assert starts(complete("alter-configs --add-config retention."), ["retention.bytes=", "retention.ms="])
    brokers = complete("alter-configs --entity-type brokers --add-config log.retention.")
    assert starts(brokers, ["log.retention.bytes=", "log.retention.check.interval.ms=", "log.retention.hours=",
                            "log.retention.minutes=", "log.retention.ms="])
    assert "log.retention.hours" not in complete("alter-configs --delete-config log.")


def test_config_values_closed_sets():
    assert starts(complete("create-topic --config cleanup.policy="), ["compact", "delete"])
    assert starts(complete("alter-configs --add-config compression.type=z"), ["zstd"])
    assert starts(complete("alter-configs --add-config preallocate="), ["true", "false"])
    assert complete("alter-configs --add-config retention.ms=") == []


def test_config_value_of_the_last_pair():
    assert starts(complete("alter-configs --add-config retention.ms=1,cleanup.policy=c"), ["compact"])
    assert starts(complete("alter-configs --add-config retention.ms=1,min.in"), ["min.insync.replicas="])
    assert starts(complete("alter-configs --add-config cleanup.policy=[compact,d"), ["delete"])
    assert starts(complete("alter-configs --add-config a=[x,y],preall"), ["preallocate="])
    assert starts(complete("set-config --pair cleanup.policy="), ["compact", "delete"])


def test_config_entity_follows_the_options_naming_it():
    assert starts(complete("alter-configs --broker 1 --add-config log.ret"), [
        "log.retention.bytes=", "log.retention.check.interval.ms=", "log.retention.hours=", "log.retention.minutes=",
        "log.retention.ms="])
    assert starts(complete("alter-configs --entity-default --delete-config log.roll."), [
        "log.roll.hours", "log.roll.jitter.hours", "log.roll.jitter.ms", "log.roll.ms"])
    assert complete("alter-configs --topic orders --add-config log.ret") == []


def test_key_lists_complete_the_last_key():
    assert starts(complete("alter-configs --delete-config retention.ms,cleanup"), ["cleanup.policy"])


def test_choices():
    assert starts(complete("elect-leaders --election-type u"), ["unclean"])
    assert starts(complete("alter-configs --entity-type b"), ["brokers"])


def test_paths(tmp_path, monkeypatch):
    (tmp_path / "plan.json").write_text("{}")
    (tmp_path / "plans").mkdir()
    (tmp_path / "my plan.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert complete("elect-leaders --path-to-json-file pl") == ["plan.json", "plans" + os.sep]
    assert complete("elect-leaders --path-to-json-file my") == ["'my plan.json'"]
    assert complete(f"elect-leaders --path-to-json-file {tmp_path}/plans") == [f"{tmp_path}/plans/"]


def test_cluster_names():
    completer = KafkaCompleter(REGISTRY, make_snapshot(), clusters=["prod", "staging", "prod-eu"])
    got = [c.text for c in completer.get_completions(Document("use-cluster pr"), None)]
    assert got == ["prod", "prod-eu"]


def test_help_completes_command_names():
    assert complete("help delete") == ["delete-topic"]


def test_many_topics_are_capped_and_found_by_bisection():
    names = [f"t{i:06d}" for i in range(100_000)]
    got = complete("describe-topic --topic t0999", make_snapshot(names))
    assert got[:100] == [f"t0999{i:02d}" for i in range(100)]   # prefix matches first
    assert len(complete("describe-topic --topic t", make_snapshot(names))) == MAX_CANDIDATES


# -- lexer -------------------------------------------------------------------------------------

def _tokens(text: str) -> list[tuple[object, str]]:
    # Built as prompt_toolkit's PygmentsLexer builds it.
    lexer = lexer_for(REGISTRY, lambda: {"orders"})(stripnl=False, stripall=False, ensurenl=False)
    return [(tok, val) for tok, val in lexer.get_tokens(text) if tok is not Text.Whitespace and val.strip()]


def test_lexer_colours_commands_options_values_and_known_topics():
    assert _tokens('create-topic --topic orders --topic "new one" --partitions 3 # note') == [
        (Keyword, "create-topic"), (Name.Attribute, "--topic"), (Name.Class, "orders"),
        (Name.Attribute, "--topic"), (String, '"new one"'), (Name.Attribute, "--partitions"),
        (Number, "3"), (Comment, "# note"),
    ]


def test_lexer_marks_unknown_commands_and_splits_option_assignments():
    assert _tokens("nosuch --topic=orders")[0] == (Error, "nosuch")
    assert _tokens("describe-topic --topic=orders")[1:] == [
        (Name.Attribute, "--topic"), (Operator, "="),
        (Name.Class, "orders")]


def test_lexer_keeps_every_character():
    text = "create-topic  --config 'a=b  c' x\\ y --topic \"unfinished"
    lexer = lexer_for(REGISTRY, lambda: ())()
    assert "".join(v for _, _, v in lexer.get_tokens_unprocessed(text)) == text


def test_lexer_marks_an_unknown_option_unlike_a_valid_one():
    assert _tokens("describe-topic --topik x --topic=orders --help") == [
        (Keyword, "describe-topic"), (Error, "--topik"), (String, "x"),
        (Name.Attribute, "--topic"), (Operator, "="), (Name.Class, "orders"), (Name.Attribute, "--help")]


def test_completion_goes_on_after_a_continued_line():
    assert suggest("describe-topic \\\n--topic or", REGISTRY).suggestions == (s.Topic(),)
    assert starts(complete("describe-topic \\\n--topic ord"), ["orders", "orders-dlq"])


def test_acl_options_offer_principals_and_resources_seen():
    from kafka_shell.connection.session import Seen
    registry = Registry()
    registry.add(Command("describe-acls", _noop, (
        Option("--topic", repeatable=True, completer="acl_resource"),
        Option("--group", repeatable=True, completer="acl_resource"),
        Option("--principal", completer="principal")), help="List ACLs."))
    assert suggest("describe-acls --principal Us", registry).suggestions == (s.Principal(),)
    assert suggest("describe-acls --topic x", registry).suggestions == (s.AclResource("topic"),)
    seen = Seen()
    seen.remember([["TOPIC", "pay-", "PREFIXED", "User:app", "*", "READ", "ALLOW"],
                   ["GROUP", "billing-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"]])
    completer = KafkaCompleter(registry, make_snapshot(), acls=seen)

    def texts(line: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(line), None)]

    assert texts("describe-acls --principal User:a") == ["User:alice", "User:app"]
    assert texts("describe-acls --topic pay") == ["pay-", "payments"]     # seen in ACLs, and the cluster's
    assert texts("describe-acls --group billing") == ["billing", "billing-", "billing-audit"]
