"""The fleet data pipeline's commands (issue 11): `snapshot` writes one picture of the cluster
as Parquet (or a series with --every/--count), `analyze` runs the PySpark jobs over many
snapshots. pyarrow and pyspark load only when these run (the `pipeline` extra).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_shell.base.errors import ShellError, UsageError, from_kafka_exception
from kafka_shell.declarations.option_types import duration, key_value, positive_int
from kafka_shell.declarations.registry import Option, command
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

EXTRA_HINT = "install the pipeline extra: pip install 'kafka-shell[pipeline]'"
def directory(text: str) -> str:
    """A directory path: not empty, no control characters, UTF-8 (what Parquet's writer takes)."""
    try:
        text.encode("utf-8")
    except UnicodeError:
        raise ValueError("a directory path in UTF-8") from None
    if not text or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError("a directory path (not empty, no control characters)")
    return text


def usable_directory(text: str, option: str) -> Path:
    """The path of an option, refused with one line when it names a file or cannot be a path."""
    path = Path(text).expanduser()
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{option} {text} is not a directory: give a directory (it is created if missing)")
    except OSError as exc:
        raise UsageError(f"{option}: cannot use {text[:80]!r} ({exc.strerror}): give another directory") from None
    return path


def need_extra(module: str) -> None:
    """One line, not a traceback, when the pipeline extra is missing."""
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise UsageError(f"This command needs {module}: {EXTRA_HINT}")


def need_java() -> None:
    """Spark runs on a JVM: PySpark starts `$JAVA_HOME/bin/java`, or `java` on the PATH."""
    import os
    import shutil
    home = os.environ.get("JAVA_HOME")
    if home and not os.access(os.path.join(home, "bin", "java"), os.X_OK):
        raise UsageError(f"JAVA_HOME={home} has no bin/java: point it at a Java 17+ installation or unset it")
    if not home and shutil.which("java") is None:
        raise UsageError("analyze needs Java 17 or later for Spark: install it (Debian: apt-get install "
                         "openjdk-17-jre-headless) or set JAVA_HOME")


def remote_url(text: str) -> str:
    """A Spark Connect address: sc://host:port (with optional ;key=value parameters)."""
    if not text.startswith("sc://") or len(text) <= len("sc://") or any(ord(c) < 32 for c in text):
        raise ValueError("a Spark Connect address like sc://host:15002")
    return text


@command("snapshot",
         Option("--output-dir", type=directory, metavar="D", required=True, completer="path",
                help="Write the snapshot under D/<cluster id>/<UTC time>/ (Parquet tables and manifest.json)."),
         Option("--every", type=duration, metavar="INTERVAL",
                help="Keep taking snapshots, one every INTERVAL (60s, 5m, ...), until Ctrl-C or --count. "
                     "A round that fails is recorded and the series goes on."),
         Option("--count", type=positive_int, metavar="N", help="How many snapshots to take (default 1; with --every: until Ctrl-C)."),
         help="Write a snapshot of the cluster as Parquet: brokers, topics, partitions, replicas, log dirs, offsets, groups.",
         description=("Reads of the cluster one after another (one Metadata request, one DescribeLogDirs per broker, "
                      "ListOffsets batched per leader, DescribeConfigs, consumer group offsets; a cluster that changes "
                      "meanwhile can show a partition's offsets from a moment after its metadata), written as Parquet "
                      "for `kafka-shell analyze`. With --every, a series: a round that fails (the cluster unreachable, "
                      "the disk full) leaves a manifest that says why, one line on stderr, and the next round comes "
                      "on time; the exit code is 1 if any round failed. See README, Fleet analysis."),
         examples=("snapshot --output-dir snapshots", "snapshot --output-dir snapshots --every 60s",
                   "snapshot --output-dir snapshots --every 60s --count 60"), tables=("snapshots",))
def snapshot_command(session: Session, args: dict) -> Result:
    need_extra("pyarrow")
    every, count = args["every"], args["count"]
    if (count or 1) > 1 and every is None:
        raise UsageError("--count above 1 needs --every INTERVAL (the time between snapshots)")
    root = usable_directory(args["output_dir"], "--output-dir")
    if every is None:
        row = _take_one(session, root, args["output_dir"])
        partial = row[-1] != "ok"
        return Result(tables=[_snapshot_table([row])], exit_code=1 if partial else 0,
                      messages=["The snapshot is partial: what did not answer is left out (its manifest's "
                                "left_out lists it)."] if partial else [])
    return _series(session, root, args["output_dir"], every, count)


def _take_one(session: Session, root: Path, shown: str) -> list:
    from kafka_shell.pipeline import snapshot
    try:
        with session.bounded():   # each snapshot of a series within --timeout
            directory, left_out = snapshot.take(session, root)
    except OSError as exc:
        raise ShellError(f"Cannot write the snapshot under {shown[:80]!r}: {exc.strerror or exc}") from None
    info = snapshot.summary(directory)
    return [info["cluster_id"], info["taken_at"], str(directory), info["rows"]["partitions"],
            info["rows"]["brokers"], info["seconds"], f"partial: {len(left_out)} part(s) left out" if left_out else "ok"]


def _snapshot_table(rows: list[list]) -> Table:
    return Table(["Cluster", "TakenAt", "Directory", "Partitions", "Brokers", "Seconds", "Status"], rows, name="snapshots")


def _series(session: Session, root: Path, shown: str, every: float, count: int | None) -> Result:
    """Rounds every `every` seconds (on a fixed schedule; a late round does not shift the
    next ones) until `count` or Ctrl-C. A failed round writes a manifest with the reason under
    the cluster seen last (`unknown-cluster` before any), says one line, and the series goes on."""
    import datetime

    from kafka_shell.pipeline import schema
    rows: list[list] = []
    failed = 0
    cluster = "unknown-cluster"
    of = f"/{count}" if count else ""
    next_at = time.monotonic()
    try:
        while count is None or len(rows) < count:
            if rows:
                next_at += every
                time.sleep(max(0.0, next_at - time.monotonic()))
            n = len(rows) + 1
            try:
                row = _take_one(session, root, shown)
            except Exception as exc:
                if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
                    raise KeyboardInterrupt from None  # Ctrl-C inside librdkafka's call arrives as a SystemError
                if not isinstance(exc, ShellError) and type(exc).__name__ != "KafkaException":
                    raise  # a defect, not a round that failed
                failed += 1
                now = datetime.datetime.now(datetime.UTC)
                reason = str(exc if isinstance(exc, ShellError) else from_kafka_exception(exc)).split("\n")[0]
                try:
                    where = str(schema.write_failure(root, cluster, now, reason))
                except OSError as write_exc:
                    where = f"not recorded ({write_exc.strerror or write_exc})"
                rows.append([cluster, now.isoformat(), where, None, None, None, f"failed: {reason}"])
                session.stderr.write(f"Snapshot {n}{of} failed: {reason} (recorded in {where}); the series goes on.\n")
                session.stderr.flush()
                continue
            cluster = row[0]
            rows.append(row)
            failed += row[-1] != "ok"
            session.stderr.write(f"Snapshot {n}{of}: {row[2]} ({row[5]:.2f} s)\n")
            session.stderr.flush()
    except KeyboardInterrupt:
        session.stderr.write(f"Stopped after {len(rows)} round(s).\n")
    messages = [f"{failed} of {len(rows)} round(s) failed or are partial; their manifests say why."] if failed else []
    return Result(tables=[_snapshot_table(rows)], messages=messages, exit_code=1 if failed else 0)


@command("analyze",
         Option("--snapshots", type=directory, metavar="D", required=True, completer="path",
                help="Directory of snapshots (from snapshot or python -m kafka_shell.pipeline.synth)."),
         Option("--out", type=directory, metavar="DIR", required=True, completer="path",
                help="Where to write tables, plans and report.html (created if missing; must be empty, "
                     "or hold an earlier analysis and --overwrite)."),
         Option("--overwrite", flag=True, help="Replace the earlier analysis in --out (its old plans are removed)."),
         Option("--spark-master", metavar="URL",
                help="Spark master, e.g. spark://host:7077 (default: local[*], this machine)."),
         Option("--spark-remote", type=remote_url, metavar="URL",
                help="Run through Spark Connect, e.g. sc://host:15002 (a Spark 3.4+ server or a managed Spark)."),
         Option("--spark-conf", type=key_value, repeatable=True, metavar="K=V",
                help="A Spark setting (repeatable), e.g. spark.executor.memory=4g (through Spark Connect: "
                     "session settings such as spark.sql.*)."),
         help="Run the PySpark fleet analysis over snapshots: health, load, plans, trends, forecasts, HTML report.",
         description=("Reads every snapshot under --snapshots and writes into --out: health per cluster and "
                      "snapshot, broker and rack load, KIP-426 missing broker ids, plans (recovery, preferred "
                      "election, rebalance) in the JSON the shell's commands take, trends, forecasts (days until "
                      "each log dir is full, groups whose lag grows, controller moves per day) and report.html. "
                      "One progress line per stage on stderr, with the Spark jobs it ran."),
         examples=("analyze --snapshots snapshots --out analysis",
                   "analyze --snapshots snapshots --out analysis --overwrite --spark-master spark://10.0.0.5:7077",
                   "analyze --snapshots snapshots --out analysis --spark-remote sc://spark.example.com:15002"), tables=("summary", "clusters"))
def analyze_command(session: Session, args: dict) -> Result:
    need_extra("pyspark")
    if args["spark_master"] and args["spark_remote"]:
        raise UsageError("Give --spark-master or --spark-remote, not both")
    root = usable_directory(args["snapshots"], "--snapshots")
    if not root.is_dir():
        raise UsageError(f"--snapshots {root} is not a directory: give the directory snapshots were written to")
    out = usable_directory(args["out"], "--out")
    if args["spark_remote"]:
        need_extra("grpc")
    else:
        need_java()
    from kafka_shell.pipeline import jobs
    try:
        # Spark resolves a relative path against its JVM's directory, which a session kept from an
        # earlier run (in the REPL) does not share with this one: give it absolute paths.
        summary = jobs.run(root.absolute(), out.absolute(), master=args["spark_master"], conf=dict(args["spark_conf"] or []),
                           progress=session.stderr, remote=args["spark_remote"], overwrite=args["overwrite"])
    except (jobs.NoSnapshots, jobs.OutputNotEmpty) as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:
        if not type(exc).__module__.startswith(("py4j", "pyspark", "grpc")):
            raise
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise ShellError(f"Spark failed: {first[:300]} (run with --debug for details)") from None
    rows = [[name, value] for name, value in summary.items() if not isinstance(value, (dict, list))]
    clusters = [[h["cluster_id"], h["severity"], h["partitions"], h["offline"], h["under_min_isr"], h["missing_broker_ids"],
                 h["controller_moves"], h["lag_growing"], h["min_days_to_full"]] for h in summary["headline"]]
    return Result(tables=[Table(["Item", "Value"], rows, name="summary"),
                          Table(["Cluster", "Severity", "Partitions", "Offline", "UnderMinIsr", "MissingBrokerIds",
                                 "ControllerMoves", "LagGrowing", "DaysToFullDisk"], clusters, name="clusters")],
                  messages=[f"Wrote the analysis to {out}; open {out / 'report.html'} in a browser."])
