"""Client settings: librdkafka properties from `--command-config FILE` and `-X key=value`.

The same properties feed the shell's own channel (every admin request) and librdkafka (the
Producer and Consumer that move records), so users write them once. Java clients' `sasl.jaas.config` (what Kafka's own tools read) is translated to
librdkafka's `sasl.username` / `sasl.password`, since librdkafka rejects it.

`${VAR}` in a value (of -X, --command-config or clusters.json) is replaced by the environment
variable, so secrets stay off the command line, where `ps` shows them to every user. The
settings are checked once, before any command runs (`validate`), the same way for all commands.
"""

from __future__ import annotations

import os
import re
from typing import Any

from kafka_shell.base.env import ENV_REF, expand_env
from kafka_shell.base.errors import NO_SASL_PROVIDER, ShellError, UsageError, shown
from kafka_shell.base.files import locked, read_owned, read_text, write_json_owned

REDACTED = "******"
# Keys whose values are secrets: never printed, logged or put into an error message.
SECRET_WORDS = ("password", "secret", "jaas", "ssl.key.pem", "token", "credential")

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def load_properties(path: str) -> dict[str, str]:
    """Read a Java .properties file: `k=v`, `k: v` or `k v`; `#`/`!` comments; `\\` line
    continuations and escapes (`\\uXXXX`, `\\t`, `\\=` ...)."""
    text = read_text(path, "--command-config file")
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_property(line)
        props[key] = value
    return props


