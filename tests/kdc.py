"""A real MIT Kerberos KDC on loopback for the GSSAPI tests: a realm in a temporary directory
(KRB5_CONFIG and KRB5_KDC_PROFILE point there), principals and keytabs made with kadmin.local,
krb5kdc on a free port, stopped at the end. Debian's krb5-kdc and krb5-admin-server (and
libkrb5-dev, for the gssapi package) are installed when missing, as .ci/bootstrap does.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REALM = "KAFKA-SHELL.TEST"
PACKAGES = ["krb5-kdc", "krb5-admin-server", "krb5-user", "libkrb5-dev"]
SBIN = ("/usr/sbin", "/usr/bin")


def _tool(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.access(f"{d}/{name}", os.X_OK)), None)


def ensure_installed() -> None:
    if all(_tool(t) for t in ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], check=True, capture_output=True, env=env)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Kdc:
    directory: Path
    port: int
    process: subprocess.Popen
    env: dict[str, str]   # KRB5_CONFIG and KRB5_KDC_PROFILE, for the tests and their subprocesses

    def keytab(self, principal: str) -> Path:
        """A new principal with a random key, exported to its own keytab."""
        path = self.directory / (principal.replace("/", "_") + ".keytab")
        self.kadmin(f"addprinc -randkey {principal}")
        self.kadmin(f"ktadd -k {path} {principal}")
        return path

    def kadmin(self, query: str) -> None:
        subprocess.run([_tool("kadmin.local") or "kadmin.local", "-r", REALM, "-q", query],
                       check=True, capture_output=True, env=self.env)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start(directory: Path) -> Kdc:
    ensure_installed()
    port = _free_port()
    (directory / "krb5.conf").write_text(f"""[libdefaults]
    default_realm = {REALM}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = true
    rdns = true
    udp_preference_limit = 1
    default_ccache_name = FILE:{directory}/ccache

[realms]
    {REALM} = {{
        kdc = 127.0.0.1:{port}
    }}

[domain_realm]
    localhost = {REALM}
""")
    (directory / "kdc.conf").write_text(f"""[kdcdefaults]
    kdc_listen = 127.0.0.1:{port}
    kdc_tcp_listen = 127.0.0.1:{port}

[realms]
    {REALM} = {{
        database_name = {directory}/principal
        key_stash_file = {directory}/stash
        acl_file = {directory}/kadm5.acl
        max_life = 1h
    }}

[logging]
    kdc = FILE:{directory}/kdc.log
""")
    env = {**os.environ, "KRB5_CONFIG": str(directory / "krb5.conf"),
           "KRB5_KDC_PROFILE": str(directory / "kdc.conf"), "KRB5RCACHENAME": f"file2:{directory}/rcache"}
    subprocess.run([_tool("kdb5_util") or "kdb5_util", "-r", REALM, "-P", "kafka-shell-master", "create", "-s"],
                   check=True, capture_output=True, env=env)
    process = subprocess.Popen([_tool("krb5kdc") or "krb5kdc", "-n", "-r", REALM], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kdc = Kdc(directory, port, process, env)
    deadline = time.monotonic() + 20
    while True:  # until it listens (its start is quick; the bound is for a broken install)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return kdc
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                kdc.stop()
                raise RuntimeError(f"krb5kdc did not start: {process.stderr.read().decode() if process.stderr else ''}") from None
            time.sleep(0.05)
