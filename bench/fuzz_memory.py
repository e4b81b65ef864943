"""Which hostile frames make the sandbox run out of memory: a sandbox process under a 3 GiB
address-space cap gets tests/frame_fuzz.py's frames of every API version (or of the keys given,
comma-separated), key by key, then prints the first MemoryError's traceback from its log.
Diagnostic for the OOM that tests/sandbox/test_fuzz.py found on int-final.

    .venv/bin/python bench/fuzz_memory.py [76,78,...]
"""

from __future__ import annotations

import random
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # the sandbox process inherits it

from tests import frame_fuzz  # noqa: E402


def main() -> None:
    keys = {int(k) for k in sys.argv[1].split(",")} if len(sys.argv) > 1 else None
    proc, bootstrap = frame_fuzz.spawn_sandbox()
    by_key: dict[int, list[int]] = {}
    for key, version in frame_fuzz.all_versions():
        by_key.setdefault(key, []).append(version)
    for key in sorted(by_key):
        if keys is not None and key not in keys:
            continue
        for seed in range(3):
            rnd = random.Random(seed * 1000 + key)
            frames = [f for v in by_key[key] for f in frame_fuzz.request_frames(key, v, rnd, 30)]
            frame_fuzz.send_frames(bootstrap, frames, wait_s=0.3)
        print("sent", key, flush=True)
    lines = frame_fuzz.stop_sandbox(proc).splitlines()
    for i, line in enumerate(lines):
        if "exception=MemoryError" in line or line.startswith("MemoryError"):
            print("\n".join(lines[max(0, i - 5):i + 40]))
            break
    else:
        print("no MemoryError")


if __name__ == "__main__":
    main()
