"""The same raw idempotent-producer and transaction requests, sent to any cluster (the sandbox or
real Apache Kafka), with answers reduced to what must agree: error codes, offsets relative to a
fresh topic, states, epochs relative to the first one. tests/test_transactions_vs_kafka.py runs
them on both and compares.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox import log, producer_state

RETRIABLE = {14, 15, 16, 51}   # coordinator loading / not available / not coordinator, concurrent transactions
READ_COMMITTED, READ_UNCOMMITTED = 1, 0


class Cluster:
    """A one-partition topic on `bootstrap` (a fresh one unless `topic` is given) and channels to
    its leader and to transaction coordinators."""

    def __init__(self, bootstrap: str, topic: str | None = None, **configs: str):
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self.topic = topic or "txn-" + uuid.uuid4().hex[:8]
        if topic is None:
            self.admin.create_topics([NewTopic(self.topic, 1, 1, config=configs)])[self.topic].result(30)
        self.coordinators: dict[str, Channel] = {}
        self.leader = self._leader()

    def _leader(self) -> Channel:
        deadline = time.monotonic() + 30
        while True:
            md = self.admin.list_topics(self.topic, timeout=10)
            partition = md.topics[self.topic].partitions.get(0)
            if partition is not None and partition.leader >= 0:
                break
            assert time.monotonic() < deadline, f"{self.topic} has no leader"
            time.sleep(0.1)
        leader = md.brokers[partition.leader]
        return Channel(leader.host, leader.port)

    def reconnect(self) -> None:
        """Talk to the partition's leader of now (after a broker restart)."""
        self.leader.close()
        self.leader = self._leader()

    def close(self) -> None:
        self.leader.close()
        for c in self.coordinators.values():
            c.close()

    def coordinator(self, transactional_id: str) -> Channel:
        """The transaction coordinator of the id (FindCoordinator type 1, retried while Kafka
        creates __transaction_state)."""
        if transactional_id not in self.coordinators:
            found = retry(lambda: self.leader.request(ApiKey.FIND_COORDINATOR, {
                "key_type": 1, "coordinator_keys": [transactional_id]}, 4)["coordinators"][0])
            self.coordinators[transactional_id] = Channel(found["host"], found["port"])
        return self.coordinators[transactional_id]

    def produce(self, batch: bytes, version: int = 11, transactional_id: str | None = None) -> tuple:
        """(error, offset relative to the topic) of a one-batch produce, acks=all."""
        answer = self.leader.request(ApiKey.PRODUCE, {"transactional_id": transactional_id, "acks": -1,
                                                      "timeout": 10000, "topic_data": [
            {"name": self.topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}]}, version)
        p = answer["responses"][0]["partition_responses"][0]
        return p["error_code"], p["base_offset"]

    def list_offset(self, isolation: int) -> int:
        answer = self.leader.request(ApiKey.LIST_OFFSETS, {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": self.topic, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]}, 9)
        return answer["topics"][0]["partitions"][0]["offset"]

    def fetch(self, isolation: int) -> dict:
        """What a fetch from offset 0 answers: marks, aborted transactions and the records read
        as (offset, value or "commit"/"abort" for a marker)."""
        answer = self.leader.request(ApiKey.FETCH, {
            "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": isolation,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": self.topic, "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                             "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}, 12)
        p = answer["responses"][0]["partitions"][0]
        return {"error": p["error_code"], "high_watermark": p["high_watermark"], "codecs": codecs_read(p["records"]),
                "last_stable_offset": p["last_stable_offset"],
                "aborted": None if p["aborted_transactions"] is None else
                sorted(a["first_offset"] for a in p["aborted_transactions"]),
                "records": read_records(p["records"])}

    def init_producer_id(self, transactional_id: str | None, timeout_ms: int = 60000, version: int = 5) -> dict:
        channel = self.coordinator(transactional_id) if transactional_id else self.leader
        return retry(lambda: channel.request(ApiKey.INIT_PRODUCER_ID, {
            "transactional_id": transactional_id, "transaction_timeout": timeout_ms, "producer_id": -1,
            "producer_epoch": -1}, version))

    def add_partitions(self, transactional_id: str, pid: int, epoch: int) -> int:
        answer = self.coordinator(transactional_id).request(ApiKey.ADD_PARTITIONS_TO_TXN, {
            "v3_and_below_transactional_id": transactional_id, "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": self.topic, "partitions": [0]}]}, 3)
        return answer["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"]

    def verify_partitions(self, transactional_id: str, pid: int, epoch: int) -> tuple:
        """AddPartitionsToTxn v5, batched as brokers send it, verify_only: (top error, partition error)."""
        answer = self.coordinator(transactional_id).request(ApiKey.ADD_PARTITIONS_TO_TXN, {"transactions": [
            {"transactional_id": transactional_id, "producer_id": pid, "producer_epoch": epoch, "verify_only": True,
             "topics": [{"name": self.topic, "partitions": [0]}]}]}, 5)
        result = answer["results_by_transaction"][0]["topic_results"][0]["results_by_partition"][0]
        return answer["error_code"], result["partition_error_code"]

    def end_txn(self, transactional_id: str, pid: int, epoch: int, commit: bool, version: int) -> dict:
        return self.coordinator(transactional_id).request(ApiKey.END_TXN, {
            "transactional_id": transactional_id, "producer_id": pid, "producer_epoch": epoch,
            "committed": commit}, version)

    def settled(self, transactional_id: str) -> None:
        """Wait until the transaction is no longer in PrepareCommit / PrepareAbort: Kafka writes
        the markers after answering EndTxn (the sandbox before)."""
        deadline = time.monotonic() + 30
        while self.describe_transaction(transactional_id)["state"] in ("PrepareCommit", "PrepareAbort"):
            assert time.monotonic() < deadline, f"{transactional_id}: markers not written in 30 s"
            time.sleep(0.05)

    def end_and_settle(self, transactional_id: str, pid: int, epoch: int, commit: bool, version: int) -> dict:
        answer = self.end_txn(transactional_id, pid, epoch, commit, version)
        self.settled(transactional_id)
        return answer

    def describe_transaction(self, transactional_id: str) -> dict:
        state = self.coordinator(transactional_id).request(ApiKey.DESCRIBE_TRANSACTIONS, {
            "transactional_ids": [transactional_id]}, 0)["transaction_states"][0]
        return {"error": state["error_code"], "state": state["transaction_state"],
                "timeout": state["transaction_timeout"],
                "topics": [("the topic" if t["topic"] == self.topic else t["topic"], list(t["partitions"]))
                           for t in state["topics"]]}

    def listed_state(self, transactional_id: str) -> list[str]:
        answer = self.coordinator(transactional_id).request(ApiKey.LIST_TRANSACTIONS, {
            "state_filters": [], "producer_id_filters": [], "duration_filter": -1}, 1)
        return [t["transaction_state"] for t in answer["transaction_states"] if t["transactional_id"] == transactional_id]

    def producers(self) -> dict[int, tuple]:
        answer = self.leader.request(ApiKey.DESCRIBE_PRODUCERS, {"topics": [{"name": self.topic, "partition_indexes": [0]}]}, 0)
        p = answer["topics"][0]["partitions"][0]
        # The coordinator epoch is the leader epoch of the transaction's __transaction_state
        # partition, which follows the cluster's history (a session's earlier broker restarts): only
        # whether one is recorded is compared.
        return {s["producer_id"]: (s["producer_epoch"], s["last_sequence"], s["coordinator_epoch"] >= 0,
                                   s["current_txn_start_offset"]) for s in p["active_producers"]}


def retry(call, deadline_s: float = 60.0) -> dict:
    deadline = time.monotonic() + deadline_s
    while True:
        answer = call()
        if answer.get("error_code") not in RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def codecs_read(data: bytes) -> list[int]:
    """The codec of each batch of a fetch answer."""
    return [h.attributes & log.CODEC_MASK for h in log.headers_in(data)]


def read_records(data: bytes) -> list:
    out: list = []
    pos = 0
    while pos + log.HEADER_SIZE <= len(data):
        size = log.LENGTH_PREFIX + int.from_bytes(data[pos + 8:pos + 12], "big")
        batch = data[pos:pos + size]
        h = log.header(batch)
        if h.control:
            marker = producer_state.read_marker(batch)
            out.append((h.base_offset, "commit" if marker and marker[0] == producer_state.COMMIT else "abort"))
        else:
            out += [(h.base_offset + r.offset_delta, r.value) for r in log.records(batch)]
        pos += size
    return out


def batch(seq: int, epoch: int, pid: int, n: int = 1, **kw) -> bytes:
    return bytes(log.build_batch([(None, b"v%d" % (seq + i)) for i in range(n)], producer_id=pid,
                                 producer_epoch=epoch, base_sequence=seq, **kw))


def mislabelled(codec: int) -> bytes:
    """An uncompressed batch whose attributes name `codec`."""
    data = log.build_batch([(None, b"x" * 100)])
    data[22] = (data[22] & ~log.CODEC_MASK) | codec
    log.set_crc(data)
    return bytes(data)


def idempotence(c: Cluster) -> dict:
    pid = c.init_producer_id(None, version=4)["producer_id"]
    other = pid + 500_000   # an id no broker handed out
    return {
        "first": c.produce(batch(0, 0, pid)),
        "duplicate": c.produce(batch(0, 0, pid)),
        "next": c.produce(batch(1, 0, pid, 2)),
        "older duplicate": c.produce(batch(0, 0, pid)),
        "gap": c.produce(batch(9, 0, pid)),
        "epoch bump": c.produce(batch(0, 1, pid)),
        "fenced epoch": c.produce(batch(3, 0, pid)),
        "new epoch past 0": c.produce(batch(5, 2, pid)),
        "unknown producer": c.produce(batch(7, 0, other)),
        "transactional without id": c.produce(batch(0, 0, other + 1, transactional=True)),
        "client control batch": c.produce(batch(0, 0, other + 2, control=True)),
        "two batches": c.produce(batch(0, 0, -1) + batch(0, 0, -1)),
        "zstd before v7": c.produce(bytes(log.build_batch([(None, b"z")], codec=4)), version=6),
        "records that do not decompress": c.produce(mislabelled(3)),
        "an unknown codec": c.produce(mislabelled(6)),
        "a CRC that does not match": c.produce(batch(0, -1, -1)[:-1] + b"?"),
        "no producer id": c.produce(batch(3, -1, -1)),
        "producer id without sequence": c.produce(batch(-1, 0, other + 3)),
        "producers": sorted(v[:2] for k, v in c.producers().items() if k in (pid, other)),
    }


def transactions_v1(c: Cluster) -> dict:
    """Produce v11 (partition verification, KIP-890 part 1) and EndTxn v4: transactions v1."""
    tid = "v1-" + c.topic
    init = c.init_producer_id(tid)
    pid, epoch = init["producer_id"], init["producer_epoch"]
    out: dict = {"init": (init["error_code"], epoch)}
    out["not added (v11)"] = c.produce(batch(0, epoch, pid, transactional=True), transactional_id=tid)
    out["not added (v10)"] = c.produce(batch(0, epoch, pid, transactional=True), version=10, transactional_id=tid)
    out["unknown transactional id"] = c.produce(batch(0, 0, pid + 7, transactional=True), transactional_id="none-" + tid)
    out["wrong producer id"] = c.produce(batch(0, epoch, pid + 7, transactional=True), transactional_id=tid)
    out["verify before add (v5)"] = c.verify_partitions(tid, pid, epoch)
    out["add partitions"] = c.add_partitions(tid, pid, epoch)
    out["verify after add (v5)"] = c.verify_partitions(tid, pid, epoch)
    out["verify with a wrong epoch (v5)"] = c.verify_partitions(tid, pid, epoch + 3)
    out["control batch in transaction"] = c.produce(batch(0, epoch, pid, transactional=True, control=True),
                                                    transactional_id=tid)
    out["written"] = [c.produce(batch(0, epoch, pid, 3, transactional=True), transactional_id=tid),
                      c.produce(batch(3, epoch, pid, 2, transactional=True), transactional_id=tid)]
    out["not transactional inside"] = c.produce(batch(5, epoch, pid), transactional_id=tid)
    out["open: offsets"] = (c.list_offset(READ_COMMITTED), c.list_offset(READ_UNCOMMITTED))
    out["open: read_committed"] = c.fetch(READ_COMMITTED)
    out["open: read_uncommitted"] = c.fetch(READ_UNCOMMITTED)
    out["open: described"] = c.describe_transaction(tid)
    out["abort"] = c.end_and_settle(tid, pid, epoch, False, 4)["error_code"]
    out["aborted: read_committed"] = c.fetch(READ_COMMITTED)
    out["aborted: offsets"] = (c.list_offset(READ_COMMITTED), c.list_offset(READ_UNCOMMITTED))
    out["aborted: described"] = c.describe_transaction(tid)
    out["aborted: listed"] = c.listed_state(tid)
    out["aborted: producer"] = c.producers()[pid]
    out["commit after abort"] = c.end_txn(tid, pid, epoch, True, 4)["error_code"]
    out["abort again"] = c.end_txn(tid, pid, epoch, False, 4)["error_code"]
    again = c.init_producer_id(tid)
    out["init again"] = (again["error_code"], again["producer_id"] == pid, again["producer_epoch"] - epoch)
    out["old epoch produce"] = c.produce(batch(5, epoch, pid, transactional=True), transactional_id=tid)
    out["old epoch add partitions"] = c.add_partitions(tid, pid, epoch)
    return out


def transactions_v2(c: Cluster) -> dict:
    """Produce v12 (the partition joins with its first batch) and EndTxn v5 (epoch bumped)."""
    tid = "v2-" + c.topic
    c.produce(batch(0, -1, -1))   # offset 0: not a transaction's
    init = c.init_producer_id(tid)
    pid, epoch = init["producer_id"], init["producer_epoch"]
    out: dict = {"init": (init["error_code"], epoch)}
    out["first batch"] = c.produce(batch(0, epoch, pid, 2, transactional=True), version=12, transactional_id=tid)
    out["open: described"] = c.describe_transaction(tid)
    out["open: offsets"] = (c.list_offset(READ_COMMITTED), c.list_offset(READ_UNCOMMITTED))
    out["open: producer"] = c.producers()[pid]
    commit = c.end_and_settle(tid, pid, epoch, True, 5)
    out["commit"] = (commit["error_code"], commit["producer_id"] == pid, commit["producer_epoch"] - epoch)
    out["committed: producer"] = c.producers()[pid][:2]
    out["old epoch"] = c.produce(batch(2, epoch, pid, transactional=True), version=12, transactional_id=tid)
    bumped = epoch + 1
    out["next transaction"] = c.produce(batch(0, bumped, pid, transactional=True), version=12, transactional_id=tid)
    abort = c.end_and_settle(tid, pid, bumped, False, 5)
    out["abort"] = (abort["error_code"], abort["producer_epoch"] - epoch)
    retried = c.end_txn(tid, pid, bumped, False, 5)
    out["abort retried"] = (retried["error_code"], retried["producer_epoch"] - epoch)
    out["commit instead"] = c.end_txn(tid, pid, bumped, True, 5)["error_code"]
    out["read_committed"] = c.fetch(READ_COMMITTED)
    out["described"] = c.describe_transaction(tid)
    # Another producer with the id fences this one: its open transaction is aborted first.
    c.produce(batch(0, bumped + 1, pid, transactional=True), version=12, transactional_id=tid)
    fence = c.coordinator(tid).request(ApiKey.INIT_PRODUCER_ID, {"transactional_id": tid, "transaction_timeout": 60000,
                                                                 "producer_id": -1, "producer_epoch": -1}, 5)
    out["fence: first answer"] = fence["error_code"]
    c.settled(tid)
    fenced = c.init_producer_id(tid)
    out["fence: new epoch"] = (fenced["error_code"], fenced["producer_epoch"] - epoch)
    out["fence: read_committed"] = c.fetch(READ_COMMITTED)
    out["fence: old producer"] = c.produce(batch(1, bumped + 1, pid, transactional=True), version=12, transactional_id=tid)
    return out


def offsets_in_transactions(c: Cluster) -> dict:
    """TxnOffsetCommit: v3 after AddOffsetsToTxn (transactions v1), v5 adding the group's
    partition itself (v2); OffsetFetch with and without require_stable meanwhile."""
    tid, group = "offsets-" + c.topic, "group-" + c.topic
    found = retry(lambda: c.leader.request(ApiKey.FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [group]},
                                           4)["coordinators"][0])
    group_coordinator = Channel(found["host"], found["port"])
    init = c.init_producer_id(tid)
    pid, epoch = init["producer_id"], init["producer_epoch"]

    def commit(offset: int, version: int, producer_epoch: int) -> int:
        answer = group_coordinator.request(ApiKey.TXN_OFFSET_COMMIT, {
            "transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": producer_epoch,
            "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [{"name": c.topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]}, version)
        return answer["topics"][0]["partitions"][0]["error_code"]

    def fetched(require_stable: bool) -> tuple:
        answer = group_coordinator.request(ApiKey.OFFSET_FETCH, {"require_stable": require_stable, "groups": [
            {"group_id": group, "topics": [{"name": c.topic, "partition_indexes": [0]}]}]}, 8)
        p = answer["groups"][0]["topics"][0]["partitions"][0]
        return p["error_code"], p["committed_offset"]

    out: dict = {}
    try:
        out["commit before AddOffsetsToTxn (v3)"] = commit(5, 3, epoch)
        out["AddOffsetsToTxn"] = c.coordinator(tid).request(ApiKey.ADD_OFFSETS_TO_TXN, {
            "transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": group}, 4)["error_code"]
        out["commit (v3)"] = commit(5, 3, epoch)
        out["open: stable fetch"] = fetched(True)
        out["open: fetch"] = fetched(False)
        out["end (v4)"] = c.end_and_settle(tid, pid, epoch, True, 4)["error_code"]
        out["committed: fetch"] = fetched(True)
        out["commit (v5)"] = commit(7, 5, epoch)
        out["v5 open: stable fetch"] = fetched(True)
        end = c.end_and_settle(tid, pid, epoch, False, 5)
        out["abort (v5)"] = (end["error_code"], end["producer_epoch"] - epoch)
        out["aborted: fetch"] = fetched(True)
        out["old epoch (v5)"] = commit(9, 5, epoch)
    finally:
        group_coordinator.close()
    return out


def compression(bootstrap: str) -> dict:
    """A topic's compression.type: `producer` keeps each batch's codec, a codec recompresses."""
    out = {}
    for target in ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"):
        c = Cluster(bootstrap, **{"compression.type": target})
        try:
            sent = [c.produce(bytes(log.build_batch([(b"k", b"value %d" % i)] * 3, codec=codec)))
                    for i, codec in enumerate((0, 1, 2, 3, 4))]
            fetched = c.fetch(READ_UNCOMMITTED)
            out[target] = (sent, fetched["codecs"], [v for _, v in fetched["records"]])
        finally:
            c.close()
    return out
