"""The fleet data pipeline's commands (issue 11): `snapshot` writes one picture of the cluster
as Parquet (or a series with --every/--count), `analyze` runs the PySpark jobs over many
snapshots. pyarrow and pyspark load only when these run (the `pipeline` extra).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_shell.errors import ShellError, UsageError
from kafka_shell.option_types import key_value, positive_int
from kafka_shell.registry import Option, command
from kafka_shell.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.session import Session

EXTRA_HINT = "install the pipeline extra: pip install 'kafka-shell[pipeline]'"
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}


def duration(text: str) -> float:
    """An interval like 60s, 5m, 1h or 500ms (a bare number is seconds), at least 1 ms."""
    match = _DURATION.fullmatch(text.strip())
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)] if match else 0
    if not 0.001 <= seconds <= 7 * 86400:
        raise ValueError("an interval like 60s, 5m, 1h or 500ms (up to a week)")
    return seconds


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


@command("snapshot",
         Option("--output-dir", type=directory, metavar="D", required=True, completer="path",
                help="Write the snapshot under D/<cluster id>/<UTC time>/ (Parquet tables and manifest.json)."),
         Option("--every", type=duration, metavar="INTERVAL",
                help="Take a series: one snapshot every INTERVAL (60s, 5m, ...); with --count."),
         Option("--count", type=positive_int, metavar="N", help="How many snapshots to take (default 1)."),
         help="Write a snapshot of the cluster as Parquet: brokers, topics, partitions, replicas, offsets, groups.",
         description=("One consistent read of the cluster (one Metadata request, one DescribeLogDirs per broker, "
                      "ListOffsets batched per leader, DescribeConfigs, consumer group offsets), written as Parquet "
                      "for `kafka-shell analyze`. See README, Fleet analysis."),
         examples=("snapshot --output-dir snapshots", "snapshot --output-dir snapshots --every 60s --count 60"))
def snapshot_command(session: Session, args: dict) -> Result:
    need_extra("pyarrow")
    count = args["count"] or 1
    if count > 1 and args["every"] is None:
        raise UsageError("--count above 1 needs --every INTERVAL (the time between snapshots)")
    root = usable_directory(args["output_dir"], "--output-dir")
    from kafka_shell.pipeline import snapshot
    rows = []
    next_at = time.monotonic()
    for n in range(count):
        if n:
            next_at += args["every"]
            time.sleep(max(0.0, next_at - time.monotonic()))
        try:
            directory = snapshot.take(session, root)
        except OSError as exc:
            raise ShellError(f"Cannot write the snapshot under {args['output_dir'][:80]!r}: {exc.strerror or exc}") from None
        info = snapshot.summary(directory)
        rows.append([info["cluster_id"], info["taken_at"], str(directory), info["rows"]["partitions"],
                     info["rows"]["brokers"], info["seconds"]])
        if count > 1:
            session.stderr.write(f"Snapshot {n + 1}/{count}: {directory} ({info['seconds']:.2f} s)\n")
            session.stderr.flush()
    return Result(tables=[Table(["Cluster", "TakenAt", "Directory", "Partitions", "Brokers", "Seconds"], rows,
                                name="snapshots")])


@command("analyze",
         Option("--snapshots", type=directory, metavar="D", required=True, completer="path",
                help="Directory of snapshots (from snapshot or python -m kafka_shell.pipeline.synth)."),
         Option("--out", type=directory, metavar="DIR", required=True, completer="path",
                help="Where to write tables, plans and report.html (created if missing)."),
         Option("--spark-master", metavar="URL",
                help="Spark master, e.g. spark://host:7077 (default: local[*], this machine)."),
         Option("--spark-conf", type=key_value, repeatable=True, metavar="K=V",
                help="A Spark setting (repeatable), e.g. spark.executor.memory=4g."),
         help="Run the PySpark fleet analysis over snapshots: health, load, plans, trends, HTML report.",
         description=("Reads every snapshot under --snapshots and writes into --out: health per cluster and "
                      "snapshot, broker and rack load, KIP-426 missing broker ids, plans (recovery, preferred "
                      "election, rebalance) in the JSON the shell's commands take, trends, and report.html. "
                      "One progress line per stage on stderr."),
         examples=("analyze --snapshots snapshots --out analysis",
                   "analyze --snapshots snapshots --out analysis --spark-master spark://10.0.0.5:7077"))
def analyze_command(session: Session, args: dict) -> Result:
    need_extra("pyspark")
    root = usable_directory(args["snapshots"], "--snapshots")
    if not root.is_dir():
        raise UsageError(f"--snapshots {root} is not a directory: give the directory snapshots were written to")
    out = usable_directory(args["out"], "--out")
    need_java()
    from kafka_shell.pipeline import jobs
    try:
        summary = jobs.run(root, out, master=args["spark_master"], conf=dict(args["spark_conf"] or []),
                           progress=session.stderr)
    except jobs.NoSnapshots as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            raise
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise ShellError(f"Spark failed: {first[:300]} (run with --debug for details)") from None
    rows = [[name, value] for name, value in summary.items()]
    return Result(tables=[Table(["Item", "Value"], rows, name="summary")],
                  messages=[f"Wrote the analysis to {out}; open {out / 'report.html'} in a browser."])
