"""The fleet analysis on Spark (PySpark): reads every snapshot under a directory and writes
into an output directory

    tables/<name>.json      health, broker_load, rack_load, missing_brokers, controller_moves,
                            growth, lag (one JSON list of rows each)
    plans/<cluster>/        recovery.json (elect-leaders --election-type designated),
                            recovery_partitions.json (unclean-recovery --path-to-json-file),
                            preferred.json (elect-leaders --election-type preferred),
                            rebalance.json (reassign-partitions --execute)
    report.html             the self-contained report (see `report`)
    summary.json

Everything is computed with Spark DataFrame functions (no Python UDFs); only the results,
which are small (a row per cluster and snapshot, per broker, per planned partition), come back
to the driver. Health classes follow kafka-topics' filters; the recovery plan follows the
unclean-recovery rule (highest leader epoch, then longest log, then the earlier replica); the
rebalance moves the fewest replicas that bring every broker within one replica of its rack's
mean, only inside a rack (so rack spread never gets worse).
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from kafka_shell.pipeline import schema

KEY = ["cluster_id", "taken_at"]
PART = ["cluster_id", "topic", "partition"]
HEALTH = ["under_replicated", "under_min_isr", "at_min_isr", "offline", "not_preferred"]


class NoSnapshots(ValueError):
    """The directory holds no complete snapshot."""


def spark_session(master: str | None = None, conf: dict[str, str] | None = None) -> Any:
    """The SparkSession (an existing one is reused): local[*] unless `master`; no UI, driver
    on loopback, few shuffle partitions (the results are small)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.appName("kafka-shell analyze").master(master or "local[*]")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "8").config("spark.sql.session.timeZone", "UTC"))
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Stages:
    """One progress line per stage: `analyze [3/9] broker and rack load: 1.2 s`."""

    def __init__(self, out: IO[str] | None, total: int):
        self.out, self.total, self.n = out, total, 0

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        self.n += 1
        t0 = time.perf_counter()
        value = fn()
        if self.out is not None:
            self.out.write(f"analyze [{self.n}/{self.total}] {name}: {time.perf_counter() - t0:.1f} s\n")
            self.out.flush()
        return value


def run(root: Path, out: Path, master: str | None = None, conf: dict[str, str] | None = None,
        progress: IO[str] | None = None, spark: Any = None) -> dict[str, Any]:
    """Analyze the snapshots under `root` into `out`; returns the summary (also summary.json)."""
    manifests = schema.find_snapshots(root)
    if not manifests:
        raise NoSnapshots(f"No snapshot under {root}: take some with `snapshot --output-dir {root}` "
                          "or generate a fleet with python -m kafka_shell.pipeline.synth")
    stages = Stages(progress, 8 + (spark is None))
    started = time.perf_counter()
    spark = spark or stages.run("Spark session", lambda: spark_session(master, conf))
    fleet = Fleet(spark, manifests)
    try:
        return _analyze(fleet, stages, out, started)
    finally:
        fleet.close()


def _analyze(fleet: Fleet, stages: Stages, out: Path, started: float) -> dict[str, Any]:
    health = stages.run("health per cluster and snapshot", fleet.health)
    brokers, racks = stages.run("broker and rack load", fleet.load)
    missing = stages.run("KIP-426 missing broker ids", fleet.missing_brokers)
    recovery = stages.run("recovery plan", fleet.recovery_plan)
    preferred = stages.run("preferred-election plan", fleet.preferred_plan)
    rebalance = stages.run("rebalance plan", fleet.rebalance_plan)
    trends = stages.run("trends", lambda: fleet.trends(health))
    tables = {"health": health, "broker_load": brokers, "rack_load": racks,
              "missing_brokers": [{k: v for k, v in r.items() if k != "partitions"} for r in missing],
              "recovery": recovery, "preferred": preferred, "rebalance": rebalance["moves"], **trends}

    def write() -> dict[str, Any]:
        from kafka_shell.pipeline import report
        (out / "tables").mkdir(parents=True, exist_ok=True)
        for name, rows in tables.items():
            (out / "tables" / f"{name}.json").write_text(json.dumps(rows, indent=1, default=str) + "\n")
        (out / "missing_brokers.json").write_text(json.dumps(missing, indent=1, default=str) + "\n")
        plans = write_plans(out / "plans", fleet.clusters, recovery, preferred, rebalance["plans"])
        summary = {
            "clusters": len(fleet.clusters), "snapshots": len(fleet.manifests),
            "partitions_latest": sum(h["partitions"] for h in latest_rows(health)),
            "offline_latest": sum(h["offline"] for h in latest_rows(health)),
            "missing_broker_ids": len(missing),  # a row per cluster and missing id
            "recovery_partitions": len(recovery), "preferred_partitions": len(preferred),
            "rebalance_moves": len(rebalance["moves"]), "controller_moves": len(trends["controller_moves"]),
            "plans": plans}
        report.write(out / "report.html", tables, summary)
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


