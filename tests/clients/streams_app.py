"""A real Kafka Streams application for the tests: tests/clients/WordCount.java compiled with
javac against the jars .ci/kafka-dist caches (kafka-streams among them; Maven Central has no
kafka-streams-examples for 4.x), run with `group.protocol=streams` (KIP-1071)."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from tests.real_kafka import KAFKA_4, kafka_libs

SOURCE = Path(__file__).with_name("WordCount.java")


def compiled(into: Path) -> Path:
    """The directory holding WordCount.class, compiled once into `into`."""
    if not (into / "WordCount.class").exists():
        into.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-d", str(into), "-cp", f"{kafka_libs(KAFKA_4)}/*", str(SOURCE)], check=True,
                       capture_output=True, text=True, timeout=300)
    return into


class WordCount:
    """One instance of the application; `stop()` closes its stdin, and it leaves the group."""

    def __init__(self, classes: Path, bootstrap: str, application_id: str, source: str, sink: str, state_dir: Path):
        self.states: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
             "-cp", f"{classes}:{kafka_libs(KAFKA_4)}/*", "WordCount", bootstrap, application_id, source, sink,
             str(state_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("STATE "):
                with self._changed:
                    self.states.append(line.split()[1])
                    self._changed.notify_all()

    def wait_state(self, state: str, timeout_s: float = 120) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: state in self.states or self.process.poll() is not None,
                                          timeout_s):
                raise AssertionError(f"the streams application never reached {state}: {self.states}")
            assert state in self.states, f"the streams application exited: {self.states}"

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