def _logical_lines(text: str):
    """Non-comment lines with continuations joined (a line ending in an odd number of `\\`)."""
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _split_property(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line) and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2:i + 6]):
                out.append(chr(int(s[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_x_options(items: list[str]) -> dict[str, str]:
    """`-X key=value` items as a dict (later items win); UsageError names the bad item."""
    props: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            if is_secret(item):  # e.g. sasl.password:secret: name the key, never the value
                name = re.split(r"[:\s]", item, maxsplit=1)[0]
                raise UsageError(f'-X expects key=value (a librdkafka property), got "{shown(name)}..." '
                                 f"(value not shown): write -X '{shown(name)}=${{ENV_VAR}}'")
            raise UsageError(f'-X expects key=value (a librdkafka property), got "{shown(item)}"')
        if not key:
            # Do not echo the item: its value may be a secret.
            raise UsageError("-X expects key=value (a librdkafka property), got a value with no key")
        props[key] = value
    return props


def is_secret(key: str) -> bool:
    k = key.lower()
    return any(word in k for word in SECRET_WORDS)


def redact(props: dict) -> dict:
    """A copy safe to show: every secret value replaced by `******`."""
    return {k: (REDACTED if is_secret(str(k)) and v not in (None, "") else v) for k, v in props.items()}


def scrub(text: str, props: dict) -> str:
    """`text` with any secret value of `props` replaced (for error messages from libraries)."""
    for k, v in props.items():
        if is_secret(str(k)) and isinstance(v, str) and len(v) >= 3:
            text = text.replace(v, REDACTED)
    return text


def sasl_credentials(props: dict[str, str]) -> tuple[str | None, str | None]:
    """(username, password) from librdkafka's keys, else from a Java `sasl.jaas.config`."""
    user, password = props.get("sasl.username"), props.get("sasl.password")
    if user is None and "sasl.jaas.config" in props:
        options = jaas_options(props["sasl.jaas.config"])
        user, password = options.get("username"), options.get("password")
    return user, password


_JAVA_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _java_unquote(text: str) -> str:
    """A quoted JAAS value's text as Java's StreamTokenizer reads it: `\\` and `\"`, the
    letter escapes and octal `\\ooo`; any other escaped character stands for itself."""
    return re.sub(r"\\([0-7]{1,3}|.)", lambda m: chr(int(m.group(1), 8)) if m.group(1)[0] in "01234567"
                  else _JAVA_ESCAPES.get(m.group(1), m.group(1)), text)


def sasl_mechanism(props: dict[str, str]) -> str:
    """The SASL mechanism as librdkafka picks it (`sasl.mechanism` is its alias; GSSAPI default)."""
    return (props.get("sasl.mechanisms") or props.get("sasl.mechanism") or "GSSAPI").strip().upper()


def librdkafka_properties(props: dict[str, str]) -> dict[str, str]:
    """The properties as librdkafka (and the direct channel) accept them: `sasl.jaas.config`
    becomes username/password; Java's trust and key stores (JKS or PKCS12) become PEM text
    (ssl.ca.pem, ssl.certificate.pem, ssl.key.pem), in memory; Java's empty
    ssl.endpoint.identification.algorithm (no host-name check) becomes `none`."""
    if not props:
        return {}
    from kafka_shell.connection import keystores
    out = keystores.as_pem(dict(props))
    if out.get("ssl.endpoint.identification.algorithm", "https").strip() == "":
        out["ssl.endpoint.identification.algorithm"] = "none"
    jaas = out.pop("sasl.jaas.config", None)
    if jaas is not None and "sasl.username" not in out:
        user, password = sasl_credentials({"sasl.jaas.config": jaas})
        if user is not None:
            out["sasl.username"] = user
        if password is not None:
            out["sasl.password"] = password
    if jaas is not None and "OAuthBearerLoginModule" in jaas:
        from kafka_shell.connection.sasl_oauthbearer import from_java_login
        out = from_java_login({**out, "sasl.jaas.config": jaas})
    if (out.get("security.protocol", "").lower().startswith("sasl") and sasl_mechanism(out) == "OAUTHBEARER"
            and out.get("sasl.oauthbearer.method", "default").lower() == "default" and out.get("sasl.oauthbearer.config")):
        # An unsecured token, as the direct channel builds it: without this librdkafka waits for
        # a token callback that never comes.
        out.setdefault("enable.sasl.oauthbearer.unsecure.jwt", "true")
    return out


def jaas_options(jaas: str) -> dict[str, str]:
    """The quoted options (name="value") of a Java `sasl.jaas.config`, unescaped."""
    return {k: _java_unquote(v) for k, v in _JAAS_OPTION.findall(jaas)}


# -- ${ENV} references, and the checks made once at start ---------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Properties naming a file librdkafka (or the direct channel) opens: a missing one is named.
FILE_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
             "ssl.truststore.location",
             "ssl.crl.location", "sasl.kerberos.keytab", "ssl.engine.location")


def parse_bootstrap(bootstrap: str, where: str = "--bootstrap-server") -> list[tuple[str, int]]:
    """`h:p[,h:p]` (`[v6]:p`, `PLAINTEXT://h:p`) with ports 1-65535 as (host, port) pairs; a
    UsageError otherwise. The one parser of bootstrap lists (brokers' and controllers')."""
    items = [s.strip() for s in bootstrap.split(",") if s.strip()]
    addresses = []
    for item in items or [""]:
        host, sep, port = item.split("://", 1)[-1].rpartition(":")
        if not (sep and host and host.isprintable() and " " not in host and port.isascii()
                and port.isdigit() and 0 < int(port) < 65536 and _host_brackets_ok(host)):
            raise UsageError(f'Bad bootstrap server "{shown(item)}" in {where}: use host:port[,host:port...] '
                             "(ports 1 to 65535)")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def _host_brackets_ok(host: str) -> bool:
    """Brackets only around a whole IPv6 address (`[::1]`): `[::1` would be looked up in DNS."""
    if "[" not in host and "]" not in host:
        return True
    if not (host.startswith("[") and host.endswith("]")):
        return False
    import ipaddress  # here: brackets are rare, and the module costs every start
    try:
        return ipaddress.ip_address(host[1:-1]).version == 6
    except ValueError:
        return False


def check_bootstrap(bootstrap: str, where: str = "--bootstrap-server") -> str:
    parse_bootstrap(bootstrap, where)
    return bootstrap


def expand_all(props: dict[str, str], where: str) -> dict[str, str]:
    return {k: expand_env(v, f"{where} ({k})") for k, v in props.items()}


def clear_secrets(props: dict[str, str]) -> list[str]:
    """Keys of properties that hold a secret itself (not a ${VAR}): on a command line, or in a
    file."""
    return [k for k, v in props.items() if is_secret(k) and v and not ENV_REF.fullmatch(v.strip())]


def readable_by_others(path: str | os.PathLike) -> int | None:
    """The file's mode when users other than its owner may read it, else None."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        return None
    return mode if mode & 0o044 else None


def exposed_file_warning(path: str, props: dict[str, str]) -> str | None:
    """One line when a properties file holds a secret in clear and others may read it (as ssh
    warns of a private key file); it names the keys, never the values."""
    mode = readable_by_others(path)
    secrets = clear_secrets(props) if mode is not None else []
    if not secrets:
        return None
    return (f"Warning: {path} holds {', '.join(secrets)} and other users can read it (mode {mode:o}): "
            f"chmod 600 {path}, or write {secrets[0]}=${{ENV_VAR}} there.")


def secrets_warning(keys: list[str]) -> str:
    """One line for secrets given with -X; it names the keys, never the values."""
    return (f"Warning: -X {', '.join(keys)} on the command line is visible to other users (ps): "
            f"put it in a --command-config file or a clusters.json cluster, or write "
            f"-X '{keys[0]}=${{ENV_VAR}}'.")


def validate(props: dict[str, str]) -> None:
    """Check client settings before any command runs, the same way for every command: files
    they name must exist, and librdkafka must accept the rest (property names, value types,
    SASL mechanisms it was built with). librdkafka's check costs the confluent-kafka import
    (~95 ms with the client set-up), so it runs only for settings not checked before."""
    for key, value in props.items():
        if _CONTROL.search(key) or _CONTROL.search(value):  # librdkafka would cut them at a NUL
            raise UsageError(f'Client setting "{shown(key)}" holds a control character (in its '
                             f"{'name' if _CONTROL.search(key) else 'value'}): remove it")
    for key in FILE_KEYS:
        path = props.get(key)
        if path and not (key == "ssl.ca.location" and path == "probe") and not os.path.exists(path):
            raise UsageError(f"{key}: file {shown(path)} does not exist: fix the path "
                             "(-X, --command-config or clusters.json)")
    if not props:
        return
    security = props.get("security.protocol", "").strip().lower()
    mechanism = sasl_mechanism(props) if security.startswith("sasl") else None
    if mechanism is not None:
        from kafka_shell.connection.sasl import CLIENT_MECHANISMS  # it imports this module
        if mechanism not in CLIENT_MECHANISMS:
            # Every command connects through the shell's own channel first, which logs in itself.
            raise UsageError(f"SASL mechanism {mechanism} is not supported by kafka-shell: use "
                             f"{', '.join(CLIENT_MECHANISMS)} (set sasl.mechanism)")
    key = _settings_key(props)
    if key in _validated():
        return
    _check_with_librdkafka(props)
    _remember(key)


# Settings librdkafka accepted are remembered (by a digest of the redacted settings: no secret
# is stored) so that later runs skip the confluent-kafka check, ~95 ms of a one-shot start.
VALIDATED_FILE = "validated-settings.json"
MAX_REMEMBERED = 32


def _settings_key(props: dict[str, str]) -> str:
    # Only settings given (-X, a file, a cluster's) are checked: these load only then.
    import hashlib
    import importlib.util
    import json
    spec = importlib.util.find_spec("confluent_kafka")
    where = os.path.dirname(spec.origin) if spec and spec.origin else ""
    build = f"{where}:{os.stat(where).st_mtime_ns if where else 0}"  # a new librdkafka checks again
    text = json.dumps([build, sorted(redact(librdkafka_properties(props)).items())])
    return hashlib.sha256(text.encode()).hexdigest()


def _validated() -> list[str]:
    import json

    from kafka_shell.base.paths import data_dir
    try:
        data = json.loads(read_owned(data_dir() / VALIDATED_FILE) or "[]")
    except (OSError, ValueError, UsageError):
        return []
    return data if isinstance(data, list) else []


def _remember(key: str) -> None:
    from kafka_shell.base.paths import data_dir
    try:
        with locked(data_dir() / VALIDATED_FILE):
            write_json_owned(data_dir() / VALIDATED_FILE, [key, *_validated()][:MAX_REMEMBERED])
    except (OSError, ShellError):
        pass  # a read-only home only costs the check next time


def _check_with_librdkafka(props: dict[str, str]) -> None:
    # No bootstrap.servers: the client only parses its settings, it connects nowhere.
    conf: dict[str, Any] = {**librdkafka_properties(props), "logger": _quiet_logger()}
    text = _librdkafka_refusal(conf)
    if text is not None and text.startswith(NO_SASL_PROVIDER):
        # A mechanism this librdkafka build lacks (GSSAPI in confluent-kafka's wheels): the
        # shell's channel logs in itself, and the commands that move records say so. Check the
        # other settings the same way.
        conf["security.protocol"] = conf["security.protocol"].lower().replace("sasl_", "")
        text = _librdkafka_refusal(conf)
    if text is not None:
        raise UsageError(f"Invalid client setting: {scrub(text, props)} "
                         "(fix -X, --command-config or the cluster's properties)")


# Java clients' properties the shell reads itself, which librdkafka does not know by name.
SHELL_PROPERTIES = ("ssl.keystore.type", "ssl.truststore.password", "ssl.truststore.type")
SHELL_PROPERTY_PREFIXES = ("sasl.login.",)   # Java's OAUTHBEARER login settings (sasl_oauthbearer.py)
UNKNOWN_PROPERTY = "No such configuration property"


def check_property_names(props: dict[str, str], where: str) -> None:
    """Each key a property of librdkafka or one the shell reads (values may be ${VAR}s, read
    later: only the names are checked here); a UsageError names the first unknown one."""
    for key in props:
        if key in SHELL_PROPERTIES or key.startswith(SHELL_PROPERTY_PREFIXES):
            continue
        refusal = _librdkafka_refusal({key: "1", "logger": _quiet_logger()})
        if refusal is not None and refusal.startswith(UNKNOWN_PROPERTY):
            lower = key.lower()
            hint = f" (did you mean {lower}?)" if lower != key and _known_name(lower) else ""
            raise UsageError(f'{where}: unknown client property "{shown(key)}"{hint}: use librdkafka\'s '
                             "properties (or Java's sasl.jaas.config, ssl.keystore.*, ssl.truststore.*)")


def _known_name(key: str) -> bool:
    refusal = _librdkafka_refusal({key: "1", "logger": _quiet_logger()})
    return key in SHELL_PROPERTIES or refusal is None or not refusal.startswith(UNKNOWN_PROPERTY)


def _quiet_logger():
    import logging
    quiet = logging.getLogger("kafka_shell.validate")
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return quiet


def _librdkafka_refusal(conf: dict[str, Any]) -> str | None:
    """librdkafka's reason for refusing these settings, or None when it takes them (a client
    without bootstrap servers only parses its settings: nothing is sent)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    try:
        AdminClient(conf)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        text = err.str() if hasattr(err, "str") else str(err)
        return text.removeprefix("Failed to create admin client: ")
    return None
