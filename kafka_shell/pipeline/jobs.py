"""The fleet analysis on Spark (PySpark, the DataFrame API only, so it runs the same in local
mode, on a `spark://` master and through Spark Connect): reads every snapshot under a directory
and writes into an output directory

    tables/<name>.json      health, broker_load, rack_load, missing_brokers, controller_moves,
                            controller_churn, growth, lag_growth, disk_forecast, ... (a JSON
                            list of rows each)
    plans/<cluster>/        recovery.json (elect-leaders --election-type designated),
                            recovery_partitions.json (unclean-recovery --path-to-json-file),
                            preferred.json (elect-leaders --election-type preferred),
                            rebalance.json (reassign-partitions --execute)
    report.html             the self-contained report (see `report`)
    summary.json            counts, the headline per cluster, the plans and their commands
    spark.log               what the local Spark JVM printed (kept off the terminal)

How it stays fast: each snapshot file is scanned at most once for the run, and only for the
columns a stage reads. The small tables (cluster, brokers, log dirs) come back in one job; the
live brokers then go into the health query as sets, not a join. Each cluster's latest partitions
are cached, since the health, the load and both plans read them; the health of all snapshots is
one aggregation, and so are the consumer lag (its offsets' scan keeps to the committed topics'
range, skipping Parquet row groups by their statistics) and the bytes per log dir, whose one
scan of the replicas also brings back the recovery plan's log ends. The older replicas, the
biggest table, are read only where the log dirs did not tell their used bytes. The local JVM
maps Spark's classes from an archive the first run writes (`ClassArchive`). Spark returns only small results (a row per cluster and snapshot, per
broker and log dir, per group, per partition that a plan touches); what is left (skew, the choice of a
recovery leader among a few replicas, forecasts) is arithmetic on those rows. Health classes
follow kafka-topics' filters; the recovery plan follows the unclean-recovery rule (highest
leader epoch, then longest log, then the earlier replica); the rebalance moves the fewest
replicas that bring every broker within one replica of its rack's mean, only inside a rack (so
rack spread never gets worse).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from functools import reduce
from pathlib import Path
from typing import IO, Any

from kafka_shell.pipeline import derived, schema

KEY = ["cluster_id", "taken_at"]
PART = ["cluster_id", "topic", "partition"]
PARTITION_COLUMNS = [*KEY, "topic", "partition", "leader", "replicas", "isr", "elr"]  # what the stages read of partitions
HEALTH = ["under_replicated", "under_min_isr", "at_min_isr", "offline", "not_preferred"]
PLAN_FILES = ("recovery.json", "recovery_partitions.json", "preferred.json", "rebalance.json")


class NoSnapshots(ValueError):
    """The directory holds no complete snapshot."""


class OutputNotEmpty(ValueError):
    """--out holds files that are not an earlier analysis, or an analysis without --overwrite."""


# -- Spark sessions ------------------------------------------------------------------------------


def local_cores(master: str) -> int | None:
    """The cores of a local master (local, local[4], local[*]); None for a cluster."""
    if master == "local":
        return 1
    if master.startswith("local["):
        n = master[len("local["):].split(",")[0].rstrip("]")
        return os.cpu_count() or 1 if n == "*" else int(n)
    return None


SHORT_JOB_ROWS = 2_000_000  # partition rows below which the local JVM runs without C2


ARCHIVE_WRITE_SECONDS = 1800  # writing takes seconds on a quiet machine, minutes on a crowded one


class ClassArchive:
    """Spark's classes as a class-data archive of the driver JVM (AppCDS), kept in kafka-shell's
    cache: mapped from it, the JVM's start and first query take about half the CPU. The first
    run writes it when its JVM exits (`finish`); it is keyed by pyspark and the java binary, and
    a JVM that finds it does not match its classpath just loads the classes itself."""

    def __init__(self) -> None:
        import hashlib

        import pyspark
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
        java = os.path.realpath(java or "java")
        mtime = os.stat(java).st_mtime_ns if os.path.exists(java) else 0
        key = hashlib.sha1(f"{pyspark.__file__}|{java}|{mtime}".encode()).hexdigest()[:12]
        cache = Path(os.environ.get("KAFKA_SHELL_CACHE") or Path.home() / ".cache" / "kafka-shell")
        self.path = cache / "spark-cds" / f"spark-{pyspark.__version__}-{key}.jsa"
        self.part: Path | None = None  # set while this run writes the archive

    def option(self) -> str:
        """The JVM option: map the archive, or write it at exit (to a part file of this process)."""
        if self.path.exists():
            return f"-XX:SharedArchiveFile={self.path}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for old in self.path.parent.glob("*.part"):  # left by runs that died before `finish`
            if time.time() - old.stat().st_mtime > 3600:
                old.unlink(missing_ok=True)
        self.part = self.path.with_name(f"{self.path.name}.{os.getpid()}.part")
        return f"-XX:ArchiveClassesAtExit={self.part}"

    def finish(self, spark: Any) -> None:
        """When this run writes the archive: stop the JVM, wait for it to write the archive and
        keep it only after a clean exit (a partial archive would crash the JVMs that map it)."""
        if self.part is None:
            return
        proc = spark.sparkContext._gateway.proc
        spark.stop()
        proc.stdin.close()  # the gateway JVM exits at the end of its input
        clean = False
        try:
            clean = proc.wait(ARCHIVE_WRITE_SECONDS) == 0
        except subprocess.TimeoutExpired:
            pass  # the analysis is done: a later run writes the archive
        finally:  # a timeout or Ctrl-C: stop the JVM before it writes a part nobody keeps
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if clean and self.part.exists() and self.part.stat().st_size > 0:
                os.replace(self.part, self.path)
            else:
                self.part.unlink(missing_ok=True)
            self.part = None


def spark_session(master: str | None = None, conf: dict[str, str] | None = None, remote: str | None = None,
                  log: Path | None = None, short: bool = False, archive: ClassArchive | None = None) -> Any:
    """A SparkSession: through Spark Connect when `remote` (sc://host:port), else a classic one
    (an active one is reused) on `master` (default local[*]). Locally: no UI, driver on
    loopback, as many shuffle partitions as cores (AQE coalesces them further), the driver's
    classes mapped from `archive`, and the JVM's own output (log4j, Hadoop's NativeCodeLoader
    warning, JVM notices) written to `log`."""
    if remote:
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.remote(remote).getOrCreate()
        for k, v in {"spark.sql.session.timeZone": "UTC", "spark.sql.adaptive.enabled": "true", **(conf or {})}.items():
            spark.conf.set(k, v)
        return spark
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession
    master = master or "local[*]"
    settings = {"spark.app.name": "kafka-shell analyze", "spark.master": master,
                "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.sql.session.timeZone": "UTC", "spark.sql.adaptive.enabled": "true"}
    cores = local_cores(master)
    java_options = []
    if cores is not None:
        # Shuffles carry small aggregates: a partition per core. Scans: ask for a few splits per
        # core, or one core reads the last files alone (format 1 files are one row group each).
        settings["spark.sql.shuffle.partitions"] = str(max(1, cores))
        settings["spark.sql.files.minPartitionNum"] = str(4 * max(1, cores))
        if short:
            # On a job of seconds, C2's compile threads cost more CPU than they save (about half
            # the JVM's CPU at 300,000 partition rows); long jobs keep them for their hot loops.
            java_options.append("-XX:TieredStopAtLevel=1")
    if SparkContext._active_spark_context is None:
        if archive is not None:
            java_options += [archive.option(), "-Xlog:cds=error,cds+dynamic=warning"]  # not a line per class it skips
        if java_options:
            settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
        settings.update(conf or {})
        spark_conf = SparkConf().setAll(list(settings.items()))
        with open(log or os.devnull, "ab") as sink:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": sink, "stderr": sink})
        SparkContext(conf=spark_conf, gateway=gateway)
    else:
        settings.update(conf or {})
    builder = SparkSession.builder
    for k, v in settings.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


def is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def jvm_cpu_seconds(spark: Any) -> float | None:
    """The CPU seconds the local Spark JVM has used (its children's included: spark-submit's
    launcher JVM), from /proc; None through Spark Connect, off Linux, or a JVM we did not start."""
    proc = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None) if spark is not None and not is_connect(spark) else None
    if proc is None:
        return None
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


class Stages:
    """One progress line per stage with the Spark work it ran and the CPU it took, so a
    regression shows even on a busy machine: `analyze [3/11] health: 1.2 s, 4 Spark jobs, CPU
    2.1 s JVM + 0.1 s Python`. Classic Spark counts jobs (by job group); Spark Connect tells its
    client only stages, so there it counts stages (and the JVM's CPU is the server's, unseen)."""

    def __init__(self, out: IO[str] | None, total: int):
        self.out, self.total, self.n = out, total, 0
        self.spark: Any = None
        self.counts: dict[str, int] = {}
        self.cpu: dict[str, float] = {"jvm": 0.0, "python": 0.0}
        self._stages: set[tuple[str, int]] = set()

    def watch(self, spark: Any) -> None:
        self.spark = spark
        if is_connect(spark):
            spark.registerProgressHandler(self._progress)

    def close(self) -> None:
        if self.spark is not None and is_connect(self.spark):
            self.spark.removeProgressHandler(self._progress)

    def _progress(self, stages: list, operation_id: str = "", **_: Any) -> None:
        self._stages.update((operation_id, s.stage_id) for s in stages)

    def after_spark(self, name: str, fn: Callable[[], Any]) -> None:
        """A stage that stops Spark: its time only."""
        self.n += 1
        t0 = time.perf_counter()
        fn()
        if self.out is not None:
            self.out.write(f"analyze [{self.n}/{self.total}] {name}: {time.perf_counter() - t0:.1f} s\n")
            self.out.flush()

    def run(self, name: str, fn: Callable[[], Any], session: bool = False) -> Any:
        """Run stage `name`; a `session` stage returns the SparkSession the later ones watch."""
        self.n += 1
        group = f"kafka-shell analyze {id(self)} {self.n}"  # unique: a reused SparkContext keeps old groups
        classic = self.spark is not None and not is_connect(self.spark)
        if classic:
            self.spark.sparkContext.setJobGroup(group, name)
        self._stages.clear()
        jvm0, py0, t0 = jvm_cpu_seconds(self.spark) or 0.0, time.process_time(), time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - t0
        if session:
            self.watch(value)  # its JVM's start is this stage's CPU
        jvm, py = jvm_cpu_seconds(self.spark), time.process_time() - py0
        self.cpu["python"] += py
        cpu = f", CPU {py:.1f} s Python"
        if jvm is not None:
            self.cpu["jvm"] += jvm - jvm0
            cpu = f", CPU {jvm - jvm0:.1f} s JVM + {py:.1f} s Python"
        work = ""
        if classic:
            jobs = len(self.spark.sparkContext.statusTracker().getJobIdsForGroup(group))
            work = f", {jobs} Spark job{'s' * (jobs != 1)}"
            self.counts[name] = jobs
        elif self.spark is not None and not session:
            work = f", {len(self._stages)} Spark stage{'s' * (len(self._stages) != 1)}"
            self.counts[name] = len(self._stages)
        if self.out is not None:
            self.out.write(f"analyze [{self.n}/{self.total}] {name}: {elapsed:.1f} s{work}{cpu}\n")
            self.out.flush()
        return value


# -- the run -------------------------------------------------------------------------------------


def prepare_out(out: Path, overwrite: bool) -> None:
    """An empty or new --out is used as it is; one holding an earlier analysis is cleared when
    `overwrite` (its old plans would otherwise look current), else refused; one holding anything
    else is refused (we delete only what we wrote)."""
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
        return
    ours = {"tables", "plans", "report.html", "summary.json", "missing_brokers.json", "spark.log"}
    strangers = sorted(p.name for p in out.iterdir() if p.name not in ours)
    if strangers:
        raise OutputNotEmpty(f"--out {out} holds files that are not an analysis ({', '.join(strangers[:3])}): "
                             "give an empty or new directory")
    if not overwrite:
        raise OutputNotEmpty(f"--out {out} holds an earlier analysis: add --overwrite to replace it, "
                             "or give an empty directory")
    for p in out.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def run(root: Path, out: Path, master: str | None = None, conf: dict[str, str] | None = None,
        progress: IO[str] | None = None, spark: Any = None, remote: str | None = None,
        overwrite: bool = False) -> dict[str, Any]:
    """Analyze the snapshots under `root` into `out`; returns the summary (also summary.json)."""
    manifests = schema.read_manifests(root)
    snapshots = [m for m in manifests if "failed" not in m]
    if not snapshots:
        raise NoSnapshots(f"No snapshot under {root}: take some with `snapshot --output-dir {root}` "
                          "or generate a fleet with python -m kafka_shell.pipeline.synth")
    prepare_out(out, overwrite)
    archive = ClassArchive() if spark is None and remote is None else None
    writes_archive = False
    if archive is not None:
        from pyspark import SparkContext
        writes_archive = not archive.path.exists() and SparkContext._active_spark_context is None
    stages = Stages(progress, 10 + (spark is None) + writes_archive)
    started = time.perf_counter()
    short = sum(m["rows"]["partitions"] for m in snapshots) < SHORT_JOB_ROWS
    if spark is None:
        spark = stages.run("Spark session", lambda: spark_session(master, conf, remote, out / "spark.log", short, archive),
                           session=True)
    else:
        stages.watch(spark)
    fleet = Fleet(spark, snapshots)
    try:
        summary = _analyze(fleet, stages, out, started, failed=[m for m in manifests if "failed" in m])
    finally:
        stages.close()
    if archive is not None and archive.part is not None:
        stages.after_spark("class archive for later runs (once)", lambda: archive.finish(spark))
    return summary


def _analyze(fleet: Fleet, stages: Stages, out: Path, started: float, failed: list[dict]) -> dict[str, Any]:
    small = stages.run("snapshot tables (cluster, brokers, log dirs)", fleet.small_tables)
    health = stages.run("health per cluster and snapshot", fleet.health)
    dirs = stages.run("bytes per broker and log dir", lambda: fleet.log_dir_bytes(small["log_dirs"]))
    lag = stages.run("consumer lag per group", fleet.lag)
    load = stages.run("broker and rack load", lambda: fleet.load(small["brokers"], dirs))
    marked = stages.run("partitions for the plans", fleet.marked_partitions)
    recovery = stages.run("recovery plan", lambda: fleet.recovery_plan(marked))
    rebalance = stages.run("rebalance plan", lambda: fleet.rebalance_plan(load["broker_load"]))
    trends = stages.run("trends and forecasts", lambda: derived.trends(small, health, dirs, lag, fleet.latest_at))
    goals = derived.balance_goals(load["broker_load"], rebalance["moves"])
    missing = fleet.missing_brokers(load["broker_load"], marked)
    preferred = [{k: r[k] for k in (*PART, "leader", "preferred")} for r in marked if r["preferred_ok"]]
    tables = {"health": health, **load,
              "missing_brokers": [{k: v for k, v in r.items() if k != "partitions"} for r in missing],
              "recovery": recovery, "preferred": preferred, "rebalance": rebalance["moves"],
              "balance_goals": goals, **trends,
              "failed_snapshots": [{"cluster_id": m["cluster_id"], "taken_at": m["taken_at"], "reason": m["failed"]}
                                   for m in failed]}

    def write() -> dict[str, Any]:
        from kafka_shell.pipeline import report
        (out / "tables").mkdir(parents=True, exist_ok=True)
        for name, rows in tables.items():
            (out / "tables" / f"{name}.json").write_text(json.dumps(rows, indent=1, default=str) + "\n")
        (out / "missing_brokers.json").write_text(json.dumps(missing, indent=1, default=str) + "\n")
        plans = write_plans(out / "plans", fleet.clusters, recovery, preferred, rebalance["plans"])
        summary = {
            "clusters": len(fleet.clusters), "snapshots": len(fleet.manifests), "failed_snapshots": len(failed),
            "partitions_latest": sum(h["partitions"] for h in latest_rows(health)),
            "offline_latest": sum(h["offline"] for h in latest_rows(health)),
            "missing_broker_ids": len(missing),  # a row per cluster and missing id
            "recovery_partitions": len(recovery), "preferred_partitions": len(preferred),
            "rebalance_moves": len(rebalance["moves"]), "controller_moves": len(trends["controller_moves"]),
            "plans": plans,
            "headline": derived.headline(fleet.clusters, tables),
            "commands": plan_commands(out / "plans", plans, small["brokers"], fleet.latest_at)}
        report.write(out / "report.html", tables, summary)
        summary["spark_work"] = dict(stages.counts)
        summary["cpu_seconds"] = {k: round(v, 1) for k, v in stages.cpu.items()}
        summary["seconds"] = round(time.perf_counter() - started, 1)
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        return summary
    return stages.run("outputs and report", write)


def latest_rows(health: list[dict]) -> list[dict]:
    last: dict[str, dict] = {}
    for h in health:
        if h["cluster_id"] not in last or h["taken_at"] > last[h["cluster_id"]]["taken_at"]:
            last[h["cluster_id"]] = h
    return list(last.values())


def _rows(df: Any) -> list[dict]:
    """A small result as plain rows, through Arrow (fast, and alike in classic Spark and Spark
    Connect); timestamps as UTC ISO text, like the manifests'."""
    rows = df.toArrow().to_pylist()
    for r in rows:
        for k, v in r.items():
            if isinstance(v, datetime.datetime):
                r[k] = (v if v.tzinfo else v.replace(tzinfo=datetime.UTC)).astimezone(datetime.UTC).isoformat()
    return rows


