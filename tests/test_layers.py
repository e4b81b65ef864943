"""The layers of kafka-shell, read from the imports of every module (function-level imports and
TYPE_CHECKING ones included): each layer imports only itself and the layers below it; commands
and the pipeline never touch the wire (kio, the protocol modules, the channel, the router); the
sandbox stands beside the shell, which reaches it only through the `sandbox` server's entry point
and `--sandbox` start-up (kafka_shell/main.py).

    face          main, modes, runner, repl/, completions, config_keys, pager
    commands      commands/*.py; the pipeline (kafka_shell/pipeline/) beside them
    declarations  registry, render, option_types, parsing, progress: what commands declare and return
                  (and commands/__init__.py: the index of which module declares which command)
    admin         kafka_shell/admin/: one module per noun, typed results
    connection    connection, router, cache, channel, session, client settings, SASL, ...
    protocol      protocol, protocol_ext, codes, frames, encoders, authorization, broker_identity,
                  definitions/ (shared with the sandbox: Kafka's definitions)
    base          errors, files, paths, limits, names, deadline, env, jwt, regex
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["base", "protocol", "connection", "admin", "declarations", "commands", "face"]
BASE = {"kafka_shell", "kafka_shell.errors", "kafka_shell.files", "kafka_shell.paths", "kafka_shell.limits",
        "kafka_shell.names", "kafka_shell.deadline", "kafka_shell.env", "kafka_shell.jwt", "kafka_shell.regex",
        "kafka_shell.answers"}
PROTOCOL = {"kafka_shell.protocol", "kafka_shell.protocol_ext", "kafka_shell.protocol_ext_schemas", "kafka_shell.codes",
            "kafka_shell.leader_election",
            "kafka_shell.frames", "kafka_shell.encoders",
            "kafka_shell.authorization", "kafka_shell.broker_identity"}
CONNECTION = {"kafka_shell.connection", "kafka_shell.router", "kafka_shell.cache", "kafka_shell.channel",
              "kafka_shell.session", "kafka_shell.metadata", "kafka_shell.controller_history",
              "kafka_shell.client_config", "kafka_shell.keystores", "kafka_shell.clusters", "kafka_shell.sasl",
              "kafka_shell.sasl_gssapi", "kafka_shell.sasl_oauthbearer", "kafka_shell.sandbox_client"}
# `commands` itself (commands/__init__.py) holds only the index of which module declares what.
DECLARATIONS = {"kafka_shell.registry", "kafka_shell.render", "kafka_shell.option_types", "kafka_shell.parsing",
                "kafka_shell.progress", "kafka_shell.failure_lines", "commands"}
FACE = {"kafka_shell.main", "kafka_shell.__main__", "kafka_shell.modes", "kafka_shell.runner",
        "kafka_shell.completions", "kafka_shell.config_keys", "kafka_shell.pager"}
# What commands and the pipeline never import: the wire is the admin layer's business.
WIRE = ("kio", "kafka_shell.protocol", "kafka_shell.codes", "kafka_shell.frames", "kafka_shell.encoders",
        "kafka_shell.channel", "kafka_shell.router")


def in_sandbox(module: str) -> bool:
    return module == "kafka_shell.sandbox" or module.startswith("kafka_shell.sandbox.")


def layer(module: str) -> str | None:
    if module in BASE:
        return "base"
    if module in PROTOCOL or module.startswith("kafka_shell.definitions"):
        return "protocol"
    if module in CONNECTION:
        return "connection"
    if module.startswith("kafka_shell.admin"):
        return "admin"
    if module in DECLARATIONS:
        return "declarations"
    if module.startswith(("commands", "kafka_shell.pipeline")):
        return "commands"
    if module in FACE or module.startswith("kafka_shell.repl"):
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
    assert {m for m, _ in users} == {"kafka_shell.main"}, "only start-up may import the sandbox"
    main = sorted(d for m, d in users if m == "kafka_shell.main")
    assert main == ["kafka_shell.sandbox.cli", "kafka_shell.sandbox.server"]  # its entry point, and --sandbox


def test_the_sandbox_shares_only_the_base_and_kafkas_definitions():
    for module in filter(in_sandbox, MODULES):
        outside = sorted(d for d in imports(module) if layer(d) not in (None, "base", "protocol"))
        assert outside == [], f"{module} imports {outside}"


def test_the_command_index_matches_the_declarations():
    import commands
    from kafka_shell.registry import declared_index
    assert commands.INDEX == declared_index(), (
        "commands/__init__.py's INDEX is stale: print the new one with "
        "python -c 'from kafka_shell.registry import print_index; print_index()'")
