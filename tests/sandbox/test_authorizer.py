"""The sandbox's authorizer and security APIs on the wire: StandardAuthorizer's decisions (DENY
wins, implied operations, wildcards, PREFIXED, hosts, super users, allow.everyone.if.no.acl.found),
ACL filters as Kafka matches them, and the ACL/SCRAM/quota APIs' validation and errors."""

from __future__ import annotations

import pytest

from kafka_shell.protocol.codes import AclOperation as Op
from kafka_shell.protocol.codes import AclPermission as Perm
from kafka_shell.protocol.codes import AclResourceType as Res
from kafka_shell.protocol.codes import ApiKey, Error, PatternType, QuotaMatch, ScramMechanism
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.authorizer import AclBinding
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import request

ME = "User:ANONYMOUS"


def acl(rtype: Res, name: str, op: Op, perm: Perm = Perm.ALLOW, pattern: PatternType = PatternType.LITERAL,
        principal: str = ME, host: str = "*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


@pytest.fixture
def secured():
    with Sandbox(brokers=1, authorizer=True) as s:
        for name in ("orders", "orders-eu", "payments"):
            s.call(sandbox_admin.create_topic, s.cluster, name, 1, 1)
        yield s


def visible(s: Sandbox) -> dict[str, int]:
    """topic -> the error a Metadata request naming every topic gets."""
    answer = request(s, 1, ApiKey.METADATA, {"topics": [{"name": n} for n in ("orders", "orders-eu", "payments")],
                                             "allow_auto_topic_creation": False})
    return {t["name"]: t["error_code"] for t in answer["topics"]}


def listed(s: Sandbox) -> list[str]:
    answer = request(s, 1, ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False})
    return sorted(t["name"] for t in answer["topics"])


DENIED = Error.topic_authorization_failed


def test_no_acl_means_no_access_and_listing_hides_topics(secured):
    assert visible(secured) == {"orders": DENIED, "orders-eu": DENIED, "payments": DENIED}
    assert listed(secured) == []
    # named topics that do not exist are refused the same way (existence is not revealed)
    answer = request(secured, 1, ApiKey.METADATA, {"topics": [{"name": "nope"}], "allow_auto_topic_creation": True})
    assert answer["topics"][0]["error_code"] == DENIED
    assert "nope" not in secured.cluster.topics


def test_implied_prefixed_wildcard_and_deny_wins(secured):
    secured.add_acls(acl(Res.TOPIC, "orders", Op.READ, pattern=PatternType.PREFIXED))  # READ implies DESCRIBE
    assert visible(secured) == {"orders": 0, "orders-eu": 0, "payments": DENIED}
    secured.add_acls(acl(Res.TOPIC, "orders-eu", Op.DESCRIBE, Perm.DENY))
    assert visible(secured)["orders-eu"] == DENIED
    secured.add_acls(acl(Res.TOPIC, "orders", Op.READ, Perm.DENY))  # a DENY on READ leaves DESCRIBE
    assert visible(secured)["orders"] == 0
    secured.add_acls(acl(Res.TOPIC, "*", Op.ALL, principal="User:*"))
    assert listed(secured) == ["orders", "payments"]   # DENY still wins for orders-eu


def test_hosts_super_users_and_allow_everyone():
    with Sandbox(brokers=1, authorizer=True, allow_everyone_if_no_acl_found=True) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "open", 1, 1)
        s.call(sandbox_admin.create_topic, s.cluster, "closed", 1, 1)
        s.add_acls(acl(Res.TOPIC, "closed", Op.ALL, principal="User:alice"))
        assert listed(s) == ["open"]  # "closed" has ACLs, none for this principal
        s.add_acls(acl(Res.TOPIC, "open", Op.ALL, host="10.9.9.9"))  # for another host: now it has ACLs
        assert listed(s) == []
        s.add_acls(acl(Res.TOPIC, "open", Op.DESCRIBE, host="127.0.0.1"))
        assert listed(s) == ["open"]
    with Sandbox(brokers=1, authorizer=True, super_users=[ME]) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "any", 1, 1)
        s.add_acls(acl(Res.TOPIC, "any", Op.ALL, Perm.DENY))
        assert listed(s) == ["any"]  # super users pass every check


