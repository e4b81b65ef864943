# A broker lost its disk (KIP-426), replayed on the sandbox:
#   kafka-shell sandbox &                      (prints its --bootstrap-server)
#   kafka-shell --bootstrap-server ... --file docs/broker-lost-disk.ksh
# The test suite replays this file (tests/test_broker_ids.py).

# A topic whose partitions live on every broker.
create-topic --topic orders --partitions 6 --replication-factor 3

# Keep the host -> id mapping in the cluster (compacted topic __broker_hosts), as the KIP's
# brokers do at start-up. Run it again after adding or moving brokers: it writes only changes.
broker-ids record
broker-ids hosts

# The disk of broker 3 dies: the broker is gone.
sandbox stop-broker 3

# Which ids do replica sets still name, and what does it cost? (3: six partitions short)
broker-ids missing

# Which id should the repaired machine take? The mapping says 3.
broker-ids suggest --host broker-3.sandbox

# The machine comes back with an empty disk and no broker.id: it takes 3 through the mapping,
# and its replicas catch up from the leaders.
sandbox replace-broker 3 --lose-disk --host broker-3.sandbox

# Nothing is missing any more, and every partition has its full ISR again.
broker-ids missing
describe-topic --topic orders --under-replicated-partitions
