"""The admin layer's targets, side by side in one run (issue 19); prints figures and ratios.

    .venv/bin/python bench/bench_admin.py [--shell PATH] [--baseline-shell PATH] [--runs N]
                                          [--no-real] [--real-group] [--snapshot-only] [--snapshot-partitions N]
                                          [--real-snapshot-partitions N] [--as-installed REV]

1. one-shot `--command list-topics` against a bare confluent-kafka `list_topics` script (the same
   Python, the same cluster, runs interleaved so both see the same machine load): against a
   `kafka-shell sandbox` server and against real Apache Kafka 4.x (tests/real_kafka.py).
   Target: at most 1.0x.
2. one-shot `describe-group` of a group with committed offsets on 10,000 partitions (sandbox;
   with --real-group on real Kafka too). Target: under 0.3 s.
3. one-shot `snapshot` of a sandbox holding --snapshot-partitions partitions (100,000; each
   shell against a sandbox server of its own, so that the server's CPU compares too), and of
   real Kafka holding --real-snapshot-partitions (10,000: they get 1 GB heaps, as the harness's
   320 MB run out of memory at 10,000; at 20,000 each broker's open files for its replicas pass a
   20,000-descriptor limit (`ulimit -n`) and it answers KAFKA_STORAGE_ERROR).
   Target: under 3 s. Real Kafka runs with the JVM options of its own start script
   (kafka-server-start.sh), as operators run it (--harness-jvm: the test harness's, which start
   faster and answer slower). The snapshot needs pyarrow: with --as-installed it runs in venvs with the
   pipeline extra, beside the ones without it that time start-up.

--as-installed REV does that for this tree and for revision REV beside it.

Each figure is the median wall time of --runs processes, beside the median CPU time (user +
system) of the shell's process, which the machine's other load does not inflate. With
--baseline-shell (another kafka-shell, e.g. one installed from main) each shell figure has that
shell's beside it. Each title says the share of the machine's CPU time the VM's host took for
others (steal) while it was measured: more than a few percent, and the figures come from a machine
that is not quiet. Measure start-up in a venv without the test extra, as users install it
(../shared/KIO_NOTES.md): `python3 -m venv /tmp/ks && /tmp/ks/bin/pip install . && bench/bench_admin.py
--shell /tmp/ks/bin/kafka-shell`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BARE = """
from confluent_kafka.admin import AdminClient
md = AdminClient({"bootstrap.servers": %r}).list_topics(timeout=10)
for name in sorted(md.topics):
    t = md.topics[name]
    print(name, len(t.partitions), len(next(iter(t.partitions.values())).replicas) if t.partitions else 0)