def _by_cluster(values: dict[str, Any], otherwise: Any) -> Any:
    """A column that is values[c] on the rows of cluster c (the clusters are few)."""
    from pyspark.sql import functions as F
    expr = None
    for c, v in sorted(values.items()):
        expr = F.when(F.col("cluster_id") == c, v) if expr is None else expr.when(F.col("cluster_id") == c, v)
    return otherwise if expr is None else expr.otherwise(otherwise)


def _is_in(column: Any, ids_by_cluster: dict[str, list[int]]) -> Any:
    """`column` is one of its cluster's ids (the ids are few: the brokers of a snapshot)."""
    from pyspark.sql import functions as F
    return _by_cluster({c: column.isin(ids) for c, ids in ids_by_cluster.items()}, F.lit(False))


class Fleet:
    """The snapshots as DataFrames: the small tables of all of them, and each cluster's latest
    partitions (the stages on the latest snapshot all read them)."""

    def __init__(self, spark: Any, manifests: list[dict]):
        self.spark = spark
        self.manifests = manifests
        latest: dict[str, dict] = {}
        for m in manifests:
            latest[m["cluster_id"]] = m  # sorted oldest first
        self.latest = list(latest.values())
        self.latest_at = {c: m["taken_at_ms"] for c, m in latest.items()}
        self.older = [m for m in manifests if latest[m["cluster_id"]] is not m]
        self.clusters = sorted(latest)
        # Small paths lists are listed on the driver; above Spark's threshold (32) it starts a job.
        spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", str(max(32, len(manifests) + 1)))
        # Only the columns the stages read. Not cached: the load and the plans each read it once,
        # and building a cache of list columns costs more than a second Parquet scan.
        self._latest_parts = self._read("partitions", self.latest).select(*PARTITION_COLUMNS)
        self.live: dict[str, list[int]] = {}  # the latest snapshot's live brokers, from small_tables
        self.live_at: dict[tuple[str, str], list[int]] = {}  # every snapshot's (cluster, ISO time), from small_tables

    def _read(self, name: str, manifests: Iterable[dict]) -> Any:
        paths = [f"{m['path']}/{name}.parquet" for m in manifests if schema.has_table(m, name)]
        if not paths:
            return self.spark.createDataFrame([], _spark_schema(name))
        return self.spark.read.schema(_spark_schema(name)).parquet(*paths)

    # -- small tables ------------------------------------------------------------------------------

    def small_tables(self) -> dict[str, list[dict]]:
        """cluster, brokers and log_dirs of every snapshot, in one job (one union of scans)."""
        from pyspark.sql import functions as F
        parts = {"cluster": self._read("cluster", self.manifests), "brokers": self._read("brokers", self.manifests),
                 "log_dirs": self._read("log_dirs", self.manifests)}
        union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True),
                       [df.withColumn("table", F.lit(name)) for name, df in parts.items()])
        out: dict[str, list[dict]] = {name: [] for name in parts}
        columns = {name: df.columns for name, df in parts.items()}
        for r in _rows(union):
            out[r["table"]].append({c: r[c] for c in columns[r["table"]]})
        for rows in out.values():
            rows.sort(key=lambda r: (r["cluster_id"], r["taken_at"], r.get("broker_id") or 0, r.get("log_dir") or ""))
        self.live = {c: [] for c in self.clusters}
        for b in self.in_latest(out["brokers"]):
            self.live[b["cluster_id"]].append(b["broker_id"])
        self.live_at = {(m["cluster_id"], _utc(m["taken_at_ms"]).isoformat()): [] for m in self.manifests}
        for b in out["brokers"]:
            self.live_at[(b["cluster_id"], b["taken_at"])].append(b["broker_id"])
        return out

    def in_latest(self, rows: list[dict]) -> list[dict]:
        """The rows of each cluster's latest snapshot."""
        latest = {(c, _utc(ms).isoformat()) for c, ms in self.latest_at.items()}
        return [r for r in rows if (r["cluster_id"], r["taken_at"]) in latest]

    # -- over all snapshots ------------------------------------------------------------------------

    def health(self) -> list[dict]:
        """Per cluster and snapshot: partitions, and those in each of kafka-topics' classes."""
        from pyspark.sql import functions as F
        df = self._counted_partitions(self.manifests)
        # Offline: leader -1 or a broker that snapshot's Metadata does not list. The brokers came
        # back with the small tables, so they are sets in the query, not a join (and its job): a
        # branch per cluster and set of live brokers (few: brokers seldom change between snapshots).
        times: dict[tuple[str, tuple[int, ...]], list[int]] = {}
        for m in self.manifests:
            ids = tuple(sorted(self.live_at.get((m["cluster_id"], _utc(m["taken_at_ms"]).isoformat()), [])))
            times.setdefault((m["cluster_id"], ids), []).append(m["taken_at_ms"])
        live = None
        for (cluster, ids), at in sorted(times.items()):
            when = (F.col("cluster_id") == cluster) & F.unix_millis("taken_at").isin(at)
            live = F.when(when, F.col("leader").isin(list(ids))) if live is None else live.when(when, F.col("leader").isin(list(ids)))
        offline = ~(live.otherwise(F.lit(False)) if live is not None else F.lit(False))
        n_isr, min_isr = F.col("isr_count"), F.coalesce("min_isr", F.lit(1))
        flags = {"under_replicated": n_isr < F.col("replica_count"), "under_min_isr": offline | (n_isr < min_isr),
                 "at_min_isr": n_isr == min_isr, "offline": offline, "not_preferred": F.col("leader") != F.col("preferred")}
        agg = df.groupBy(*KEY).agg(F.count(F.lit(1)).alias("partitions"),
                                   *[F.sum(flags[c].cast("int")).alias(c) for c in HEALTH])
        return sorted(_rows(agg), key=lambda r: (r["cluster_id"], r["taken_at"]))

    def _counted_partitions(self, manifests: list[dict]) -> Any:
        """These snapshots' partitions as KEY, leader and schema.DERIVED_PARTITION_COLUMNS:
        read from format 3 snapshots (int columns), counted from the lists and joined with the
        topics' min ISR in older ones."""
        from pyspark.sql import functions as F
        columns = [*KEY, "leader", *schema.DERIVED_PARTITION_COLUMNS]
        counted = [m for m in manifests if m.get("format", 1) >= schema.COUNTED_FORMAT]
        listed = [m for m in manifests if m.get("format", 1) < schema.COUNTED_FORMAT]
        df = self._read("partitions", counted).select(*columns)
        if listed:
            topics = self._read("topics", listed).select(*KEY, "topic", "min_isr")
            old = (self._read("partitions", listed).select(*KEY, "topic", "leader", "replicas", "isr")
                   .join(F.broadcast(topics), [*KEY, "topic"], "left")
                   .select(*KEY, "leader", F.size("replicas").alias("replica_count"), F.size("isr").alias("isr_count"),
                           F.try_element_at("replicas", F.lit(1)).alias("preferred"), "min_isr"))
            df = df.unionByName(old)
        return df

    def log_dir_bytes(self, log_dirs: list[dict]) -> list[dict]:
        """Per cluster, snapshot, broker and log dir: replicas and bytes, in each latest
        snapshot (the broker load's bytes) and in the older snapshots whose log dirs did not
        tell the bytes they use (brokers before DescribeLogDirs v4, format 1 snapshots): the
        disk forecast and the bytes over time fall back to the replicas' sizes there. Where
        the log dirs tell, the older replicas are not read at all (they are most of the data)."""
        from pyspark.sql import functions as F
        told = derived.used_bytes(log_dirs)
        untold = [m for m in self.older if (m["cluster_id"], _utc(m["taken_at_ms"]).isoformat()) not in told]
        columns = [*KEY, "broker_id", "size", "log_dir"]
        reps = self._read("replicas", untold).select(*columns).unionByName(self._read("replicas", self.latest).select(*columns))
        # Counts and sums only: a hash aggregate (a collected list here would make it an object
        # aggregate, which falls back to sorting every row past 128 groups).
        agg = reps.groupBy(*KEY, "broker_id", "log_dir").agg(F.count(F.lit(1)).alias("replicas"), F.sum("size").alias("bytes"))
        return sorted(_rows(agg), key=lambda r: (r["cluster_id"], r["taken_at"], r["broker_id"], r["log_dir"] or ""))

    def lag(self) -> list[dict]:
        """Per cluster, snapshot and group: the messages behind the log ends, over the
        partitions whose offsets the snapshot holds."""
        from pyspark.sql import functions as F
        ends = self._read("offsets", self.manifests).select(*KEY, "topic", "partition", "log_end_offset")
        committed = self._read("group_offsets", self.manifests)
        # Groups commit to a few topics: a topic range from the committed offsets' footers lets
        # the offsets' scan skip the row groups outside it (Parquet statistics; no data read).
        told = [m for m in self.manifests if m.get("rows", {}).get("group_offsets")]
        ranges = [schema.value_range(m, "group_offsets", "topic") for m in told]
        if told and None not in ranges:
            ends = ends.where(F.col("topic").between(min(r[0] for r in ranges if r), max(r[1] for r in ranges if r)))
        df = (committed.join(ends, [*KEY, "topic", "partition"])
              .withColumn("lag", F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0))))
        agg = df.groupBy(*KEY, "group").agg(F.sum("lag").alias("lag"), F.count(F.lit(1)).alias("partitions"))
        return sorted(_rows(agg), key=lambda r: (r["cluster_id"], r["group"], r["taken_at"]))

    # -- each cluster's latest snapshot ------------------------------------------------------------

    def load(self, brokers: list[dict], dirs: list[dict]) -> dict[str, list[dict]]:
        """Per broker (live, plus ids replicas name that no live broker has) and per rack, in
        each cluster's latest snapshot: replicas, leaders, bytes, and skew against the mean."""
        from pyspark.sql import functions as F
        parts = self._latest_parts
        held = parts.select("cluster_id", F.explode("replicas").alias("broker_id"),
                            F.lit(1).alias("replicas"), F.lit(0).alias("leaders"))
        led = parts.where("leader >= 0").select("cluster_id", F.col("leader").alias("broker_id"),
                                                F.lit(0).alias("replicas"), F.lit(1).alias("leaders"))
        counts = {(r["cluster_id"], r["broker_id"]): r for r in _rows(
            held.unionByName(led).groupBy("cluster_id", "broker_id").agg(
                F.sum("replicas").alias("replicas"), F.sum("leaders").alias("leaders")))}
        held_bytes: dict[tuple[str, int], int] = {}
        for d in self.in_latest(dirs):
            held_bytes[(d["cluster_id"], d["broker_id"])] = held_bytes.get((d["cluster_id"], d["broker_id"]), 0) + d["bytes"]
        return derived.load_tables(counts, self.in_latest(brokers), held_bytes)

    def marked_partitions(self) -> list[dict]:
        """The latest partitions that a plan or the KIP-426 table needs, marked: offline (the
        leader is no live broker), stuck (a replica on a broker that is not live), and
        preferred_ok (led by another replica while the first is live and in the ISR: a
        preferred election moves leadership back; anything else would fail with
        PREFERRED_LEADER_NOT_AVAILABLE)."""
        from pyspark.sql import functions as F
        first = F.try_element_at("replicas", F.lit(1))
        offline = ~_is_in(F.col("leader"), self.live)
        stuck = ~F.forall("replicas", lambda b: _is_in(b, self.live))
        preferred_ok = (~offline & (F.col("leader") != first) & F.array_contains("isr", first) & _is_in(first, self.live))
        df = (self._latest_parts.select(*PART, "leader", "replicas", "isr", "elr", offline.alias("offline"),
                                        stuck.alias("stuck"), preferred_ok.alias("preferred_ok"), first.alias("preferred"))
              .where("offline OR stuck OR preferred_ok"))
        return sorted(_rows(df), key=lambda r: (r["cluster_id"], r["topic"], r["partition"]))

    def missing_brokers(self, broker_load: list[dict], marked: list[dict]) -> list[dict]:
        """Broker ids that replicas name but no live broker has (KIP-426's missing ids), with
        the partitions each one affects, in each cluster's latest snapshot."""
        out = []
        for b in broker_load:
            if b["state"] != "missing":
                continue
            parts = [{"topic": r["topic"], "partition": r["partition"]} for r in marked
                     if r["cluster_id"] == b["cluster_id"] and b["broker_id"] in r["replicas"]]
            out.append({"cluster_id": b["cluster_id"], "broker_id": b["broker_id"],
                        "affected_partitions": len(parts), "partitions": parts})
        return out

    # -- plans -------------------------------------------------------------------------------------

    def recovery_plan(self, marked: list[dict]) -> list[dict]:
        """For each offline partition of each cluster's latest snapshot, the live replica the
        unclean-recovery rule picks (admin/recovery.best_replica): an eligible leader replica
        first, then the highest leader epoch, then the longest log, then the earlier replica in
        the assignment."""
        from kafka_shell.admin.recovery import Candidate, best_replica
        from pyspark.sql import functions as F
        offline = [p for p in marked if p["offline"]]
        if not offline:
            return []
        # The log ends (and leader epochs) live replicas of offline partitions told: a snapshot
        # records them only for those replicas, so they are few.
        ends = (self._read("replicas", self.latest).where(F.col("log_end_offset").isNotNull())
                .select("cluster_id", "topic", "partition", "broker_id", "log_end_offset",
                        F.coalesce("last_epoch", F.lit(-1)).alias("last_epoch")))
        told: dict[tuple[str, str, int], list[tuple[int, int, int]]] = {}
        for e in _rows(ends):
            told.setdefault((e["cluster_id"], e["topic"], e["partition"]), []).append(
                (e["last_epoch"], e["log_end_offset"], e["broker_id"]))
        plan = []
        for p in offline:
            live = set(self.live[p["cluster_id"]])
            candidates = {c[2]: c for c in told.get((p["cluster_id"], p["topic"], p["partition"]), []) if c[2] in live}
            broker = best_replica((Candidate(b, b in (p["elr"] or ()), epoch, end) for b, (epoch, end, _) in
                                   candidates.items()), p["replicas"])
            if broker is None:
                continue
            epoch, end, _ = candidates[broker]
            plan.append({"cluster_id": p["cluster_id"], "topic": p["topic"], "partition": p["partition"],
                         "designated_leader": broker, "last_epoch": epoch, "log_end_offset": end, "replicas": p["replicas"]})
        return plan

    def rebalance_plan(self, broker_load: list[dict]) -> dict[str, Any]:
        """The fewest replica moves that bring every live broker within one replica of the
        mean of its rack (of its cluster when brokers have no racks), moving replicas only
        between brokers of the same rack. Partitions with a replica on a missing broker stay
        (they are for KIP-426's replacement or the recovery plan). The targets come from the
        load per broker; Spark picks the replicas that leave (followers first, in a hash
        order) in one windowed query over the latest partitions."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        over, under = rebalance_targets(broker_load)
        if not over:
            return {"moves": [], "plans": {}}
        surplus_of = _by_cluster({c: F.try_element_at(F.create_map(*[F.lit(x) for b, (n, _) in sorted(bs.items()) for x in (b, n)]),
                                                      F.col("broker_id")) for c, bs in over.items()}, F.lit(None))
        movable = (self._latest_parts.where(F.forall("replicas", lambda b: _is_in(b, self.live)))
                   .select(*PART, "replicas", F.posexplode("replicas").alias("pos", "broker_id"))
                   .withColumn("surplus", surplus_of).where("surplus IS NOT NULL"))
        per_broker = Window.partitionBy("cluster_id", "broker_id").orderBy(
            (F.col("pos") == 0), F.xxhash64("topic", "partition"), "topic", "partition")
        # The literal bound lets Spark keep only the first rows of each broker before the shuffle.
        most = max(n for bs in over.values() for n, _ in bs.values())
        sheds = (movable.withColumn("rn", F.row_number().over(per_broker))
                 .where((F.col("rn") <= most) & (F.col("rn") <= F.col("surplus"))).drop("surplus")
                 .withColumn("leader", F.col("pos") == 0).drop("pos"))
        # The size of each leaving replica (the few rows left: Spark broadcasts them to the scan).
        sizes = self._read("replicas", self.latest).select(*PART, "broker_id", "size")
        sheds = sheds.join(sizes, [*PART, "broker_id"], "left")
        return match_moves(_rows(sheds), over, under)


def rebalance_targets(broker_load: list[dict]) -> tuple[dict[str, dict[int, tuple[int, str]]], dict[str, dict[int, tuple[int, str]]]]:
    """Per cluster, the live brokers above and below their target (broker -> (replicas to shed
    or take, rack group)). The target spreads a group's replicas evenly: the floor of the mean,
    plus one for the most loaded brokers while the remainder lasts (ties by broker id)."""
    live = [b for b in broker_load if b["state"] == "live"]
    racked = {c: all(b["rack"] is not None for b in live if b["cluster_id"] == c) for c in {b["cluster_id"] for b in live}}
    groups: dict[tuple[str, str], list[dict]] = {}
    for b in live:
        groups.setdefault((b["cluster_id"], b["rack"] if racked[b["cluster_id"]] else ""), []).append(b)
    over: dict[str, dict[int, tuple[int, str]]] = {}
    under: dict[str, dict[int, tuple[int, str]]] = {}
    for (cluster, grp), members in groups.items():
        members.sort(key=lambda b: (-b["replicas"], b["broker_id"]))
        total = sum(b["replicas"] for b in members)
        base, extra = divmod(total, len(members))
        for rank, b in enumerate(members):
            target = base + (rank < extra)
            if b["replicas"] > target:
                over.setdefault(cluster, {})[b["broker_id"]] = (b["replicas"] - target, grp)
            elif b["replicas"] < target:
                under.setdefault(cluster, {})[b["broker_id"]] = (target - b["replicas"], grp)
    return over, under


def match_moves(sheds: list[dict], over: dict[str, dict[int, tuple[int, str]]],
                under: dict[str, dict[int, tuple[int, str]]]) -> dict[str, Any]:
    """Pair the replicas that leave with the free slots of their rack group (the k-th leaver of
    a group, by broker then rank, takes the k-th slot, by round then broker), then apply the
    pairs (see `assign_moves`)."""
    leaving: dict[tuple[str, str], list[dict]] = {}
    for s in sorted(sheds, key=lambda s: (s["cluster_id"], s["broker_id"], s["rn"])):
        leaving.setdefault((s["cluster_id"], over[s["cluster_id"]][s["broker_id"]][1]), []).append(s)
    pairs = []
    for (cluster, grp), leavers in sorted(leaving.items()):
        free = {b: n for b, (n, g) in under.get(cluster, {}).items() if g == grp}
        slots = [b for k in range(1, max(free.values(), default=0) + 1) for b in sorted(free) if free[b] >= k]
        pairs += [{"cluster_id": cluster, "grp": grp, "topic": s["topic"], "partition": s["partition"],
                   "replicas": s["replicas"], "from": s["broker_id"], "to": to, "size": s.get("size") or 0,
                   "leader": bool(s.get("leader"))} for s, to in zip(leavers, slots)]
    return assign_moves(pairs)


def assign_moves(pairs: list[dict]) -> dict[str, Any]:
    """Apply the (from -> to) pairs, mending the few where `to` already holds a replica of that
    partition by swapping destinations within the same rack group; a pair that cannot be mended
    is dropped. Returns the moves (with the moved replica's size, and whether it led) and, per
    cluster, the new replica lists of the partitions that change."""
    by_group: dict[tuple[str, str], list[dict]] = {}
    for p in pairs:
        by_group.setdefault((p["cluster_id"], p["grp"]), []).append(p)
    current: dict[tuple[str, str, int], list[int]] = {}
    moves = []
    for group in by_group.values():
        for i, m in enumerate(group):
            key = (m["cluster_id"], m["topic"], m["partition"])
            reps = current.setdefault(key, list(m["replicas"]))
            if m["to"] in reps:
                for other in group[i + 1:]:
                    okey = (other["cluster_id"], other["topic"], other["partition"])
                    oreps = current.get(okey, other["replicas"])
                    if other["to"] not in reps and m["to"] not in oreps and okey != key:
                        m["to"], other["to"] = other["to"], m["to"]
                        break
                else:
                    continue
            reps[reps.index(m["from"])] = m["to"]
            moves.append({k: m.get(k) for k in ("cluster_id", "topic", "partition", "from", "to", "size", "leader")})
    plans: dict[str, dict[tuple[str, int], list[int]]] = {}
    changed = {(m["cluster_id"], m["topic"], m["partition"]) for m in moves}
    for key, reps in current.items():   # a partition whose pair was dropped keeps its replicas: no entry
        if key in changed:
            plans.setdefault(key[0], {})[(key[1], key[2])] = reps
    return {"moves": moves, "plans": plans}


def write_plans(root: Path, clusters: list[str], recovery: list[dict], preferred: list[dict],
                rebalance: dict[str, dict[tuple[str, int], list[int]]]) -> dict[str, list[str]]:
    """Each cluster's plans, in the JSON the consuming commands take (only plans with work)."""
    written: dict[str, list[str]] = {}
    for cluster in clusters:
        files: dict[str, Any] = {}
        rec = [r for r in recovery if r["cluster_id"] == cluster]
        if rec:
            files["recovery.json"] = {"partitions": [
                {"topic": r["topic"], "partition": r["partition"], "designatedLeader": r["designated_leader"]} for r in rec]}
            by_topic: dict[str, list[int]] = {}
            for r in rec:
                by_topic.setdefault(r["topic"], []).append(r["partition"])
            files["recovery_partitions.json"] = {"partitions": [
                {"topic": t, "partitions": ps} for t, ps in sorted(by_topic.items())]}
        pref = [r for r in preferred if r["cluster_id"] == cluster]
        if pref:
            files["preferred.json"] = {"partitions": [{"topic": r["topic"], "partition": r["partition"]} for r in pref]}
        moved = rebalance.get(cluster)
        if moved:
            files["rebalance.json"] = {"version": 1, "partitions": [
                {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
                for (t, p), r in sorted(moved.items())]}
        if files:
            (root / cluster).mkdir(parents=True, exist_ok=True)
            for name, body in files.items():
                (root / cluster / name).write_text(json.dumps(body, indent=1) + "\n")
            written[cluster] = sorted(files)
    return written


# Per plan file: the kafka-shell line that checks it (changes nothing) and the one that applies it.
PLAN_COMMANDS = {
    "recovery.json": ("elect-leaders --election-type designated --path-to-json-file {path} --dry-run",
                      "elect-leaders --election-type designated --path-to-json-file {path} --yes"),
    "recovery_partitions.json": ("unclean-recovery --path-to-json-file {path} --show-replica-info",
                                 "unclean-recovery --path-to-json-file {path} --automated-recovery --yes"),
    "preferred.json": ("elect-leaders --election-type preferred --path-to-json-file {path} --dry-run",
                       "elect-leaders --election-type preferred --path-to-json-file {path}"),
    "rebalance.json": ("reassign-partitions --execute --reassignment-json-file {path} --dry-run",
                       "reassign-partitions --execute --reassignment-json-file {path}"),
}


def plan_commands(root: Path, plans: dict[str, list[str]], brokers: list[dict],
                  latest_at: dict[str, int]) -> dict[str, dict[str, dict[str, str]]]:
    """Per cluster and plan file, the exact kafka-shell lines that check and apply it,
    bootstrapped from a live broker of the cluster's latest snapshot (the lowest id)."""
    import shlex
    out: dict[str, dict[str, dict[str, str]]] = {}
    for cluster, files in plans.items():
        at = _utc(latest_at[cluster]).isoformat()
        live = sorted((b["broker_id"], b["host"], b["port"]) for b in brokers
                      if b["cluster_id"] == cluster and b["taken_at"] == at)
        # One-shot form: global options, then --COMMAND and its options.
        prefix = f"kafka-shell --bootstrap-server {shlex.quote(f'{live[0][1]}:{live[0][2]}') if live else 'HOST:PORT'} --"
        out[cluster] = {}
        for f in [f for f in PLAN_COMMANDS if f in files]:  # the most urgent first
            path = shlex.quote(str((root / cluster / f).resolve()))
            check, apply = PLAN_COMMANDS[f]
            out[cluster][f] = {"check": prefix + check.format(path=path), "apply": prefix + apply.format(path=path)}
    return out


def _utc(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


def _spark_schema(name: str) -> Any:
    """The Spark schema of a snapshot table (from the Arrow one), so every file reads alike."""
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(schema.SCHEMAS[name])
