"""The layers of kafka-shell, read from the imports of every module (function-level imports and
TYPE_CHECKING ones included): each layer imports only itself and the layers below it; commands
and the pipeline never touch the wire (kio, the protocol modules, the channel, the router); the
sandbox stands beside the shell, which reaches it only through the `sandbox` server's entry point
and `--sandbox` start-up (kafka_shell/face/main.py).

    face          kafka_shell/face/: main, modes, runner, repl/, completions, config_keys, pager
    commands      commands/*.py; below them the pipeline (kafka_shell/pipeline/)
    declarations  kafka_shell/declarations/: registry, render, option_types, parsing, progress
    admin         kafka_shell/admin/: one module per noun, typed results
    connection    kafka_shell/connection/: the manager, router, cache, channel, session, settings, SASL
    protocol      kafka_shell/protocol/: codec, codes, frames, encoders, definitions/ (shared with the sandbox)
    base          kafka_shell/base/: errors, files, paths, limits, names, deadline, env, jwt, regex
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["base", "protocol", "connection", "admin", "declarations", "commands", "face"]
BASE = {"kafka_shell", "kafka_shell.base.errors", "kafka_shell.base.files", "kafka_shell.base.paths", "kafka_shell.base.limits",
        "kafka_shell.base.names", "kafka_shell.base.deadline", "kafka_shell.base.env", "kafka_shell.base.jwt", "kafka_shell.base.regex"}
PROTOCOL = {"kafka_shell.protocol.codec", "kafka_shell.protocol.seed_apis", "kafka_shell.protocol.seed_api_schemas", "kafka_shell.protocol.codes",
            "kafka_shell.protocol.frames", "kafka_shell.protocol.encoders",
            "kafka_shell.protocol.authorization", "kafka_shell.protocol.broker_identity"}
CONNECTION = {"kafka_shell.connection.manager", "kafka_shell.connection.router", "kafka_shell.connection.cache", "kafka_shell.connection.channel",
              "kafka_shell.connection.session", "kafka_shell.connection.metadata", "kafka_shell.connection.controller_history",
              "kafka_shell.connection.client_config", "kafka_shell.connection.keystores", "kafka_shell.connection.clusters", "kafka_shell.connection.sasl",
              "kafka_shell.connection.sasl_gssapi", "kafka_shell.connection.sasl_oauthbearer", "kafka_shell.connection.sandbox_client"}
# `commands` itself (commands/__init__.py) holds only the index of which module declares what.
DECLARATIONS = {"kafka_shell.declarations.registry", "kafka_shell.declarations.render", "kafka_shell.declarations.option_types", "kafka_shell.declarations.parsing",
                "kafka_shell.declarations.progress", "commands"}
FACE = {"kafka_shell.face.main", "kafka_shell.__main__", "kafka_shell.face.modes", "kafka_shell.face.runner",
        "kafka_shell.face.completions", "kafka_shell.face.config_keys", "kafka_shell.face.pager"}
# What commands and the pipeline never import: the wire is the admin layer's business.
WIRE = ("kio", "kafka_shell.protocol.codec", "kafka_shell.protocol.codes", "kafka_shell.protocol.frames", "kafka_shell.protocol.encoders",
        "kafka_shell.connection.channel", "kafka_shell.connection.router")


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in proc.stdout


def layer(module: str) -> str | None:
    if module in BASE:
        return "base"
    if module in PROTOCOL or module.startswith("kafka_shell.protocol.definitions"):
        return "protocol"
    if module in CONNECTION:
        return "connection"
    if module.startswith("kafka_shell.admin"):
        return "admin"
    if module in DECLARATIONS:
        return "declarations"
    if module.startswith(("commands", "kafka_shell.pipeline")):
        return "commands"
    if module in FACE or module.startswith("kafka_shell.face.repl"):
        return "face"
    return None  # the sandbox, and what is not ours


def modules() -> dict[str, Path]:
    found = {}
    for top in ("kafka_shell", "commands"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def imports(module: str) -> set[str]:
    """Every module `module` imports (the code has no relative imports), resolved to our modules
    where it names one: `from kafka_shell.admin import topics` is kafka_shell.admin.topics."""
    out = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                    for a in node.names}
    return out


def rank(module: str) -> int:
    name = layer(module)
    return LAYERS.index(name) if name is not None else -1


def test_every_module_has_a_layer_or_is_the_sandbox():
    stray = [m for m in MODULES if layer(m) is None and not in_sandbox(m)]
    assert stray == [], "give these modules a layer in tests/test_layers.py"


@pytest.mark.parametrize("module", [m for m in MODULES if layer(m) is not None])
def test_layers_import_only_themselves_and_below(module):
    above = sorted(d for d in imports(module) if rank(d) > rank(module))
    assert above == [], f"{module} ({layer(module)}) imports a layer above it"
    if module.startswith("kafka_shell.pipeline"):
        assert not [d for d in imports(module) if d.startswith("commands")], "the pipeline is beside the commands"


@pytest.mark.parametrize("module", [m for m in MODULES if m.startswith(("commands", "kafka_shell.pipeline"))])
def test_commands_and_the_pipeline_never_touch_the_wire(module):
    wire = sorted(d for d in imports(module) if d == "kio" or d.startswith(WIRE))
    assert wire == [], f"{module} imports {wire}: ask through kafka_shell/admin instead"


def test_the_sandbox_stands_beside_the_shell():
    users = {(m, d) for m in MODULES if not in_sandbox(m) for d in imports(m) if in_sandbox(d)}
    assert {m for m, _ in users} == {"kafka_shell.face.main"}, "only start-up may import the sandbox"
    main = sorted(d for m, d in users if m == "kafka_shell.face.main")
    assert main == ["kafka_shell.sandbox.cli", "kafka_shell.sandbox.server"]  # its entry point, and --sandbox


def test_the_sandbox_shares_only_the_base_and_kafkas_definitions():
    for module in filter(in_sandbox, MODULES):
        outside = sorted(d for d in imports(module) if layer(d) not in (None, "base", "protocol"))
        assert outside == [], f"{module} imports {outside}"


def test_the_command_index_matches_the_declarations():
    import commands
    from kafka_shell.declarations.registry import declared_index
    assert commands.INDEX == declared_index(), (
        "commands/__init__.py's INDEX is stale: print the new one with "
        "python -c 'from kafka_shell.declarations.registry import print_index; print_index()'")