def test_acl_apis_filters_and_validation(secured):
    secured.add_acls(acl(Res.CLUSTER, "kafka-cluster", Op.ALTER), acl(Res.CLUSTER, "kafka-cluster", Op.DESCRIBE))
    creations = [
        {"resource_type": Res.TOPIC, "resource_name": "orders", "resource_pattern_type": PatternType.PREFIXED,
         "principal": "User:bob", "host": "*", "operation": Op.WRITE, "permission_type": Perm.ALLOW},
        {"resource_type": Res.TOPIC, "resource_name": "orders-eu", "resource_pattern_type": PatternType.LITERAL,
         "principal": "User:bob", "host": "*", "operation": Op.READ, "permission_type": Perm.DENY},
        {"resource_type": Res.CLUSTER, "resource_name": "other", "resource_pattern_type": PatternType.LITERAL,
         "principal": "User:bob", "host": "*", "operation": Op.ALTER, "permission_type": Perm.ALLOW},
        {"resource_type": Res.TOPIC, "resource_name": "x", "resource_pattern_type": PatternType.MATCH,
         "principal": "User:bob", "host": "*", "operation": Op.READ, "permission_type": Perm.ALLOW},
    ]
    results = request(secured, 1, ApiKey.CREATE_ACLS, {"creations": creations})["results"]
    assert [(r["error_code"], r["error_message"]) for r in results] == [
        (0, None), (0, None),
        (Error.invalid_request, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (Error.invalid_request, "Invalid patternType MATCH")]

    def names(pattern: PatternType, name: str | None) -> list[tuple[str, int]]:
        answer = request(secured, 1, ApiKey.DESCRIBE_ACLS, {
            "resource_type_filter": Res.TOPIC, "resource_name_filter": name, "pattern_type_filter": pattern,
            "principal_filter": "User:bob", "host_filter": None, "operation": Op.ANY, "permission_type": Perm.ANY})
        assert answer["error_code"] == 0
        return sorted((r["resource_name"], r["pattern_type"]) for r in answer["resources"])

    assert names(PatternType.MATCH, "orders-eu") == [("orders", PatternType.PREFIXED),
                                                     ("orders-eu", PatternType.LITERAL)]
    assert names(PatternType.ANY, "orders") == [("orders", PatternType.PREFIXED)]
    assert names(PatternType.LITERAL, None) == [("orders-eu", PatternType.LITERAL)]

    deleted = request(secured, 1, ApiKey.DELETE_ACLS, {"filters": [{
        "resource_type_filter": Res.ANY, "resource_name_filter": None, "pattern_type_filter": PatternType.PREFIXED,
        "principal_filter": None, "host_filter": None, "operation": Op.ANY, "permission_type": Perm.ANY}]})
    matched = deleted["filter_results"][0]["matching_acls"]
    assert [(m["resource_name"], m["principal"], m["operation"]) for m in matched] == [("orders", "User:bob", Op.WRITE)]
    assert names(PatternType.ANY, None) == [("orders-eu", PatternType.LITERAL)]


def test_acl_apis_need_an_authorizer_and_cluster_permissions(secured):
    describe = {"resource_type_filter": Res.ANY, "resource_name_filter": None, "pattern_type_filter": PatternType.ANY,
                "principal_filter": None, "host_filter": None, "operation": Op.ANY, "permission_type": Perm.ANY}
    assert request(secured, 1, ApiKey.DESCRIBE_ACLS, describe)["error_code"] == Error.cluster_authorization_failed
    with Sandbox(brokers=1) as plain:
        answer = request(plain, 1, ApiKey.DESCRIBE_ACLS, describe)
        assert (answer["error_code"], answer["error_message"]) == (
            Error.security_disabled, "No Authorizer is configured on the broker")


def test_scram_apis_validate_as_kraft_does(secured):
    secured.add_acls(acl(Res.CLUSTER, "kafka-cluster", Op.ALL))
    sha256, sha512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
    up = {"name": "alice", "mechanism": sha512, "iterations": 8192, "salt": b"s" * 16, "salted_password": b"p" * 64}
    answer = request(secured, 1, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, {
        "deletions": [{"name": "carol", "mechanism": sha256}],
        "upsertions": [up, {**up, "mechanism": sha256},               # alice twice: a duplicate
                       {**up, "name": "bob", "iterations": 100},
                       {**up, "name": "dave", "mechanism": 9},        # no such mechanism
                       {**up, "name": "erin"}]})
    assert {r["user"]: (r["error_code"], r["error_message"]) for r in answer["results"]} == {
        "alice": (Error.duplicate_resource, "A user credential cannot be altered twice in the same request"),
        "bob": (Error.unacceptable_credential, "Too few iterations"),
        "carol": (Error.resource_not_found, "Attempt to delete a user credential that does not exist"),
        "dave": (Error.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "erin": (0, None)}
    answer = request(secured, 1, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": [{"name": "erin"}, {"name": "zed"}]})
    assert [(r["user"], r["error_code"], r["credential_infos"]) for r in answer["results"]] == [
        ("erin", 0, [{"mechanism": sha512, "iterations": 8192}]), ("zed", Error.resource_not_found, [])]
    assert "erin" in secured.call(lambda: dict(secured.cluster.scram_credentials))


def test_quota_apis_validate_as_kraft_does(secured):
    secured.add_acls(acl(Res.CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS))  # implies DESCRIBE_CONFIGS

    def alter(entity: list[tuple[str, str | None]], *ops: tuple[str, float | None], validate_only: bool = False):
        body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                             "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops]}],
                "validate_only": validate_only}
        r = request(secured, 1, ApiKey.ALTER_CLIENT_QUOTAS, body)["entries"][0]
        return r["error_code"], r["error_message"]

    assert alter([("user", "alice")], ("producer_byte_rate", 1024.0)) == (0, None)
    assert alter([("client-id", None)], ("request_percentage", 12.5)) == (0, None)
    assert alter([("user", "bob")], ("producer_byte_rate", 1.0), validate_only=True) == (0, None)
    assert alter([("user", "alice")], ("producer_byte_rate", 1.5)) == (
        Error.invalid_request, "producer_byte_rate cannot be a fractional value.")
    assert alter([("user", "alice")], ("nope", 1.0)) == (Error.invalid_request, "Invalid configuration key nope")
    assert alter([("ip", "1.2.3.4"), ("user", "x")], ("connection_creation_rate", 3.0))[0] == Error.invalid_request
    assert alter([("ip", "1.2.3.4")], ("connection_creation_rate", 0.0)) == (
        Error.invalid_request, "Quota connection_creation_rate must be greater than 0")

    def describe(*components: dict, strict: bool = False) -> list:
        answer = request(secured, 1, ApiKey.DESCRIBE_CLIENT_QUOTAS, {"components": list(components), "strict": strict})
        assert answer["error_code"] == 0, answer
        return sorted((tuple((e["entity_type"], e["entity_name"]) for e in x["entity"]),
                       tuple((v["key"], v["value"]) for v in x["values"])) for x in answer["entries"])

    assert describe() == [((("client-id", None),), (("request_percentage", 12.5),)),
                          ((("user", "alice"),), (("producer_byte_rate", 1024.0),))]
    assert describe({"entity_type": "user", "match_type": QuotaMatch.EXACT, "match": "alice"}) == [
        ((("user", "alice"),), (("producer_byte_rate", 1024.0),))]
    assert describe({"entity_type": "client-id", "match_type": QuotaMatch.DEFAULT, "match": None}, strict=True) == [
        ((("client-id", None),), (("request_percentage", 12.5),))]
    alter([("user", "alice")], ("producer_byte_rate", None))  # removing the last key removes the entity
    assert describe({"entity_type": "user", "match_type": QuotaMatch.SPECIFIED, "match": None}) == []


def test_authorized_operations_as_clients_ask_for_them(secured):
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient
    secured.add_acls(acl(Res.TOPIC, "orders", Op.READ), acl(Res.CLUSTER, "kafka-cluster", Op.DESCRIBE))
    admin = AdminClient({"bootstrap.servers": secured.bootstrap, "log_level": 0})
    topic = admin.describe_topics(TopicCollection(["orders"]), include_authorized_operations=True)["orders"].result(10)
    assert sorted(op.name for op in topic.authorized_operations) == ["DESCRIBE", "READ"]  # READ implies DESCRIBE
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert [op.name for op in cluster.authorized_operations] == ["DESCRIBE"]


def test_a_consumer_group_member_may_subscribe_only_to_topics_it_may_describe(secured):
    """KafkaApis.handleConsumerGroupHeartbeat (4.4): after READ on the group, DESCRIBE on every
    subscribed topic name, else TOPIC_AUTHORIZATION_FAILED before the coordinator sees it."""
    secured.add_acls(acl(Res.GROUP, "g", Op.READ), acl(Res.TOPIC, "orders", Op.DESCRIBE))
    found = request(secured, 1, ApiKey.FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": ["g"]}, 4)
    assert found["coordinators"][0]["error_code"] == 0   # creates __consumer_offsets

    def heartbeat(topics: list[str]) -> dict:
        return request(secured, 1, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": "g", "member_id": "m-1", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout": 30000, "subscribed_topic_names": topics, "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []}, 1)

    refused = heartbeat(["orders", "payments"])
    assert (refused["error_code"], refused["member_id"], refused["member_epoch"]) == (DENIED, None, 0)
    joined = heartbeat(["orders"])
    assert (joined["error_code"], joined["member_id"]) == (0, "m-1")
