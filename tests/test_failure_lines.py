"""The lines made from admin calls' AdminErrors when only some targets refused (a partial refusal
the sandbox has no way to make for these requests): each refusal is its own line naming its
target, what succeeded is said too, and a refusal shared by every target is said once."""

from __future__ import annotations

from kafka_shell.admin import configs
from kafka_shell.admin.acls import Binding, Operation, PatternType, Permission, ResourceType
from kafka_shell.base.answers import CONTROLLER, AdminError, Answers, Target
from kafka_shell.declarations import failure_lines
from kafka_shell.protocol.codes import Error


def refused(code: int, message: str = "") -> AdminError:
    return AdminError(code, Target(CONTROLLER), message)


def test_configs_of_some_topics_refused():
    answers: Answers[str, None] = Answers({"a": None}, {"b": refused(Error.invalid_config, "Invalid value x")})
    done, failed = failure_lines.config_change_lines(answers, configs.TOPICS, dry_run=False)
    assert done == ['Completed updating config for topic "a".']
    assert len(failed) == 1 and 'topic "b"' in failed[0] and "Invalid value x" in failed[0]
    done, _ = failure_lines.config_change_lines(Answers({"a": None}), configs.TOPICS, dry_run=True)
    assert done == ['Validated updating config for topic "a" (dry run).']


def test_import_configs_names_each_entity_refused_or_unanswered():
    lines = failure_lines.import_refusal_lines({
        ("topics", "t"): refused(Error.invalid_config, "Invalid value x"),
        ("brokers", "2"): AdminError(None, Target(CONTROLLER), "The controller did not answer within 3 s"),
    })
    assert len(lines) == 2 and 'topic "t"' in lines[0]
    assert lines[1] == "Broker 2: The controller did not answer within 3 s"


def test_acls_some_refused_each_named_and_one_shared_refusal_said_once():
    def acl(name: str) -> Binding:
        return Binding(ResourceType.TOPIC, name, PatternType.LITERAL, "User:a", "*", Operation.READ, Permission.ALLOW)
    some = Answers({acl("ok"): None}, {acl("bad"): refused(Error.invalid_request, "bad binding")})
    [line] = failure_lines.acl_lines(some)
    assert line.startswith("Not added: TOPIC bad LITERAL User:a * READ ALLOW: ") and "bad binding" in line
    every = Answers[Binding, None]({}, {acl("a"): refused(Error.security_disabled),
                                        acl("b"): refused(Error.security_disabled)})
    [line] = failure_lines.acl_lines(every)
    assert line.startswith("No ACL was added: ")
    denied = Answers[Binding, None]({}, {acl("a"): refused(Error.cluster_authorization_failed),
                                         acl("b"): refused(Error.cluster_authorization_failed)})
    assert len(failure_lines.acl_lines(denied)) == 1


def test_features_each_refusal_names_its_feature():
    lines = failure_lines.feature_lines({"group.version": refused(Error.invalid_update_version, "too new"),
                                         "share.version": refused(Error.invalid_update_version, "too old")})
    assert [line.split(":")[0] for line in lines] == ["group.version", "share.version"]


def test_health_names_what_each_part_was_read_without():
    """A part of health read without some targets (which a sandbox fault makes for balance and
    lag, not for the three kinds of target a hanging-transaction search asks at once)."""
    from kafka_shell.admin import health
    from kafka_shell.base.answers import BROKER, LEADER, TRANSACTION_COORDINATOR
    hung = AdminError(None, Target(LEADER, 3, (("t", 0),)), "did not answer DescribeProducers within 3 s")
    without = {("t", 0): hung, 2: AdminError(Error.coordinator_load_in_progress, Target(BROKER, 2)),
               "tx": AdminError(None, Target(TRANSACTION_COORDINATOR, 1, ("tx",)), "did not answer")}
    assert failure_lines.health_unread_line("transactions", health.Unread(without=without)) == (
        "not read: hanging transactions searched without 1 partition(s), 1 broker(s) and 1 transactional id(s): "
        "Broker 3 (leader of t-0) did not answer DescribeProducers within 3 s")
    offline = AdminError(Error.kafka_storage_error, Target(BROKER, 2))
    line = failure_lines.health_unread_line("balance", health.Unread(without={2: offline}))
    assert line.startswith("not read: the balance goals are judged without some brokers' log dirs (Broker 2 did not "
                           "describe its log dirs (")
    assert failure_lines.health_unread_line("lag", health.Unread(without={3: hung})) == f"not read: {hung}"
    assert failure_lines.health_unread_line("lag", health.Unread(health.TIMED_OUT)) == \
        "not read: the --timeout ran out first"
