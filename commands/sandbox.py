"""`sandbox ACTION ...`: fault injection on the embedded cluster (only with kafka-shell --sandbox)."""

from __future__ import annotations

from kafka_shell.errors import UsageError, shown
from kafka_shell.registry import INT32_MAX, INT64_MAX, Option, command, int_range
from kafka_shell.render import Result

# action -> (argument names, what it does)
ACTIONS = {
    "status": ((), "Show each broker: alive, controller, delay, injected errors."),
    "stop-broker": (("BROKER",), "Stop a broker (its port closes)."),
    "start-broker": (("BROKER",), "Start a stopped broker."),
    "kill-controller": ((), "Make the active controller resign; another broker takes over."),
    "set-log-end-offset": (("TOPIC", "PARTITION", "BROKER", "OFFSET"),
                           "Set a replica's log end offset (with --epoch, its leader epoch)."),
    "delay": (("BROKER", "MS"), "Answer every request of a broker MS milliseconds late."),
    "fail": (("BROKER", "API", "ERROR_NAME"), "Answer every API request of a broker with an error."),
    "heal": ((), "Remove every delay and injected error."),
}


@command("sandbox",
         Option("action", choices=tuple(ACTIONS), required=True, help="What to do."),
         Option("args", repeatable=True, metavar="ARG", help="The action's arguments."),
         Option("--epoch", type=int_range(0, INT32_MAX, "a leader epoch"), metavar="E", help="Leader epoch for set-log-end-offset."),
         sandbox_only=True,
         help="Control the embedded sandbox cluster (faults, brokers, controller).",
         description="\n".join(f"  {a} {' '.join(n)}: {h}" for a, (n, h) in ACTIONS.items()),
         examples=("sandbox status", "sandbox stop-broker 2", "sandbox kill-controller",
                   "sandbox fail 1 CreateTopics NOT_CONTROLLER", "sandbox heal"))
def sandbox_command(session, args: dict) -> Result:
    action, values = args["action"], args["args"]
    names = ACTIONS[action][0]
    if len(values) != len(names):
        usage = " ".join(["sandbox", action, *names])
        raise UsageError(f"sandbox {action} takes {len(names)} argument(s): {usage}")
    sb = session.sandbox
    try:
        if action == "status":
            return _status(sb)
        if action in ("stop-broker", "start-broker"):
            broker = _int(values[0], "BROKER")
            getattr(sb, action.replace("-", "_"))(broker)
            return Result.message(f"Broker {broker} {'stopped' if action == 'stop-broker' else 'started'}.")
        if action == "kill-controller":
            old = sb.cluster.controller_id
            new = sb.kill_controller()
            return Result.message(f"Controller moved from broker {old} to broker {new}.")
        if action == "set-log-end-offset":
            topic, partition, broker, offset = values
            kwargs = {"epoch": args["epoch"]} if args["epoch"] is not None else {}
            sb.set_log_end_offset(topic, _int(partition, "PARTITION"), _int(broker, "BROKER"),
                                  _int(offset, "OFFSET"), **kwargs)
            return Result.message(f"Broker {broker} now ends {topic}-{partition} at offset {offset}.")
        if action == "delay":
            sb.delay(_int(values[0], "BROKER"), _int(values[1], "MS"))
            return Result.message(f"Broker {values[0]} answers {values[1]} ms late.")
        if action == "fail":
            sb.fail(_int(values[0], "BROKER"), values[1], values[2])
            return Result.message(f"Broker {values[0]} answers {values[1]} with {values[2]}.")
        sb.heal()
        return Result.message("Delays and injected errors removed.")
    except ValueError as exc:  # the sandbox says what was wrong (unknown broker, API, error)
        raise UsageError(str(exc)) from None


def _int(text: str, what: str) -> int:
    """BROKER and MS are int32 in Kafka, OFFSET an int64."""
    high = INT64_MAX if what == "OFFSET" else INT32_MAX
    try:
        return int_range(0, high)(text)
    except ValueError as exc:
        raise UsageError(f'Invalid {what} "{shown(text)}": expected {exc}') from None


def _status(sb) -> Result:
    cluster = sb.cluster
    rows = [[b.id, f"{b.host}:{b.port}", b.rack, "up" if b.alive else "down",
             b.id == cluster.controller_id, b.delay_ms, ",".join(f"{k}:{v}" for k, v in b.failures.items())]
            for b in cluster.brokers.values()]
    return Result.table(["Broker", "Address", "Rack", "State", "Controller", "DelayMs", "Failures"], rows)
