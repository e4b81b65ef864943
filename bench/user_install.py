"""kafka-shell installed as a user installs it, for the benches that time start-up.

The repo's .venv holds the test extra and an editable install, and both cost start-up that a user
never pays: kio imports hypothesis whenever it is installed (~135 ms a process, see
../shared/KIO_NOTES.md), and an editable install imports its finder (pathlib, fnmatch, re) before
anything else. So the benches measure a venv of their own, outside the repo and reused between
runs: made once per set of dependencies (setup.cfg's hash) with `pip install SOURCE` (no extras),
then each run reinstalls only kafka-shell itself from the source (non-editable, compiled).
An extra (`pipeline`, for `snapshot`) gets a venv of its own, so that the start-up figures
are still those of the shell alone.

    shell = installed(ROOT)                    # this worktree, as it is now
    baseline = installed(revision("main"))     # another revision, beside it
    with_pyarrow = installed(ROOT, "user", extra="pipeline")

`revision(REV)` exports a git revision of this repo (`git archive`) into a temporary directory.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "kafka-shell" / "bench"


def installed(source: Path, name: str = "user", extra: str | None = None) -> Path:
    """The `kafka-shell` of a venv `name` in the cache holding `source` as `pip install` puts it
    (`pip install SOURCE[extra]` with an extra)."""
    deps = hashlib.sha1((source / "setup.cfg").read_bytes()).hexdigest()[:12]
    venv = CACHE / f"{name}{'-' + extra if extra else ''}-{deps}"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not (venv / ".ready").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([*pip, f"{source}[{extra}]" if extra else str(source)], check=True)
        (venv / ".ready").touch()
    else:   # the dependencies are there: only kafka-shell again, as the source is now
        subprocess.run([*pip, "--no-deps", "--force-reinstall", str(source)], check=True)
    return venv / "bin" / "kafka-shell"


def revision(rev: str) -> Path:
    """A directory holding revision `rev` of this repo (removed when the process ends)."""
    out = Path(tempfile.mkdtemp(prefix=f"bench-{rev.replace('/', '-')}-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(out, filter="data")
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    return out
