"""The bash/zsh/fish completion files are generated from the registry and kept up to date."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafka_shell import completions
from kafka_shell.main import flag_commands


def test_completion_files_are_up_to_date():
    stale = [p.name for p, text in completions.generate().items() if not p.exists() or p.read_text() != text]
    assert not stale, f"run `python -m kafka_shell.completions` to regenerate {stale}"


def test_every_flag_command_and_its_options_are_completed():
    files = {p.name: p.read_text() for p in completions.generate()}
    for cmd in flag_commands():
        for text in files.values():
            assert f"{cmd.name}" in text
        for opt in cmd.options:
            if not opt.positional:
                assert opt.name in files["kafka-shell.bash"]
                assert f"-l {opt.name[2:]}" in files["kafka-shell.fish"]


def _bash_complete(*words: str) -> list[str]:
    script = (f"source {completions.OUT_DIR / 'kafka-shell.bash'}; COMP_WORDS=({' '.join(words)}); "
              f"COMP_CWORD={len(words) - 1}; _kafka_shell; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return out.split()


def test_bash_completion_runs():
    assert _bash_complete("kafka-shell", "--create-topic", "--par") == ["--partitions"]
    assert "--describe-topic" in _bash_complete("kafka-shell", "--desc")
    assert sorted(_bash_complete("kafka-shell", "--describe-topic", "--under-")) == \
        ["--under-min-isr-partitions", "--under-replicated-partitions"]


@pytest.mark.parametrize("shell,name", [("zsh", "_kafka-shell"), ("fish", "kafka-shell.fish")])
def test_other_shells_parse_the_files(shell, name):
    exe = shutil.which(shell)
    path = completions.OUT_DIR / name
    if exe is None:  # no such shell here: check the file's shape instead of its syntax
        text = path.read_text()
        assert text.count("complete -c kafka-shell") > 20 if shell == "fish" else text.startswith("#compdef kafka-shell")
        return
    subprocess.run([exe, "-n", str(path)], check=True)


def test_check_mode_reports_stale_files(tmp_path, monkeypatch):
    monkeypatch.setattr(completions, "OUT_DIR", tmp_path)
    assert completions.main(["--check"]) == 1
    assert completions.main([]) == 0
    assert completions.main(["--check"]) == 0
