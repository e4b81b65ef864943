"""`sandbox ACTION ...`: fault injection on the embedded cluster (kafka-shell --sandbox) or on a
`kafka-shell sandbox` server (through its control endpoint, kafka_shell/connection/sandbox_client.py).
Both are driven through the same methods (`Sandbox` / `RemoteSandbox`), each done when it returns."""

from __future__ import annotations

from kafka_shell.connection import sandbox_client
from kafka_shell.base.errors import UsageError, shown
from kafka_shell.declarations.registry import INT32_MAX, INT64_MAX, Option, command, int_range
from kafka_shell.declarations.render import Result

# action -> (argument names, what it does)
ACTIONS = {
    "status": ((), "Show each broker and controller: alive, active controller, delay, injected errors."),
    "stop-broker": (("BROKER",), "Stop a broker (its port closes)."),
    "start-broker": (("BROKER",), "Start a stopped broker."),
    "kill-controller": ((), "Kill the active controller; another voter (zk mode: broker) takes over, "
                            "a lone one comes back with a higher epoch."),
    "stop-controller": (("CONTROLLER",), "Stop a KRaft controller (its listener closes; with no "
                                         "voter left there is no active controller)."),
    "start-controller": (("CONTROLLER",), "Start a stopped KRaft controller."),
    "set-log-end-offset": (("TOPIC", "PARTITION", "BROKER", "OFFSET"),
                           "Set a replica's log end offset (with --epoch, its leader epoch)."),
    "delay": (("BROKER", "MS"), "Answer every request of a broker MS milliseconds late."),
    "lag-metadata": (("BROKER", "MS"), "Let a broker's metadata trail the controller's by MS milliseconds: "
                                       "its Metadata answers show each change that much later."),
    "fail": (("BROKER", "API", "ERROR_NAME"), "Answer every API request of a broker with an error."),
    "heal": ((), "Remove every delay, metadata lag and injected error."),
    "replace-broker": (("BROKER",), "Bring a broker back as a repaired machine does (on --host): with its "
                                    "id (--keep-id, the default), or with its disk lost (--lose-disk) taking "
                                    "an id by KIP-426's procedure; it records its host in __broker_hosts."),
}


@command("sandbox",
         Option("action", choices=tuple(ACTIONS), required=True, help="What to do."),
         Option("args", repeatable=True, metavar="ARG", help="The action's arguments."),
         Option("--epoch", type=int_range(0, INT32_MAX, "a leader epoch"), metavar="E",
                help="Leader epoch for set-log-end-offset."),
         Option("--host", metavar="HOST", help="replace-broker: the machine's host name (default: the broker's)."),
         Option("--keep-id", flag=True, help="replace-broker: the disk survived; the broker keeps its id."),
         Option("--lose-disk", flag=True,
                help="replace-broker: the disk is gone (no meta.properties); the id comes from KIP-426's procedure."),
         sandbox_only=True, changes_cluster=True, exclusive_groups=(("--keep-id", "--lose-disk"),),
         help="Control the sandbox cluster (faults, brokers, controllers).",
         description="\n".join(f"  {a} {' '.join(n)}: {h}" for a, (n, h) in ACTIONS.items()) +
         "\n  Works on kafka-shell --sandbox, and on a `kafka-shell sandbox` server given as "
         "--bootstrap-server (through its control endpoint).",
         examples=("sandbox status", "sandbox stop-broker 2", "sandbox kill-controller",
                   "sandbox stop-controller 100", "sandbox fail 1 CreateTopics NOT_CONTROLLER",
                   "sandbox heal", "sandbox replace-broker 3 --lose-disk --host broker-3.sandbox"), tables=("nodes",))