"""


def timed(args: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall, CPU of the child) of one process; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"{' '.join(args[:4])}... failed: {p.stderr.strip()[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def python_of(shell: str) -> str:
    return str(Path(shell).parent / "python")


SERVER: dict[str, int] = {}   # bootstrap -> pid of the sandbox server serving it


@contextlib.contextmanager
def sandbox_server(shell: str, brokers: int = 3) -> Iterator[str]:
    """`kafka-shell sandbox` in its own process (as a user's cluster would be); its bootstrap."""
    p = subprocess.Popen([shell, "sandbox", "--brokers", str(brokers)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        bootstrap = p.stdout.readline().strip().partition("=")[2]  # type: ignore[union-attr]
        SERVER[bootstrap] = p.pid
        yield bootstrap
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(60)


def server_cpu(bootstrap: str) -> float:
    """CPU seconds the sandbox server serving `bootstrap` has used (0 for other clusters)."""
    pid = SERVER.get(bootstrap)
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class Shells:
    """The shell measured, and the baseline shell beside it when given."""

    def __init__(self, shell: str, baseline: str | None, runs: int):
        self.shells = {"kafka-shell": shell, **({"baseline": baseline} if baseline else {})}
        self.runs = runs
        self.served: dict[str, float] = {}   # the sandbox server's CPU per run, of the last line measured
        self.stolen: float | None = None     # the share of CPU time the VM's host took while it was measured

    def line(self, bootstrap: str | dict[str, str], line: str, *extra: str, runs: int | None = None,
             beside: dict[str, list[str]] | None = None) -> dict[str, tuple[float, float]]:
        """Each shell's figures of `line`, against `bootstrap` (or each against its own cluster),
        and those of the commands `beside` it (name -> argv), run in turn with the shells."""
        clusters = bootstrap if isinstance(bootstrap, dict) else dict.fromkeys(self.shells, bootstrap)
        commands = {name: [shell, "--bootstrap-server", clusters[name], *extra, "--command", line]
                    for name, shell in self.shells.items()} | (beside or {})
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
        served: dict[str, list[float]] = {k: [] for k in commands}
        began = cpu_times()
        for _ in range(runs or self.runs):  # interleaved: every command sees the same load
            for name, argv in commands.items():
                before = server_cpu(clusters.get(name, ""))
                samples[name].append(timed(argv))
                served[name].append(server_cpu(clusters.get(name, "")) - before)
        self.served = {k: statistics.median(v) for k, v in served.items()}
        self.stolen = stolen_since(began)
        return {k: medians(v) for k, v in samples.items()}

    def setup(self, bootstrap: str, *lines: str) -> None:
        self.run_script(self.shells["kafka-shell"], bootstrap, *lines)

    @staticmethod
    def run_script(shell: str, bootstrap: str, *lines: str) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".ksh") as script:
            script.write("".join(line + "\n" for line in lines))
            script.flush()
            timed([shell, "--bootstrap-server", bootstrap, "--timeout", "120", "--file", script.name, "--quiet"])


def cpu_times() -> list[int]:
    """The machine's CPU time so far, by kind (/proc/stat: user, nice, system, idle, iowait, irq,
    softirq, steal, ...); empty where there is no /proc."""
    try:
        return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return []


def stolen_since(began: list[int]) -> float | None:
    """The share of CPU time since `began` that the host of this VM gave to others (steal): the
    figures of a run in which it is more than a few percent come from a machine that is not quiet."""
    now = cpu_times()
    if len(began) < 8 or len(now) < 8 or sum(now) == sum(began):
        return None
    return (now[7] - began[7]) / (sum(now[:8]) - sum(began[:8]))


def report(title: str, figures: dict[str, tuple[float, float]], goal: str, ok: bool,
           bare: tuple[float, float] | None = None, served: dict[str, float] | None = None,
           stolen: float | None = None) -> None:
    print(title + ("" if stolen is None else f"; {stolen:.1%} of the CPU time stolen by the VM's host"))
    for name, (wall, cpu) in figures.items():
        ratio = f"; {wall / bare[0]:.2f}x wall, {cpu / bare[1]:.2f}x CPU of the bare script" if bare else ""
        server = f" (the sandbox server: {served[name] * 1000:.0f} ms CPU)" if served and served.get(name) else ""
        print(f"  {name:<12} {wall * 1000:7.0f} ms wall, {cpu * 1000:6.0f} ms CPU{ratio}{server}")
    if bare:
        print(f"  {'bare script':<12} {bare[0] * 1000:7.0f} ms wall, {bare[1] * 1000:6.0f} ms CPU")
    print(f"  target: {goal}: {'ok' if ok else 'MISSED'}", flush=True)


def list_topics(shells: Shells, bootstrap: str, where: str) -> None:
    shells.setup(bootstrap, *(f"create-topic --topic bench-{i} --partitions 3 --replication-factor 1"
                              f" --if-not-exists" for i in range(20)))
    python = python_of(shells.shells["kafka-shell"])
    figures = shells.line(bootstrap, "list-topics", beside={"bare script": [python, "-c", BARE % bootstrap]})
    bare = figures.pop("bare script")
    ours = figures["kafka-shell"]
    report(f"one-shot list-topics against {where} (median of {shells.runs})", figures,
           "at most 1.0x the bare confluent-kafka script's CPU", ours[1] <= bare[1], bare, stolen=shells.stolen)


def describe_group(shells: Shells, bootstrap: str, where: str, partitions: int = 10_000) -> None:
    # Two topics of half each: Kafka's controller refuses a request of 10,000 partition records and
    # more (QuorumController's MAX_RECORDS_PER_USER_OP counts the topic's own record too).
    half = partitions // 2
    shells.setup(bootstrap, *(f"create-topic --topic group-{t} --partitions {half} --replication-factor 1 --if-not-exists"
                              for t in "ab"),
                 "reset-offsets --group bench --topic group-a --topic group-b --to-latest --execute --yes")
    figures = shells.line(bootstrap, "describe-group bench")
    report(f"one-shot describe-group of a group over {partitions:,} partitions, {where} "
           f"(median of {shells.runs})", figures, "under 0.3 s", figures["kafka-shell"][0] < 0.3,
           served=shells.served, stolen=shells.stolen)


def snapshot(shells: Shells, bootstrap: str | dict[str, str], where: str, partitions: int, replication: int = 3) -> None:
    """`bootstrap`: one cluster for every shell, or each shell's own (its own sandbox server)."""
    clusters = bootstrap if isinstance(bootstrap, dict) else dict.fromkeys(shells.shells, bootstrap)
    per_topic = 5_000   # KRaft bounds a request to 10,000 records: the topic's own and one per partition
    for cluster in set(clusters.values()):
        shells.setup(cluster, *(f"create-topic --topic snap-{i:03d} --partitions {min(per_topic, partitions - i * per_topic)}"
                                f" --replication-factor {replication} --if-not-exists" for i in range(-(-partitions // per_topic))))
    runs = max(1, min(shells.runs, 3))
    with tempfile.TemporaryDirectory() as out:
        line = f"snapshot --output-dir {out}"
        for name, cluster in clusters.items():
            settled(shells.shells[name], cluster, line)
        figures = shells.line(clusters, line, "--timeout", "60", runs=runs)
    report(f"one-shot snapshot of {where} of {partitions:,} partitions (3 brokers, RF {replication}; median of {runs})",
           figures, "under 3 s", figures["kafka-shell"][0] < 3, served=shells.served, stolen=shells.stolen)


def settled(shell: str, bootstrap: str, line: str, within: float = 600, in_a_row: int = 3) -> None:
    """Wait until `line` succeeds `in_a_row` times running: real Kafka's brokers take a while to
    lead 10,000s of partitions just made (NOT_LEADER_OR_FOLLOWER until then)."""
    give_up = time.monotonic() + within
    done = 0
    while done < in_a_row:
        p = subprocess.run([shell, "--bootstrap-server", bootstrap, "--timeout", "60", "--command", line],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        done = done + 1 if p.returncode == 0 else 0
        if not done:
            if time.monotonic() > give_up:
                raise SystemExit(f"{line} still fails after {within:.0f} s: {p.stderr.strip()[-500:]}")
            time.sleep(10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shell", default=str(ROOT / ".venv" / "bin" / "kafka-shell"))
    p.add_argument("--baseline-shell", default=None)
    p.add_argument("--as-installed", metavar="REV", default=None,
                   help="measure this tree and revision REV (e.g. main~1) each pip-installed as a user installs "
                        "them (bench/user_install.py), instead of --shell and --baseline-shell")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--no-real", action="store_true", help="skip real Apache Kafka")
    p.add_argument("--snapshot-only", action="store_true", help="only the snapshots (no list-topics, describe-group)")
    p.add_argument("--real-group", action="store_true", help="describe-group on real Kafka too (10,000 partitions)")
    p.add_argument("--harness-jvm", action="store_true",
                   help="run real Kafka with the test harness's JVM options (small heaps, first JIT tier only) "
                        "instead of those of Kafka's start script")
    p.add_argument("--snapshot-partitions", type=int, default=100_000, help="0 skips the snapshot")
    p.add_argument("--real-snapshot-partitions", type=int, default=10_000,
                   help="the snapshot of real Kafka (its brokers lead 100,000 new partitions too slowly for a "
                        "bench); 0 skips it")
    args = p.parse_args()
    # snapshot needs pyarrow (the pipeline extra); a user's shell alone has none
    snapshot_shell, snapshot_baseline = args.shell, args.baseline_shell
    if args.as_installed:
        from bench.user_install import installed, revision
        baseline = revision(args.as_installed)
        args.shell, args.baseline_shell = str(installed(ROOT)), str(installed(baseline, "baseline"))
        if args.snapshot_partitions or args.real_snapshot_partitions:
            snapshot_shell = str(installed(ROOT, extra="pipeline"))
            snapshot_baseline = str(installed(baseline, "baseline", extra="pipeline"))
    os.environ.setdefault("KAFKA_SHELL_DATA_DIR", tempfile.mkdtemp(prefix="bench-admin-"))
    shells = Shells(args.shell, args.baseline_shell, args.runs)
    snapshots = Shells(snapshot_shell, snapshot_baseline, args.runs)
    print(f"kafka-shell: {args.shell}" + (f"; baseline: {args.baseline_shell}" if args.baseline_shell else ""),
          flush=True)
    if snapshot_shell != args.shell:
        print(f"snapshot (with the pipeline extra): {snapshot_shell}; baseline: {snapshot_baseline}", flush=True)
    if not args.snapshot_only:
        with sandbox_server(args.shell) as bootstrap:
            list_topics(shells, bootstrap, "a kafka-shell sandbox server")
            describe_group(shells, bootstrap, "sandbox")
    if not args.no_real and not (args.snapshot_only and not args.real_snapshot_partitions):
        from tests.real_kafka import KAFKA_4, RealKafka
        # The harness's 320 MB heaps run out of memory holding 10,000 partitions (RF 3)
        heap = "1g" if args.real_snapshot_partitions else "320m"
        with RealKafka(KAFKA_4, controllers=1, brokers=3, heap=heap, kafka_jvm=not args.harness_jvm) as kafka:
            if not args.snapshot_only:
                list_topics(shells, kafka.bootstrap, f"real Apache Kafka {KAFKA_4} (KRaft, 3 brokers)")
            if args.real_group and not args.snapshot_only:
                describe_group(shells, kafka.bootstrap, f"real Apache Kafka {KAFKA_4}")
            if args.real_snapshot_partitions:
                snapshot(snapshots, kafka.bootstrap, f"real Apache Kafka {KAFKA_4}", args.real_snapshot_partitions)
    if args.snapshot_partitions:   # each shell against a sandbox server of its own revision
        with contextlib.ExitStack() as servers:
            clusters = {name: servers.enter_context(sandbox_server(shell)) for name, shell in snapshots.shells.items()}
            snapshot(snapshots, clusters, "kafka-shell sandbox servers (each shell's own)", args.snapshot_partitions)


if __name__ == "__main__":
    main()
