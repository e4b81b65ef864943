"""Files the shell writes (kafka_shell/base/files.py) and client settings kept off the command line:
new files never written through a symlink or over an existing file, owned files replaced
atomically with mode 0600 (older 0644 ones brought to 0600), `${ENV}` in settings, the `ps`
warning for secrets given with -X, and settings validated once at start for every command.

Runs the shell in-process through `kafka_shell.face.main.main` (the `kafka-shell` entry) against a
real sandbox, or the helpers on real files in a temp dir.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
from pathlib import Path

import pytest

from kafka_shell.connection import clusters
from kafka_shell.admin import throttles
from kafka_shell.base.errors import UsageError
from kafka_shell.base.files import FileExists, read_owned, write_json_owned, write_new
from kafka_shell.face.main import main
from kafka_shell.face.repl.history import SecretFreeHistory
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


# -- new files: O_EXCL | O_NOFOLLOW -------------------------------------------------------------


def test_write_new_creates_and_refuses_what_is_there(tmp_path):
    path = tmp_path / "plan.json"
    write_new(path, "{}\n")
    assert path.read_text() == "{}\n"
    with pytest.raises(FileExists, match="already exists: remove it or choose another file name"):
        write_new(path, "other")
    assert path.read_text() == "{}\n"


@pytest.mark.parametrize("dangling", [True, False])
def test_write_new_never_writes_through_a_symlink(tmp_path, dangling):
    target = tmp_path / "victim"
    if not dangling:
        target.write_text("precious")
    link = tmp_path / "plan.json"
    link.symlink_to(target)
    with pytest.raises(FileExists):
        write_new(link, "evil")
    if dangling:
        assert not target.exists()
    else:
        assert target.read_text() == "precious"


def test_rollback_file_is_not_written_through_a_dangling_symlink(sandbox, tmp_path, dirs):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2, [[1, 2]])
    move = tmp_path / "move.json"
    move.write_text(json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3]}]}))
    victim = tmp_path / "elsewhere" / "victim.json"
    victim.parent.mkdir()
    (tmp_path / "move.rollback.json").symlink_to(victim)  # planted: points nowhere yet
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "--command",
                         f"reassign-partitions --execute --reassignment-json-file {move}")
    assert code == 0, err
    assert not victim.exists()
    saved = tmp_path / "move.rollback.2.json"
    assert f"Saved the current assignment to {saved}" in err
    assert json.loads(saved.read_text())["partitions"][0]["replicas"] == [1, 2]
    assert (tmp_path / "move.rollback.json").is_symlink()  # left as it was


def test_proposed_file_refuses_an_existing_file(sandbox, tmp_path, dirs):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 1)
    out_file = tmp_path / "proposed.json"
    out_file.write_text("mine")
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "--command",
                         f"reassign-partitions --generate --topic t --broker-list 1,2 --proposed-json-file {out_file}")
    assert code == 2
    assert err.splitlines() == [f"{out_file} already exists: remove it or choose another file name"]
    assert out_file.read_text() == "mine"


# -- files the shell owns: temp + rename, 0600 --------------------------------------------------


def test_owned_files_are_private_atomic_and_replace_a_symlink(tmp_path):
    target = tmp_path / "victim"
    target.write_text("precious")
    path = tmp_path / "state" / "clusters.json"
    path.parent.mkdir()
    path.symlink_to(target)
    write_json_owned(path, {"a": 1})
    assert target.read_text() == "precious"          # the link was replaced, not followed
    assert not path.is_symlink() and json.loads(path.read_text()) == {"a": 1}
    assert mode(path) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["clusters.json"]  # no temp file left


def test_existing_clusters_and_throttle_files_are_brought_to_0600(dirs):
    config, data = dirs / "config", dirs / "data"
    config.mkdir()
    data.mkdir()
    (config / "clusters.json").write_text(json.dumps({"clusters": {"dev": {"bootstrap": "h:1"}}}))
    (data / throttles.FILE_NAME).write_text(json.dumps({"id": {"rate": 1}}))
    for path in (config / "clusters.json", data / throttles.FILE_NAME):
        os.chmod(path, 0o644)
    assert clusters.load() == {"dev": {"bootstrap": "h:1"}}
    assert throttles.load("id") == {"rate": 1}
    assert mode(config / "clusters.json") == 0o600
    assert mode(data / throttles.FILE_NAME) == 0o600


def test_shells_running_at_once_keep_each_clusters_throttle_record(dirs):
    """Two shells that record throttles of two clusters at the same time (conformance runs the
    sandbox and Kafka side by side; an operator may run two reassignments) each keep their
    record: the file is read and written under a lock, not the one record overwriting the other."""
    import subprocess
    import sys
    script = ("import sys\nfrom kafka_shell.admin import throttles\n"
              "for i in range(100):\n    throttles.save(f'{sys.argv[1]}-{i}', {'rate': i, 'brokers': [1]})\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, cluster]) for cluster in ("kafka", "sandbox")]
    assert [w.wait(60) for w in writers] == [0, 0]
    lost = [f"{c}-{i}" for c in ("kafka", "sandbox") for i in range(100) if throttles.load(f"{c}-{i}") is None]
    assert not lost
    assert mode(dirs / "data" / throttles.FILE_NAME) == 0o600


def test_shells_running_at_once_keep_each_others_clusters_and_controller_changes(dirs):
    """The same for the clusters added (clusters.json) and the controller changes seen (the
    controller history): two shells writing at once lose none of each other's."""
    import subprocess
    import sys
    from kafka_shell.connection import clusters, controller_history
    script = ("import sys\nfrom kafka_shell.connection import clusters, controller_history\n"
              "from kafka_shell.connection.metadata import ControllerInfo\n"
              "me = int(sys.argv[1])\n"
              "for i in range(60):\n"
              "    clusters.add(f'c{me}-{i}', 'localhost:9092')\n"
              "    controller_history.observe('id', ControllerInfo(me, me * 1000 + i))\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(me)]) for me in (1, 2)]
    assert [w.wait(60) for w in writers] == [0, 0]
    assert sorted(clusters.load()) == sorted(f"c{me}-{i}" for me in (1, 2) for i in range(60))
    seen = [(e["to"], e["epoch"]) for e in controller_history.load("id")]
    assert sorted(seen) == [(me, me * 1000 + i) for me in (1, 2) for i in range(60)]
    assert mode(clusters.clusters_file()) == 0o600


def test_read_owned_missing_and_binary(tmp_path):
    assert read_owned(tmp_path / "none") is None
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="is not UTF-8 text"):
        read_owned(tmp_path / "bin")


