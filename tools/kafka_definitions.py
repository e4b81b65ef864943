"""Generates kafka_shell/protocol/definitions/kafka-X.Y.json from Apache Kafka itself, for each release
pinned in .ci/kafka-versions:

- the config definitions (broker and topic keys: type, default, validator, documentation,
  dynamic update mode, synonyms) and the message schemas and field defaults, read from the
  release's jars by tools/KafkaDefinitions.java (compiled with javac: a JDK is needed);
- what its brokers and controllers list in ApiVersions (keys, version ranges, features), asked
  of a real cluster of that release started with tests/real_kafka.py (KRaft, and ZooKeeper mode
  for 3.x).

Message schemas are kept only for the versions a release lists that kio (the codec) lacks, in
kio's own naming, so kafka_shell.protocol.definitions can declare them as kio does; request field
defaults are kept for the fields some version of a request lacks (what a handler reads there).

Run from the repo: .venv/bin/python tools/kafka_definitions.py [--cache DIR]   (about a minute;
--cache keeps what it read from the jars and the clusters for the next run)
Nothing of Kafka is committed but the generated data.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import typing
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kio.index import load_request_schema, load_response_schema  # noqa: E402
from kio.schema.index import api_key_map, schema_name_map  # noqa: E402

from tests.real_kafka import RealKafka, kafka_libs, pinned_versions  # noqa: E402

OUT = REPO / "kafka_shell" / "protocol" / "definitions"
SIDES = ("request", "response")


# -- Kafka's jars ---------------------------------------------------------------------------------

def dump(version: str) -> dict:
    """What tools/KafkaDefinitions.java reads from the release's jars."""
    libs = kafka_libs(version)
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", f"{libs}/*",
                        str(REPO / "tools" / "KafkaDefinitions.java")], check=True, capture_output=True)
        done = subprocess.run(["java", "-cp", f"{classes}:{libs}/*", "KafkaDefinitions"],
                              check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


# -- a real cluster's ApiVersions --------------------------------------------------------------------

def api_versions(port: int, version: int) -> dict:
    from kafka_shell.protocol import codec
    cls = codec.request_schema(18, version)
    request = codec.build(cls, {"client_software_name": "kafka-definitions", "client_software_version": "1"})
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(codec.encode_request(request, 1, "kafka-definitions"))
        size = struct.unpack(">i", _read(s, 4))[0]
        body = _read(s, size)
    _, answer = codec.decode_response(codec.response_schema(18, version), body)
    return codec.to_dict(answer)  # type: ignore[return-value]


def _read(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def observe(version: str) -> dict:
    """ApiVersions of each listener kind of a real cluster of this release."""
    kinds: dict[str, dict] = {}
    modes = ["kraft", "zk"] if version.startswith("3.") else ["kraft"]
    for mode in modes:
        with RealKafka(version, mode=mode, controllers=1, brokers=1) as cluster:
            for node in cluster.nodes.values():
                if node.roles == "zookeeper":
                    continue
                kind = ("zk_broker" if mode == "zk" else "broker") if node.is_broker else "controller"
                kinds[kind] = {v: api_versions(node.port, v) for v in (3, 4)}
    return kinds


def features(answers: dict) -> dict:
    v4, v3 = answers["4"], answers["3"]
    supported = [[f["name"], f["min_version"], f["max_version"]] for f in v4["supported_features"]]
    return {
        "supported": supported,
        "finalized": [[f["name"], f["max_version_level"]] for f in v4["finalized_features"]],
        # Kafka 4.x leaves features whose lowest level is 0 out of v3 answers (older clients
        # could not parse them); 3.9 lists them all.
        "v3_hides_min_zero": len(v3["supported_features"]) < len(supported),
    }


# -- message schemas in kio's naming ----------------------------------------------------------------

JAVA_TYPES = {"INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64", "UINT16": "uint16",
              "UNSIGNED_INT32": "uint32", "FLOAT64": "float64", "BOOLEAN": "bool", "UUID": "uuid"}


def kafka_type(java: dict, name: str) -> str:
    t = java["type"]
    if t in JAVA_TYPES:
        return "error_code" if t == "INT16" and name.endswith("error_code") else JAVA_TYPES[t]
    for word in ("STRING", "BYTES", "RECORDS"):
        if word in t:
            return word.lower()
    raise ValueError(f"no kio type for {t}")


def kio_versions(key: int) -> set[int]:
    return set(schema_name_map[api_key_map[key]]) if key in api_key_map else set()


def kio_class(key: int, side: str, version: int) -> type:
    return (load_request_schema if side == "request" else load_response_schema)(key, version)


def _split(java_fields: list[dict]) -> tuple[list[dict], dict[int, dict]]:
    plain = [f for f in java_fields if "tagged" not in f]
    tagged = {int(t): f for x in java_fields if "tagged" in x for t, f in x["tagged"].items()}
    return plain, tagged


def _kio_fields(cls: type) -> tuple[list, dict[int, typing.Any]]:
    fields = dataclasses.fields(cls)
    plain = [f for f in fields if "tag" not in f.metadata]
    tagged = {f.metadata["tag"]: f for f in fields if "tag" in f.metadata}
    return plain, tagged


def _nested(field: dataclasses.Field) -> type | None:
    """The entity class of a struct or array-of-structs field."""
    tp = field.type
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, __import__("types").UnionType):
        tp = next(a for a in args if a is not type(None))
        args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple:
        tp = args[0]
    return tp if isinstance(tp, type) and dataclasses.is_dataclass(tp) else None


@dataclasses.dataclass
class Naming:
    """What kio calls each field and struct of one API's messages, learnt by walking kio's
    classes beside Kafka's schemas of the same version: path of Java names -> kio name, kafka
    type, and struct class name."""
    names: dict[tuple, str] = dataclasses.field(default_factory=dict)
    types: dict[tuple, str] = dataclasses.field(default_factory=dict)
    structs: dict[tuple, str] = dataclasses.field(default_factory=dict)
    java_of: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)  # (kio class, kio field) -> Java name

    def learn(self, cls: type, java_fields: list[dict], path: tuple = ()) -> None:
        self.structs[path] = cls.__name__
        jplain, jtagged = _split(java_fields)
        kplain, ktagged = _kio_fields(cls)
        if len(jplain) != len(kplain) or set(jtagged) != set(ktagged):
            raise ValueError(f"{cls.__name__}: kio's fields do not line up with Kafka's at {path}")
        pairs = list(zip(jplain, kplain)) + [(jtagged[t], ktagged[t]) for t in jtagged]
        for java, kfield in pairs:
            here = (*path, java["name"])
            self.names[here] = kfield.name
            self.types[here] = kfield.metadata["kafka_type"] if "kafka_type" in kfield.metadata else "struct"
            self.java_of[(cls.__name__, kfield.name)] = java["name"]
            inner = _nested(kfield)
            struct = java if java["type"] == "STRUCT" else java.get("items") if java.get("items", {}).get("type") == "STRUCT" else None
            if inner is not None and struct is not None:
                self.learn(inner, struct["fields"], here)


def kio_schema(java_fields: list[dict], naming: Naming, name: str, flexible: bool, path: tuple = ()) -> dict:
    """A message version kio lacks, described in kio's naming (built into classes at run time
    by kafka_shell.protocol.definitions)."""
    out = []
    jplain, jtagged = _split(java_fields)
    for tag, java in [(None, f) for f in jplain] + sorted(jtagged.items()):
        here = (*path, java["name"])
        array = "items" in java
        element = java["items"] if array else java
        field: dict = {"name": naming.names.get(here, java["name"]), "nullable": java["nullable"], "array": array,
                       "tag": tag}
        if element["type"] == "STRUCT":
            struct_name = naming.structs.get(here) or "".join(p.title() for p in java["name"].split("_"))
            field["struct"] = kio_schema(element["fields"], naming, struct_name, flexible, here)
        else:
            known = naming.types.get(here)
            field["kafka_type"] = known if known and known != "struct" else kafka_type(element, java["name"])
        out.append(field)
    return {"name": name, "flexible": flexible, "fields": out}


def is_flexible(java_fields: list[dict]) -> bool:
    return any("tagged" in f for f in java_fields)


def naming_of(api: dict) -> dict[str, Naming]:
    key = api["key"]
    naming = {side: Naming() for side in SIDES}
    for side in SIDES:
        for v in sorted(kio_versions(key)):
            if str(v) in api[side]:
                try:
                    naming[side].learn(kio_class(key, side, v), api[side][str(v)])
                except ValueError as exc:  # kio built this version from another release's schema
                    print(f"  note: {api['name']} {side} v{v}: {exc}", file=sys.stderr)
    return naming


def missing_versions(api: dict, listed: dict[int, tuple[int, int]]) -> dict:
    """The schemas of the versions a release lists that kio lacks, in kio's naming (an API kio
    has no version of, such as the ZooKeeper-mode inter-broker APIs or UnregisterController,
    keeps Kafka's own field names, which are kio's too)."""
    key = api["key"]
    have = kio_versions(key)
    naming = naming_of(api)
    wanted = range(listed[key][0], listed[key][1] + 1) if key in listed else range(0)
    schemas: dict = {}
    for side in SIDES:
        for v in wanted:
            if v in have or str(v) not in api[side]:
                continue
            java = api[side][str(v)]
            top = f"{api['name']}{side.title()}"
            schemas.setdefault(side, {})[str(v)] = kio_schema(java, naming[side], top, is_flexible(java))
    return schemas


def request_defaults(key: int, releases: list[dict], generated: list[dict]) -> dict:
    """Kafka's default of every request field that some version of its struct lacks, by kio
    class and field name, with its kio type (kafka_shell.protocol.definitions puts it on the classes
    that lack the field). `releases`: the API's dumps, newest release first; `generated`: the
    request schemas of versions kio lacks."""
    if not kio_versions(key) and not generated:
        return {}
    versions: dict[str, list[set[str]]] = {}   # class -> field-name sets of its versions
    types: dict[tuple[str, str], str] = {}

    def collect(cls: type) -> None:
        versions.setdefault(cls.__name__, []).append({f.name for f in dataclasses.fields(cls)})
        for f in dataclasses.fields(cls):
            inner = _nested(f)
            types[(cls.__name__, f.name)] = "struct" if inner is not None else f.metadata["kafka_type"]
            if inner is not None:
                collect(inner)

    def collect_generated(schema: dict) -> None:
        versions.setdefault(schema["name"], []).append({f["name"] for f in schema["fields"]})
        for f in schema["fields"]:
            types.setdefault((schema["name"], f["name"]), "struct" if "struct" in f else f["kafka_type"])
            if "struct" in f:
                collect_generated(f["struct"])

    for v in sorted(kio_versions(key)):
        collect(kio_class(key, "request", v))
    for schema in generated:
        collect_generated(schema)
    namings = [naming_of(api)["request"] for api in releases]
    out: dict = {}
    for cls_name, fields in versions.items():
        for name in sorted(set.union(*fields) - set.intersection(*fields)):
            for api, naming in zip(releases, namings):
                java_defaults = api["request_defaults"]
                java_cls = cls_name + "Data" if cls_name + "Data" in java_defaults else cls_name
                camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), naming.java_of.get((cls_name, name), name))
                # Case aside: kio's is_kraft_controller is Kafka's isKRaftController. A struct of an
                # API kio lacks is named after its field, not Kafka's class: any class of the API
                # with that field, when they agree on its default.
                classes = [java_cls] if java_cls in java_defaults else list(java_defaults)
                found = {str(fields[n]) for c in classes for fields in [java_defaults[c]] for n in fields
                         if n.lower() == camel.lower()}
                if len(found) == 1:
                    value = next(v for c in classes for n, v in java_defaults[c].items() if n.lower() == camel.lower())
                    kind = types[(cls_name, name)]
                    out.setdefault(cls_name, {})[name] = {"type": kind, "value": None if value == "<struct>" else value}
                    break
            else:
                raise ValueError(f"no Kafka default for {cls_name}.{name} of API {key}")
    return out


# -- configs --------------------------------------------------------------------------------------------

def validator(v: dict | None) -> dict | None:
    """Kafka's validator as the checks kafka_shell.protocol.definitions makes: bounds, choices, or just
    Kafka's own description of it."""
    if v is None:
        return None
    out: dict = {"kind": v["class"], "text": v["text"]}
    if v["class"] == "Range":
        out.update(min=v.get("min"), max=v.get("max"))
    elif v["class"] in ("ValidString", "CaseInsensitiveValidString"):
        out["choices"] = v.get("validStrings") or []
    elif v["class"] == "ValidList":
        out["choices"] = (v.get("validString") or {}).get("validStrings") or []
        out["empty_allowed"] = v.get("isEmptyAllowed", True)
    return out


def config(c: dict, broker: bool) -> dict:
    out = {"name": c["name"], "type": c["type"], "default": c["default"], "validator": validator(c["validator"]),
           "doc": c["doc"]}
    if c["internal"]:
        out["internal"] = True
    if broker:
        out["mode"] = c["mode"]
        if c["synonyms"] != [c["name"]]:
            out["synonyms"] = c["synonyms"]
    elif c["synonym"]:
        out["synonym"] = c["synonym"]
    return out


# -- the releases ---------------------------------------------------------------------------------------

def listed_ranges(apis: dict) -> dict[int, tuple[int, int]]:
    listed: dict[int, tuple[int, int]] = {}
    for ranges in apis.values():
        for k, (lo, hi) in ranges.items():
            old = listed.get(int(k), (lo, hi))
            listed[int(k)] = (min(lo, old[0]), max(hi, old[1]))
    return listed


def api_ranges(kinds: dict) -> dict:
    return {kind: {str(k["api_key"]): [k["min_version"], k["max_version"]] for k in answers["4"]["api_keys"]}
            for kind, answers in kinds.items()}


def release(version: str, jars: dict, kinds: dict) -> dict:
    apis = api_ranges(kinds)
    return {
        "release": version,
        "apis": apis,
        "features": {kind: features(answers) for kind, answers in kinds.items()},
        "api_names": {str(a["key"]): a["name"] for a in jars["apis"]},
        # The versions Kafka parses (ApiVersions may list more: 4.x lists Produce v0-v2 for old
        # clients' sake but closes the connection on them, KAFKA-18659).
        "valid": {str(a["key"]): [a["oldest"], a["latest"]] for a in jars["apis"] if str(a["key"]) in
                  {k for ranges in apis.values() for k in ranges}},
        "broker_configs": [config(c, True) for c in jars["broker_configs"]],
        # Dynamic-only broker keys (the replication throttles): described only once set.
        "dynamic_only_broker_configs": [config(c, True) for c in jars["dynamic_only_broker_configs"]],
        "topic_configs": [config(c, False) for c in jars["topic_configs"]],
        "dynamic_security_configs": jars["dynamic_security_configs"],
    }


def write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")


def cached(cache: Path | None, name: str, make: typing.Callable[[], dict]) -> dict:
    """make(), kept in `cache` (--cache DIR) so a rerun need not start the clusters again."""
    path = cache / f"{name}.json" if cache else None
    if path is not None and path.exists():
        return json.loads(path.read_text())
    data = make()
    if path is not None:
        path.write_text(json.dumps(data))
    return json.loads(json.dumps(data))  # the same whether cached or not: string keys


def main() -> int:
    cache = Path(sys.argv[sys.argv.index("--cache") + 1]) if "--cache" in sys.argv else None
    versions = sorted(pinned_versions().values(), key=lambda v: [int(p) for p in v.split(".")], reverse=True)
    jars = {v: cached(cache, f"jars-{v}", lambda v=v: dump(v)) for v in versions}
    observed = {v: cached(cache, f"observed-{v}", lambda v=v: observe(v)) for v in versions}
    for v in versions:
        data = release(v, jars[v], observed[v])
        path = OUT / f"kafka-{'.'.join(v.split('.')[:2])}.json"
        write(path, data)
        print(f"{path.relative_to(REPO)}: Kafka {v}, {len(data['broker_configs'])} broker and "
              f"{len(data['topic_configs'])} topic configs")
    # The message versions kio lacks, of every release (the oldest first: a newer one wins).
    messages: dict = {}
    for v in reversed(versions):
        listed = listed_ranges(api_ranges(observed[v]))
        for api in jars[v]["apis"]:
            for side, schemas in missing_versions(api, listed).items():
                messages.setdefault(str(api["key"]), {}).setdefault(side, {}).update(schemas)
    # One file per API: a command line reads the schemas of the APIs it uses, not all 120 KB.
    shutil.rmtree(OUT / "messages", ignore_errors=True)
    (OUT / "messages").mkdir()
    for key, sides in messages.items():
        write(OUT / "messages" / f"{key}.json", sides)
    print(f"{(OUT / 'messages').relative_to(REPO)}/: "
          f"{sum(len(s) for a in messages.values() for s in a.values())} message versions kio lacks")
    defaults = {}
    for key in sorted({a["key"] for v in versions for a in jars[v]["apis"]}):
        dumps = [a for v in versions for a in jars[v]["apis"] if a["key"] == key]
        generated = list(messages.get(str(key), {}).get("request", {}).values())
        if got := request_defaults(key, dumps, generated):
            defaults[str(key)] = got
    write(OUT / "request-defaults.json", defaults)
    print(f"{(OUT / 'request-defaults.json').relative_to(REPO)}: defaults of {sum(len(c) for a in defaults.values() for c in a.values())} fields")
    return 0


if __name__ == "__main__":
    sys.exit(main())