def sandbox_command(session, args: dict) -> Result:
    action, values = args["action"], args["args"]
    names = ACTIONS[action][0]
    if len(values) != len(names):
        usage = " ".join(["sandbox", action, *names])
        raise UsageError(f"sandbox {action} takes {len(names)} argument(s): {usage}")
    if action != "replace-broker" and (args["host"] or args["keep_id"] or args["lose_disk"]):
        raise UsageError("--host, --keep-id and --lose-disk are for sandbox replace-broker")
    if session.sandbox is None:  # a `kafka-shell sandbox` server's control endpoint
        session.sandbox = sandbox_client.attach(session.target)
    sb = session.sandbox
    try:
        if action == "replace-broker":
            broker = _int(values[0], "BROKER")
            chosen, reason = sb.replace_broker(broker, args["host"], args["lose_disk"])
            disk = "with an empty disk" if args["lose_disk"] else "with its disk"
            gone = (f" Id {broker} is not taken again: it stays stopped (see broker-ids missing)."
                    if reason == "new id" else "")
            return Result.message(f"Broker {broker} replaced: it started {disk} as broker {chosen} ({reason}).{gone}")
        if action == "status":
            return _status(sb)
        if action in ("stop-broker", "start-broker"):
            broker = _int(values[0], "BROKER")
            getattr(sb, action.replace("-", "_"))(broker)
            return Result.message(f"Broker {broker} {'stopped' if action == 'stop-broker' else 'started'}.")
        if action == "kill-controller":
            before = sb.status()
            sb.kill_controller()
            after = sb.status()
            return Result.message(
                f"Active controller {_controller(before)} killed; active controller now "
                f"{_controller(after)}.")
        if action in ("stop-controller", "start-controller"):
            controller = _int(values[0], "CONTROLLER")
            getattr(sb, action.replace("-", "_"))(controller)
            done = "stopped" if action == "stop-controller" else "started"
            return Result.message(f"Controller {controller} {done}; active controller now "
                                  f"{_controller(sb.status())}.")
        if action == "set-log-end-offset":
            topic, partition, broker, offset = values
            kwargs = {"epoch": args["epoch"]} if args["epoch"] is not None else {}
            sb.set_log_end_offset(topic, _int(partition, "PARTITION"), _int(broker, "BROKER"),
                                  _int(offset, "OFFSET"), **kwargs)
            return Result.message(f"Broker {broker} now ends {topic}-{partition} at offset {offset}.")
        if action == "delay":
            sb.delay(_int(values[0], "BROKER"), _int(values[1], "MS"))
            return Result.message(f"Broker {values[0]} answers {values[1]} ms late.")
        if action == "lag-metadata":
            sb.lag_metadata(_int(values[0], "BROKER"), _int(values[1], "MS"))
            return Result.message(f"Broker {values[0]}'s metadata trails the controller's by {values[1]} ms.")
        if action == "fail":
            sb.fail(_int(values[0], "BROKER"), values[1], values[2])
            return Result.message(f"Broker {values[0]} answers {values[1]} with {values[2]}.")
        sb.heal()
        return Result.message("Delays, metadata lags and injected errors removed.")
    except ValueError as exc:  # the sandbox says what was wrong (unknown broker, API, error)
        raise UsageError(str(exc)) from None


def _int(text: str, what: str) -> int:
    """BROKER and MS are int32 in Kafka, OFFSET an int64."""
    high = INT64_MAX if what == "OFFSET" else INT32_MAX
    try:
        return int_range(0, high)(text)
    except ValueError as exc:
        raise UsageError(f'Invalid {what} "{shown(text)}": expected {exc}') from None


def _controller(status: dict) -> str:
    """`100 (epoch 3)`, `broker 2 (epoch 3)` in zk mode, or `none (epoch 3)`."""
    active = status["active_controller"]
    who = "none" if active < 0 else (f"broker {active}" if status["mode"] == "zk" else str(active))
    return f"{who} (epoch {status['controller_epoch']})"


def _status(sb) -> Result:
    status = sb.status()
    active = status["active_controller"]
    rows = []
    for role, nodes in (("broker", status["brokers"]), ("controller", status["controllers"])):
        for n in nodes:
            state = "up" if n["alive"] else "down"
            if role == "broker" and n["alive"] and n["fenced"]:
                state = "up (fenced)"
            rows.append([n["id"], role, f"{n['host']}:{n['port']}", n.get("rack"), state,
                         n["id"] == active, n["delay_ms"], n.get("metadata_lag_ms"),
                         ",".join(f"{k}:{v}" for k, v in n["failures"].items())])
    return Result.table(["Node", "Role", "Address", "Rack", "State", "ActiveController", "DelayMs", "MetadataLagMs",
                         "Failures"], rows, name="nodes", kinds={"DelayMs": "ms", "MetadataLagMs": "ms"})
