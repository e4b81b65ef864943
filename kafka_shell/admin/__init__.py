"""The admin layer: one module per noun (topics, configs, log_dirs, elections, reassignments,
quorum, groups, offsets, records, acls, scram, quotas, cluster), after franz-go's kadm.

Each function names *what* it asks; the connection manager (kafka_shell/connection/manager.py) decides
*whom*, within one deadline, with one retry policy. Answers come back as typed results (frozen
dataclasses; named tuples for per-partition rows), never as raw responses or error codes: a
failure is a line that says what to do (`errors.py`), and a per-broker read returns what the
brokers that answered said beside the ones that did not. Commands and the pipeline call these
and never import the protocol modules (tests/test_layers.py keeps it so).
"""
