"""The bash/zsh/fish completion files are generated from the registry and kept up to date."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kafka_shell.face import completions
from kafka_shell.face.main import flag_commands


def test_completion_files_are_up_to_date():
    stale = [p.name for p, text in completions.generate().items() if not p.exists() or p.read_text() != text]
    assert not stale, f"run `python -m kafka_shell.face.completions` to regenerate {stale}"


def test_every_flag_command_and_its_options_are_completed():
    files = {p.name: p.read_text() for p in completions.generate()}
    for cmd in flag_commands():
        for text in files.values():
            assert f"{cmd.name}" in text
        for opt in cmd.options:
            if not opt.positional:
                assert opt.name in files["kafka-shell.bash"]
                assert f"-l {opt.name[2:]}" in files["kafka-shell.fish"]


KAFKA_SHELL = str(completions.OUT_DIR.parent / ".venv" / "bin" / "kafka-shell")


@pytest.fixture(scope="session")
def shells() -> None:
    """zsh and fish, installed when missing (CI runs as root on a clean Debian machine)."""
    for step in (["apt-get", "install", "-y", "-q", "zsh", "fish"], ["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "zsh", "fish"]):   # a clean machine has no lists yet
        if (shutil.which("zsh") and shutil.which("fish")) or not shutil.which("apt-get"):
            break
        subprocess.run(step, capture_output=True, timeout=600)
    assert shutil.which("zsh") and shutil.which("fish"), "apt-get install -y zsh fish"


def _bash_complete(*words: str, env: dict | None = None) -> list[str]:
    """Candidates bash offers for the last word (the first word names the kafka-shell to call),
    with the line split into COMP_WORDS as bash splits it: also at its COMP_WORDBREAKS ":" and
    "=" (127.0.0.1:9092 is three words, --output=json three more)."""
    line = " ".join(words)
    split = [piece for w in words for piece in (re.findall(r"[=:]+|[^=:]+", w) or [""])]
    quoted = " ".join(shlex.quote(w) for w in split)
    script = (f"source {completions.OUT_DIR / 'kafka-shell.bash'}; COMP_WORDS=({quoted}); "
              f"COMP_CWORD={len(split) - 1}; COMP_LINE={shlex.quote(line)}; COMP_POINT={len(line)}; "
              f"_kafka_shell; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})}, cwd=completions.OUT_DIR.parent).stdout
    return out.split()


def _fish_complete(line: str, env: dict | None = None) -> list[str]:
    script = f"source {completions.OUT_DIR / 'kafka-shell.fish'}; complete -C {shlex.quote(line)}"
    out = subprocess.run(["fish", "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})}, cwd=completions.OUT_DIR.parent).stdout
    return [row.split("\t")[0] for row in out.splitlines()]


# zsh completes only inside its line editor: run an interactive zsh in a pseudo-terminal (zpty),
# type the line and Tab, and have compadd print what it would add after zsh's own matching.
ZSH_SETUP = r"""
PROMPT=
fpath=($KSH_COMPLETIONS $fpath)
autoload -Uz compinit && compinit -u -D
bindkey '^I' complete-word
_ksh_done() { print -r -- KSH-DONE }
comppostfuncs=(_ksh_done exit)
zstyle ':completion:*' insert-tab false
compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
    builtin compadd "$@"; return
  fi
  local -a hits
  builtin compadd -A hits "$@"
  (( $#hits )) && print -rl -- "KSH-CANDIDATE:"${^hits}
}
print KSH-READY
"""
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "source $KSH_SETUP"
local line
repeat 50; do zpty -r z line; [[ $line == *KSH-READY* ]] && break; done
zpty -w z "$1"$'\t'
while zpty -r z line; do
  [[ $line == *KSH-DONE* ]] && break
  [[ $line == *KSH-CANDIDATE:* ]] && print -r -- ${${line##*KSH-CANDIDATE:}%$'\r'}
done
zpty -d z
"""


def _zsh_complete(line: str, env: dict | None = None, tmp: Path | None = None) -> list[str]:
    tmp = Path(tempfile.mkdtemp()) if tmp is None else tmp
    (tmp / "setup.zsh").write_text(ZSH_SETUP)
    (tmp / "driver.zsh").write_text(ZSH_DRIVER)
    env = {**os.environ, "KSH_COMPLETIONS": str(completions.OUT_DIR), "KSH_SETUP": str(tmp / "setup.zsh"),
           **(env or {})}
    out = subprocess.run(["zsh", str(tmp / "driver.zsh"), line], capture_output=True, text=True, timeout=30,
                         env=env, cwd=completions.OUT_DIR.parent).stdout
    return [w for w in out.splitlines() if w]


def test_bash_completion_runs():
    assert _bash_complete("kafka-shell", "--create-topic", "--par") == ["--partitions"]
    assert "--describe-topic" in _bash_complete("kafka-shell", "--desc")
    assert sorted(_bash_complete("kafka-shell", "--describe-topic", "--under-")) == \
        ["--under-min-isr-partitions", "--under-replicated-partitions"]


COMPLETERS = {
    "bash": lambda *words: _bash_complete("kafka-shell", *words),
    "fish": lambda *words: _fish_complete(" ".join(["kafka-shell", *words])),
    "zsh": lambda *words: _zsh_complete(" ".join(["kafka-shell", *words])),
}


@pytest.mark.parametrize("shell", COMPLETERS)
def test_values_files_enums_and_every_sandbox_option(shells, shell):
    complete = COMPLETERS[shell]
    assert sorted(complete("--output", "")) == ["csv", "json", "jsonl", "table"]
    assert sorted(complete("--describe-topic", "--output", "j")) == ["json", "jsonl"]
    assert complete("--create-topic", "--par") == ["--partitions"]
    files = complete("--file", "completions/kafka-shell.b")   # zsh lists the name, the others the path
    assert files in (["completions/kafka-shell.bash"], ["kafka-shell.bash"])
    assert complete("--create-topic", "--topic", "") == []      # free text: no "-" inserted
    assert complete("sandbox", "--mode", "") == ["kraft", "zk"]
    sandbox = complete("sandbox", "--")
    assert {"--brokers", "--port-base", "--rack", "--data-dir", "--mode", "--controllers", "--kafka-version",
            "--broker-config", "--seed-apis"} <= set(sandbox)
    assert "--shell" not in complete("--s")


def test_cluster_and_topic_names_come_from_kafka_shell(shells, sandbox, tmp_path):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    admin.create_topics([NewTopic("orders", 1, 1), NewTopic("other", 1, 1)])["orders"].result(10)
    env = {"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)}
    (tmp_path / "clusters.json").write_text('{"clusters": {"prod": {"bootstrap": "h:1"}, "dev": {"bootstrap": "h:2"}}}')
    os.chmod(tmp_path / "clusters.json", 0o600)
    assert sorted(_bash_complete(KAFKA_SHELL, "--cluster", "", env=env)) == ["dev", "prod"]
    assert _fish_complete(f"{KAFKA_SHELL} --cluster p", env=env) == ["prod"]
    line = [KAFKA_SHELL, "--bootstrap-server", sandbox.bootstrap, "--describe-topic", "--topic"]
    assert _bash_complete(*line, "or", env=env) == ["orders"]
    assert sorted(_fish_complete(" ".join([*line, "o"]), env=env)) == ["orders", "other"]
    # fish shows an option's description once, not beside each of its values (issue 34)
    raw = subprocess.run(["fish", "-c", f"source {completions.OUT_DIR / 'kafka-shell.fish'}; complete -C "
                          f"{shlex.quote(' '.join([*line, 'o']))}"], capture_output=True, text=True, env={**os.environ, **env}).stdout
    assert sorted(raw.splitlines()) == ["orders", "other"]
    assert _zsh_complete(" ".join([*line, "ot"]), env=env, tmp=tmp_path) == ["other"]
    assert sorted(_zsh_complete(f"{KAFKA_SHELL} --cluster ", env=env, tmp=tmp_path)) == ["dev", "prod"]


@pytest.mark.parametrize("shell,name", [("zsh", "_kafka-shell"), ("fish", "kafka-shell.fish")])
def test_other_shells_parse_the_files(shells, shell, name):
    subprocess.run([shell, "-n", str(completions.OUT_DIR / name)], check=True)


def test_zsh_uses_arguments_with_descriptions():
    text = (completions.OUT_DIR / "_kafka-shell").read_text()
    assert "_arguments" in text and "'--output[Output format]:enum:(table json jsonl csv)'" in text
    assert ":topic:_kafka_shell_topics'" in text and "'--file[Replay a script, one command a line]:file:_files'" in text
    assert "'--cluster[A cluster from clusters.json]:cluster:_kafka_shell_clusters'" in text


def test_check_mode_reports_stale_files(tmp_path, monkeypatch):
    monkeypatch.setattr(completions, "OUT_DIR", tmp_path)
    assert completions.main(["--check"]) == 1
    assert completions.main([]) == 0
    assert completions.main(["--check"]) == 0


def test_cluster_names_despite_a_broken_current_cluster(tmp_path):
    env = {"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)}
    (tmp_path / "clusters.json").write_text('{"clusters": {"bad": {"bootstrap": "${KSH_TEST_UNSET}"}}}')
    (tmp_path / "state.json").write_text('{"current": "bad"}')
    for name in ("clusters.json", "state.json"):
        os.chmod(tmp_path / name, 0o600)
    assert _bash_complete(KAFKA_SHELL, "--cluster", "", env=env) == ["bad"]


def test_bash_reads_words_as_typed_host_port_and_option_equals_value(sandbox):
    """bash splits COMP_WORDS at ":" and "=": the topic after --bootstrap-server H:P, and the
    value of --opt=value, still complete (issue 22)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(10)
    line = [KAFKA_SHELL, "--bootstrap-server", sandbox.bootstrap, "--describe-topic", "--topic"]
    assert _bash_complete(*line, "or") == ["orders"]
    assert _bash_complete(KAFKA_SHELL, f"--bootstrap-server={sandbox.bootstrap}", "--describe-topic", "--topic",
                          "or") == ["orders"]
    assert sorted(_bash_complete("kafka-shell", "--output=j")) == ["json", "jsonl"]
    assert sorted(_bash_complete("kafka-shell", "--describe-topic", "--output=j")) == ["json", "jsonl"]


@pytest.mark.parametrize("shell", COMPLETERS)
def test_word_commands_and_every_sandbox_option(shells, shell):
    from kafka_shell.sandbox.cli import parser
    complete = COMPLETERS[shell]
    assert {"--snapshots", "--spark-master", "--overwrite"} <= set(complete("analyze", "--"))
    assert "--output-dir" in complete("--bootstrap-server", "h:1", "snapshot", "--out")
    every = {n for a in parser()._actions for n in a.option_strings if n.startswith("--")}
    assert {"--authorizer", "--listeners", "--tls-dir"} <= every
    assert every <= set(complete("sandbox", "--"))