def test_history_file_is_private_and_never_followed(tmp_path, capsys):
    path = tmp_path / "history"
    path.write_text("\n# old\n+list-topics\n")
    os.chmod(path, 0o644)
    history = SecretFreeHistory(path)
    assert mode(path) == 0o600
    history.store_string("describe-topic --topic t")
    assert "+describe-topic --topic t\n" in path.read_text()
    assert list(history.load_history_strings())[0] == "describe-topic --topic t"

    target = tmp_path / "victim"
    link = tmp_path / "history2"
    link.symlink_to(target)
    history = SecretFreeHistory(link)
    history.store_string("list-topics")
    assert not target.exists()
    assert capsys.readouterr().err.strip() == f"History is not saved: cannot write {link} (it is a symbolic link)."


def test_history_keeps_secrets_out(tmp_path):
    history = SecretFreeHistory(tmp_path / "history")
    history.append_string("add-cluster p --bootstrap-server h:1 -X sasl.password=hunter2")
    history.append_string("list-topics")
    assert "hunter2" not in (tmp_path / "history").read_text()
    assert "list-topics" in (tmp_path / "history").read_text()


# -- secrets off the command line: ${ENV}, the ps warning ---------------------------------------


def test_env_references_in_x_and_command_config(sandbox, tmp_path, dirs, monkeypatch):
    monkeypatch.setenv("KSH_TEST_CLIENT_ID", "from-env")
    props = tmp_path / "client.properties"
    props.write_text("client.id=${KSH_TEST_CLIENT_ID}\n")
    for flags in (["-X", "client.id=${KSH_TEST_CLIENT_ID}"], ["--command-config", str(props)]):
        code, out, err = run("--bootstrap-server", sandbox.bootstrap, *flags, "--command", "list-brokers")
        assert code == 0, err
        assert err == ""
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "-X", "sasl.password=${KSH_TEST_UNSET_VAR}",
                         "--command", "list-brokers")
    assert code == 2
    assert err.splitlines() == ["-X (sasl.password) uses ${KSH_TEST_UNSET_VAR}, which is not set: export it and retry"]
    props.write_text("sasl.password=${KSH_TEST_UNSET_VAR}\n")
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "--command-config", str(props), "--command", "list-brokers")
    assert code == 2 and "uses ${KSH_TEST_UNSET_VAR}, which is not set" in err and len(err.splitlines()) == 1


