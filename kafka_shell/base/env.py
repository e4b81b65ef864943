"""`${VAR}` references in settings and options, taken from the environment when used, so that
only the reference is ever written down (-X, --command-config, clusters.json, the sandbox
server's --user)."""

from __future__ import annotations

import os
import re

from kafka_shell.base.errors import UsageError

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str, where: str) -> str:
    """`value` with each `${VAR}` replaced by the environment's; a UsageError names an unset one."""
    def sub(m: re.Match) -> str:
        if m.group(1) not in os.environ:
            raise UsageError(f"{where} uses ${{{m.group(1)}}}, which is not set: export it and retry")
        return os.environ[m.group(1)]
    return ENV_REF.sub(sub, value)
