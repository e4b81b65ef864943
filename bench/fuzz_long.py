"""The frame fuzzing of tests/test_frames.py and tests/sandbox/test_fuzz.py, for longer: hostile
frames of every API version kio knows, against a sandbox in a process of its own (over sockets)
and against the client's decoder (in this process), until the time is up.

Run: .venv/bin/python bench/fuzz_long.py [--minutes 10] [--seed N]
Prints the frames sent per API, and any crash (a dead sandbox process, or a decoder error other
than ProtocolError); exits 1 on a crash.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_shell.protocol import codec  # noqa: E402
from tests import frame_fuzz  # noqa: E402

BATCH = 20  # frames per API version per round, over sockets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rnd = random.Random(seed)
    print(f"seed {seed}, {args.minutes:g} minutes", flush=True)
    versions = frame_fuzz.all_versions()
    sent: collections.Counter[str] = collections.Counter()
    decoded: collections.Counter[str] = collections.Counter()
    crashes: list[str] = []
    proc, bootstrap = frame_fuzz.spawn_sandbox(brokers=1)
    deadline = time.monotonic() + args.minutes * 60
    rounds = 0
    try:
        while time.monotonic() < deadline and not crashes:
            rounds += 1
            frames = []
            for key, version in versions:
                frames += frame_fuzz.request_frames(key, version, rnd, BATCH)
                sent[codec.api_name(key)] += BATCH
            frame_fuzz.send_frames(bootstrap, frames, wait_s=0.3)
            if proc.poll() is not None:
                crashes.append(f"the sandbox process died (exit {proc.returncode}) in round {rounds}")
                break
            for key, version in versions:
                cls = codec.response_schema(key, version)
                base = frame_fuzz.sample_response(key, version)
                for _ in range(BATCH * 10):
                    body = frame_fuzz.mutate(base, rnd)
                    try:
                        codec.decode_response(cls, body)
                    except codec.ProtocolError:
                        pass
                    except BaseException as exc:  # noqa: B036 - that is the crash we look for
                        crashes.append(f"decode_response({cls.__name__}, {body!r}): {exc!r}")
                decoded[codec.api_name(key)] += BATCH * 10
    finally:
        stderr = frame_fuzz.stop_sandbox(proc)
    print(f"{rounds} rounds; sandbox process: {sum(sent.values())} frames; client decoder: "
          f"{sum(decoded.values())} answers")
    print(f"{'API':32} {'to the sandbox':>15} {'to the decoder':>15}")
    for name in sorted(sent):
        print(f"{name:32} {sent[name]:15} {decoded[name]:15}")
    failures = [line for line in stderr.splitlines() if "a request failed" in line]
    print(f"handler failures logged by the sandbox (connection closed, process alive): {len(failures)}")
    for line in crashes:
        print("CRASH:", line)
    print("no crash" if not crashes else f"{len(crashes)} crash(es)")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