def test_a_secret_given_with_x_warns_without_showing_it(sandbox, dirs, monkeypatch):
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "-X", "sasl.password=hunter2",
                         "--command", "list-brokers")
    assert code == 0, err
    assert err.splitlines() == [
        "Warning: -X sasl.password on the command line is visible to other users (ps): put it in a "
        "--command-config file or a clusters.json cluster, or write -X 'sasl.password=${ENV_VAR}'."]
    assert "hunter2" not in err + out
    monkeypatch.setenv("KSH_TEST_SECRET", "hunter2")
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "-X", "sasl.password=${KSH_TEST_SECRET}",
                         "--command", "list-brokers")
    assert code == 0 and err == ""  # a reference shows nothing secret to ps


def test_help_recommends_keeping_secrets_off_the_command_line():
    code, out, err = run("--help")
    assert code == 0
    assert "--command-config" in out and "${ENV}" in out and "clusters.json" in out


# -- client settings validated once, the same for every command ---------------------------------


@pytest.mark.parametrize("setting,message", [
    ("foo.bar=1", 'Invalid client setting: No such configuration property: "foo.bar"'),
    ("socket.timeout.ms=soon", 'Invalid client setting: Invalid value for configuration property "socket.timeout.ms"'),
    ("ssl.ca.location=/nonexistent/ca.pem", "ssl.ca.location: file /nonexistent/ca.pem does not exist"),
    ("ssl.key.location=/nonexistent/key.pem", "ssl.key.location: file /nonexistent/key.pem does not exist"),
    ("client.id=a\x00b", 'Client setting "client.id" holds a control character (in its value): remove it'),
    ("a\x00b=1", 'Client setting "a\\x00b" holds a control character (in its name): remove it'),
])
def test_bad_client_settings_fail_every_command_alike(sandbox, dirs, setting, message):
    before = set(sandbox.cluster.topics)
    errors = set()
    for line in ("list-topics", "create-topic --topic x", "describe-cluster"):
        code, out, err = run("--bootstrap-server", sandbox.bootstrap, "-X", setting, "--command", line)
        assert code == 2 and out == ""
        assert len(err.splitlines()) == 1 and err.startswith(message), err
        errors.add(err)
    assert len(errors) == 1
    assert set(sandbox.cluster.topics) == before


# -- Kafka's own messages ----------------------------------------------------------------------


def test_topic_collision_and_the_period_underscore_warning(sandbox, dirs):
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "--command", "create-topic --topic my.topic")
    assert code == 0, err
    assert err.splitlines() == [
        "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
        "collide. To avoid issues it is best to use either, but not both.",
        "Created topic my.topic."]
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "--command", "create-topic --topic my_topic")
    assert code == 1
    assert err.splitlines() == ["Topic 'my_topic' collides with existing topic: my.topic"]
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "--command", "create-topic --topic plain")
    assert code == 0 and err.splitlines() == ["Created topic plain."]


@pytest.mark.parametrize("line", ["describe-configs --broker 99", "alter-configs --broker 99 --add-config a=b",
                                  "api-versions --broker 99", "describe-log-dirs --broker-list 1,99",
                                  "reassign-partitions --generate --topic t --broker-list 1,99"])
def test_an_unknown_broker_fails_at_once(sandbox, dirs, line):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "--command", line)
    assert code == 2
    assert err.splitlines() == ["Broker 99 is not in the cluster (brokers: 1, 2, 3)"]


def test_accepted_settings_are_remembered_without_their_secrets(sandbox, dirs):
    argv = ["--bootstrap-server", sandbox.bootstrap, "-X", "sasl.username=u", "-X", "client.id=orders-app",
            "--command-config", "/dev/null", "--command", "list-brokers"]
    code, out, err = run(*argv)
    assert code == 0, err
    remembered = dirs / "data" / "validated-settings.json"
    assert mode(remembered) == 0o600
    digests = json.loads(remembered.read_text())
    assert len(digests) == 1 and "orders-app" not in remembered.read_text()
    assert run(*argv)[0] == 0
    assert json.loads(remembered.read_text()) == digests  # checked once, then known
    code, out, err = run("--bootstrap-server", sandbox.bootstrap, "-X", "client.id=orders-app", "-X", "foo.bar=1",
                         "--command", "list-brokers")
    assert code == 2 and 'No such configuration property: "foo.bar"' in err