def _growth(rows: list[dict], key: tuple[str, ...], values: tuple[str, ...]) -> list[dict]:
    """First and last value of each series (rows sorted by time within a key) and the change."""
    series: dict[tuple, list[dict]] = {}
    for r in rows:
        series.setdefault(tuple(r[k] for k in key), []).append(r)
    out = []
    for k, rs in sorted(series.items()):
        rs.sort(key=lambda r: r["taken_at"])
        row: dict[str, Any] = {**dict(zip(key, k)), "first": rs[0]["taken_at"], "last": rs[-1]["taken_at"]}
        for v in values:
            row.update({f"{v}_first": rs[0][v], f"{v}_last": rs[-1][v], f"{v}_growth": rs[-1][v] - rs[0][v]})
        out.append(row)
    return out


def _rows(df: Any) -> list[dict]:
    """A small result as plain rows; timestamps as UTC ISO text, like the manifests' (PySpark
    gives them naive, in this process's local time)."""
    rows = []
    for r in df.collect():
        d = r.asDict(recursive=True)
        rows.append({k: (v.astimezone(datetime.UTC).isoformat() if isinstance(v, datetime.datetime) else v)
                     for k, v in d.items()})
    return rows


class Fleet:
    """The snapshots as DataFrames: all of them, or each cluster's latest only."""

    def __init__(self, spark: Any, manifests: list[dict]):
        self.spark = spark
        self.manifests = manifests
        latest: dict[str, dict] = {}
        for m in manifests:
            latest[m["cluster_id"]] = m  # sorted oldest first
        self.latest = list(latest.values())
        self.clusters = sorted(latest)
        self._latest: dict[str, Any] = {}

    def close(self) -> None:
        for df in self._latest.values():
            df.unpersist()
        self._latest.clear()

    def table(self, name: str, latest: bool = False) -> Any:
        """A table over every snapshot, or over each cluster's latest one (cached: most
        stages read those again)."""
        if latest and name in self._latest:
            return self._latest[name]
        chosen = self.latest if latest else self.manifests
        df = self.spark.read.schema(_spark_schema(name)).parquet(*[f"{m['path']}/{name}.parquet" for m in chosen])
        if latest:
            df = self._latest[name] = df.cache()
        return df

    def _live(self, latest: bool = False) -> Any:
        from pyspark.sql import functions as F
        return self.table("brokers", latest).groupBy(*KEY).agg(F.collect_set("broker_id").alias("live"))

    def _classified(self, latest: bool = False) -> Any:
        """Partitions with their health classes (kafka-topics' filters)."""
        from pyspark.sql import functions as F
        parts = self.table("partitions", latest)
        topics = self.table("topics", latest).select(*KEY, "topic", "min_isr")
        df = (parts.join(F.broadcast(self._live(latest)), KEY, "left").join(F.broadcast(topics), [*KEY, "topic"], "left")
              .withColumn("min_isr", F.coalesce("min_isr", F.lit(1)))
              .withColumn("live", F.coalesce("live", F.array().cast("array<int>"))))
        offline = (F.col("leader") < 0) | ~F.array_contains("live", F.col("leader"))
        return (df.withColumn("offline", offline)
                .withColumn("under_replicated", F.size("isr") < F.size("replicas"))
                .withColumn("under_min_isr", offline | (F.size("isr") < F.col("min_isr")))
                .withColumn("at_min_isr", F.size("isr") == F.col("min_isr"))
                .withColumn("not_preferred", F.col("leader") != F.element_at("replicas", 1)))

    # -- health ----------------------------------------------------------------------------------

    def health(self) -> list[dict]:
        from pyspark.sql import functions as F
        df = self._classified()
        agg = df.groupBy(*KEY).agg(F.count(F.lit(1)).alias("partitions"),
                                   *[F.sum(F.col(c).cast("int")).alias(c) for c in HEALTH])
        return _rows(agg.orderBy(*KEY))

    # -- load ------------------------------------------------------------------------------------

    def load(self) -> tuple[list[dict], list[dict]]:
        """Per broker (live, plus ids replicas name that no live broker has) and per rack, in
        each cluster's latest snapshot: replicas, leaders, bytes, and skew against the mean."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        parts = self.table("partitions", True)
        replicas = parts.select("cluster_id", F.explode("replicas").alias("broker_id")).groupBy(
            "cluster_id", "broker_id").agg(F.count(F.lit(1)).alias("replicas"))
        leaders = parts.where("leader >= 0").groupBy("cluster_id", F.col("leader").alias("broker_id")).agg(
            F.count(F.lit(1)).alias("leaders"))
        sizes = self.table("replicas", True).groupBy("cluster_id", "broker_id").agg(F.sum("size").alias("bytes"))
        brokers = self.table("brokers", True).select("cluster_id", "broker_id", "rack", "state")
        df = (brokers.join(replicas, ["cluster_id", "broker_id"], "full")
              .join(leaders, ["cluster_id", "broker_id"], "left").join(sizes, ["cluster_id", "broker_id"], "left")
              .fillna(0, ["replicas", "leaders", "bytes"])
              .withColumn("state", F.coalesce("state", F.lit("missing"))))
        live = Window.partitionBy("cluster_id")
        per_broker = df
        for c in ("replicas", "leaders", "bytes"):
            mean = F.avg(F.when(F.col("state") == "live", F.col(c))).over(live)
            per_broker = per_broker.withColumn(f"{c}_skew", F.when(mean > 0, F.round(F.col(c) / mean - 1, 4)))
        by_rack = (df.where("state = 'live'").groupBy("cluster_id", F.coalesce("rack", F.lit("(none)")).alias("rack"))
                   .agg(F.count(F.lit(1)).alias("brokers"), F.sum("replicas").alias("replicas"),
                        F.sum("leaders").alias("leaders"), F.sum("bytes").alias("bytes")))
        for c in ("replicas", "leaders", "bytes"):
            # Skew of a rack's load per broker against the cluster's load per broker.
            per = F.col(c) / F.col("brokers")
            mean = F.sum(c).over(live) / F.sum("brokers").over(live)
            by_rack = by_rack.withColumn(f"{c}_skew", F.when(mean > 0, F.round(per / mean - 1, 4)))
        return (_rows(per_broker.orderBy("cluster_id", "broker_id")),
                _rows(by_rack.orderBy("cluster_id", "rack")))

    # -- KIP-426 -----------------------------------------------------------------------------------

    def missing_brokers(self) -> list[dict]:
        """Broker ids that replicas name but no live broker has (KIP-426's missing ids), with
        the partitions each one affects, in each cluster's latest snapshot."""
        from pyspark.sql import functions as F
        parts = self.table("partitions", True)
        live = self.table("brokers", True).select("cluster_id", "broker_id")
        named = parts.select("cluster_id", "topic", "partition", F.explode("replicas").alias("broker_id"))
        gone = named.join(live, ["cluster_id", "broker_id"], "left_anti")
        agg = gone.groupBy("cluster_id", "broker_id").agg(
            F.count(F.lit(1)).alias("affected_partitions"),
            F.sort_array(F.collect_list(F.struct("topic", "partition"))).alias("partitions"))
        return _rows(agg.orderBy("cluster_id", "broker_id"))

    # -- trends ------------------------------------------------------------------------------------

    def trends(self, health: list[dict]) -> dict[str, list[dict]]:
        """Across snapshots: controller moves (from, to, when), bytes and partitions per
        cluster over time and their growth, consumer lag per group over time and its growth."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        order = Window.partitionBy("cluster_id").orderBy("taken_at")
        cluster = self.table("cluster").withColumn("from", F.lag("controller_id").over(order))
        moves = cluster.where(F.col("from").isNotNull() & (F.col("from") != F.col("controller_id"))).select(
            "cluster_id", F.col("taken_at").alias("when"), "from", F.col("controller_id").alias("to"),
            F.col("controller_epoch").alias("epoch"))
        size = _rows(self.table("replicas").groupBy(*KEY).agg(F.sum("size").alias("bytes")).orderBy(*KEY))
        parts = {(h["cluster_id"], h["taken_at"]): h["partitions"] for h in health}
        over_time = [{**r, "partitions": parts.get((r["cluster_id"], r["taken_at"]), 0)} for r in size]
        lag = (self.table("offsets").join(F.broadcast(self.table("group_offsets")), [*KEY, "topic", "partition"])
               .withColumn("lag", F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0)))
               .groupBy(*KEY, "group").agg(F.sum("lag").alias("lag"), F.count(F.lit(1)).alias("partitions")))
        lag_rows = _rows(lag.orderBy("cluster_id", "group", "taken_at"))
        return {"controller_moves": _rows(moves.orderBy("cluster_id", "when")),
                "controller_over_time": _rows(cluster.select(*KEY, "controller_id", "controller_epoch").orderBy(*KEY)),
                "size_over_time": over_time,
                "growth": _growth(over_time, ("cluster_id",), ("partitions", "bytes")),
                "lag_over_time": lag_rows, "lag_growth": _growth(lag_rows, ("cluster_id", "group"), ("lag",))}

    # -- plans -------------------------------------------------------------------------------------

    def recovery_plan(self) -> list[dict]:
        """For each offline partition of each cluster's latest snapshot, the live replica the
        unclean-recovery rule picks: highest leader epoch, then longest log, then the earlier
        replica in the assignment."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        offline = self._classified(True).where("offline").select(*PART, "replicas", "live")
        reps = self.table("replicas", True).where("log_end_offset IS NOT NULL").select(
            *PART, "broker_id", "log_end_offset", F.coalesce("last_epoch", F.lit(-1)).alias("last_epoch"))
        df = (offline.join(reps, PART).where(F.array_contains("live", F.col("broker_id")))
              .withColumn("position", F.array_position("replicas", F.col("broker_id"))))
        best = Window.partitionBy(*PART).orderBy(F.desc("last_epoch"), F.desc("log_end_offset"), "position")
        chosen = df.withColumn("rank", F.row_number().over(best)).where("rank = 1").select(
            *PART, F.col("broker_id").alias("designated_leader"), "last_epoch", "log_end_offset", "replicas")
        return _rows(chosen.orderBy(*PART))

    def preferred_plan(self) -> list[dict]:
        """Partitions led by another replica while the preferred one (the first) is live and in
        the ISR: a preferred election moves leadership back (anything else would fail with
        PREFERRED_LEADER_NOT_AVAILABLE)."""
        from pyspark.sql import functions as F
        df = self._classified(True).where("NOT offline AND not_preferred")
        first = F.element_at("replicas", 1)
        df = df.where(F.array_contains("isr", first) & F.array_contains("live", first))
        return _rows(df.select(*PART, "leader", first.alias("preferred")).orderBy(*PART))

    def rebalance_plan(self) -> dict[str, Any]:
        """The fewest replica moves that bring every live broker within one replica of the
        mean of its rack (of its cluster when brokers have no racks), moving replicas only
        between brokers of the same rack. Partitions with a replica on a missing broker stay
        (they are for KIP-426's replacement or the recovery plan)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        parts = self.table("partitions", True).select(*PART, "replicas")
        brokers = self.table("brokers", True).select("cluster_id", "broker_id", "rack")
        racked = brokers.groupBy("cluster_id").agg(
            (F.count(F.lit(1)) == F.count("rack")).alias("all_racked"))
        brokers = brokers.join(racked, "cluster_id").withColumn(
            "grp", F.when(F.col("all_racked"), F.col("rack")).otherwise(F.lit("")))
        reps = parts.select(*PART, "replicas", F.posexplode("replicas").alias("pos", "broker_id"))
        placed = reps.join(F.broadcast(brokers.select("cluster_id", "broker_id", "grp")), ["cluster_id", "broker_id"], "left")
        stuck = placed.where("grp IS NULL").select(*PART).distinct()
        placed = placed.where("grp IS NOT NULL")
        load = (brokers.join(placed.groupBy("cluster_id", "broker_id").agg(F.count(F.lit(1)).alias("load")),
                             ["cluster_id", "broker_id"], "left").fillna(0, ["load"]))
        group = Window.partitionBy("cluster_id", "grp")
        ranked = (load.withColumn("total", F.sum("load").over(group)).withColumn("n", F.count(F.lit(1)).over(group))
                  .withColumn("rank", F.row_number().over(group.orderBy(F.desc("load"), "broker_id")) - 1))
        target = F.floor(F.col("total") / F.col("n")) + (F.col("rank") < F.col("total") % F.col("n")).cast("int")
        ranked = ranked.withColumn("target", target.cast("int"))
        over = ranked.where("load > target").select("cluster_id", "grp", "broker_id",
                                                    (F.col("load") - F.col("target")).alias("surplus"))
        under = ranked.where("load < target").select("cluster_id", "grp", "broker_id",
                                                     (F.col("target") - F.col("load")).alias("deficit"))
        # Replicas leaving: followers first (a preferred leader stays), in a hash order.
        movable = (placed.join(F.broadcast(over), ["cluster_id", "grp", "broker_id"])
                   .join(F.broadcast(stuck), PART, "left_anti"))
        per_broker = Window.partitionBy("cluster_id", "broker_id").orderBy(
            (F.col("pos") == 0), F.xxhash64("topic", "partition"), "topic", "partition")
        sheds = movable.withColumn("rn", F.row_number().over(per_broker)).where("rn <= surplus")
        sheds = sheds.withColumn("idx", F.row_number().over(group.orderBy("broker_id", "rn")))
        slots = under.select("cluster_id", "grp", "broker_id", F.explode(F.sequence(F.lit(1), "deficit")).alias("k"))
        slots = slots.withColumn("idx", F.row_number().over(group.orderBy("k", "broker_id"))).select(
            "cluster_id", "grp", "idx", F.col("broker_id").alias("to"))
        moves = sheds.join(slots, ["cluster_id", "grp", "idx"]).select(
            *PART, "grp", "replicas", F.col("broker_id").alias("from"), "to")
        return assign_moves(_rows(moves.orderBy("cluster_id", "grp", "idx")))


def assign_moves(pairs: list[dict]) -> dict[str, Any]:
    """Apply the (from -> to) pairs Spark matched, mending the few where `to` already holds a
    replica of that partition by swapping destinations within the same rack group; a pair that
    cannot be mended is dropped. Returns the moves and, per cluster, the new replica lists."""
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
            moves.append({k: m[k] for k in ("cluster_id", "topic", "partition", "from", "to")})
    plans: dict[str, dict[tuple[str, int], list[int]]] = {}
    for (cluster, topic, partition), reps in current.items():
        plans.setdefault(cluster, {})[(topic, partition)] = reps
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


def _spark_schema(name: str) -> Any:
    """The Spark schema of a snapshot table (from the Arrow one), so every file reads alike."""
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(schema.SCHEMAS[name])
