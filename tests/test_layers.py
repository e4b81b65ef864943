"""The layers of kafka-shell, as folders (docs/architecture.md), held by import-linter's contracts
in pyproject.toml: each layer imports only itself and the layers below it; commands and the
pipeline never touch the wire; the sandbox stands beside the shell, which reaches it only at
start-up. `lint-imports` runs in CI (.ci/run) and here, so the README's test command holds them too.

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
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
LAYERS = next(c for c in CONTRACTS if c["id"] == "layers")["layers"]


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in proc.stdout


def test_every_module_lives_in_a_layer_folder():
    """A newcomer places a module by its folder: kafka_shell/ holds only the layers' packages,
    the sandbox, and the package's own entry points."""
    packages = {p.name for p in (ROOT / "kafka_shell").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    in_layers = {layer.split(".")[1] for layer in LAYERS if layer.startswith("kafka_shell.")}
    assert packages - in_layers == {"sandbox"}, "give each package of kafka_shell/ its place in pyproject.toml's layers"
    stray = sorted(p.name for p in (ROOT / "kafka_shell").glob("*.py"))
    assert stray == ["__init__.py", "__main__.py"], "put new modules in the folder of their layer"


def test_the_command_index_matches_the_declarations():
    import commands
    from kafka_shell.declarations.registry import declared_index
    assert commands.INDEX == declared_index(), (
        "commands/__init__.py's INDEX is stale: print the new one with "
        "python -c 'from kafka_shell.declarations.registry import print_index; print_index()'")


def test_every_command_family_is_held_independent():
    """Command families never import one another (import-linter's `families` contract): a new
    module of commands/ is listed there, or nothing would stop it importing another family."""
    families = next(c for c in CONTRACTS if c["id"] == "families")["modules"]
    modules = sorted(f"commands.{p.stem}" for p in (ROOT / "commands").glob("*.py") if p.stem != "__init__")
    assert sorted(families) == modules, "list each module of commands/ in pyproject.toml's `families` contract"
