"""ACLs (kafka-acls), SCRAM users and client quotas (kafka-configs --entity-type users|clients|ips).

describe-acls, create-acls, delete-acls; describe-user-scram-credentials,
alter-user-scram-credentials; describe-client-quotas, alter-client-quotas. Requests go on the
shell's own channel through the admin layer (kafka_shell/admin/acls.py, scram.py, quotas.py).
A SCRAM password is read from --password-file, --password-env or a prompt: never from the
command line, never printed.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import sys
from typing import TYPE_CHECKING

from kafka_shell.admin import acls, quotas, scram
from kafka_shell.admin.acls import CLUSTER_NAME, Binding, PatternType
from kafka_shell.admin.acls import Operation as Op
from kafka_shell.admin.acls import Permission as Perm
from kafka_shell.admin.acls import ResourceType as Res
from kafka_shell.base.errors import UsageError, printable, shown
from kafka_shell.base.files import read_text
from kafka_shell.base.limits import MAX_STRING_BYTES
from kafka_shell.declarations import failure_lines
from kafka_shell.declarations.option_types import CONFIG_NAME
from kafka_shell.declarations.registry import INT32_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")   # controls, and bytes that are not UTF-8
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
RESOURCE_OPTIONS = {"topic": Res.TOPIC, "group": Res.GROUP, "transactional_id": Res.TRANSACTIONAL_ID}
OPERATIONS = tuple(o.name for o in Op if o not in (Op.UNKNOWN, Op.ANY))
PATTERN_TYPES = ("LITERAL", "PREFIXED", "MATCH", "ANY")


# -- names on the command line ----------------------------------------------------------------


def acl_operation(text: str) -> Op:
    """An operation as kafka-acls takes it: Read, read, DESCRIBE_CONFIGS, DescribeConfigs."""
    wanted = text.replace("-", "").replace("_", "").upper()
    for o in Op:
        if o.name.replace("_", "") == wanted and o not in (Op.UNKNOWN, Op.ANY):
            return o
    raise ValueError(f"an operation ({', '.join(OPERATIONS)})")


def any_name(text: str) -> str:
    """A group, transactional id, user or client id: any printable text Kafka can carry."""
    if not text or _UNPRINTABLE.search(text) or len(text.encode("utf-8", "surrogatepass")) > MAX_STRING_BYTES:
        raise ValueError(f"a name: printable text, 1 to {MAX_STRING_BYTES} bytes")
    return text


def acl_topic(text: str) -> str:
    """A topic name (or prefix) for an ACL, or `*` for every topic."""
    if text != "*" and not _TOPIC.fullmatch(text):
        raise ValueError("a topic name or prefix (up to 249 letters, digits, '.', '_' or '-'), or * for all")
    return text


def principal_text(text: str) -> str:
    """A Kafka principal, TYPE:NAME (User:alice, User:*)."""
    kind, sep, rest = text.partition(":")
    if not sep or not kind or not rest or _UNPRINTABLE.search(text) or len(text) > MAX_STRING_BYTES:
        raise ValueError("a principal such as User:alice or User:*")
    return text


def acl_host(text: str) -> str:
    """An ACL host: an IP address (the client's address is what Kafka matches), or * for any."""
    if text != "*":
        try:
            ipaddress.ip_address(text)
        except ValueError:
            raise ValueError("an IP address, or * for any host") from None
    return text


def acl_pattern(text: str) -> PatternType:
    try:
        return PatternType[text.upper()]
    except KeyError:
        raise ValueError(f"a pattern type ({', '.join(PATTERN_TYPES)})") from None


RESOURCE = (
    Option("--topic", type=acl_topic, repeatable=True, metavar="NAME", completer="acl_resource",
           help="Topic resource (repeatable; * for every topic)."),
    Option("--group", type=any_name, repeatable=True, metavar="NAME", completer="acl_resource",
           help="Group resource (repeatable; * for every group)."),
    Option("--cluster", flag=True, help="The cluster resource."),
    Option("--transactional-id", type=any_name, repeatable=True, metavar="ID", completer="acl_resource",
           help="Transactional id resource (repeatable)."),
)
PRINCIPALS = (
    Option("--allow-principal", type=principal_text, repeatable=True, metavar="TYPE:NAME", completer="principal",
           help="Principal to allow, e.g. User:alice (repeatable)."),
    Option("--deny-principal", type=principal_text, repeatable=True, metavar="TYPE:NAME", completer="principal",
           help="Principal to deny (repeatable)."),
    Option("--allow-host", type=acl_host, repeatable=True, metavar="IP",
           help="Address the allow principals may connect from (default *: any)."),
    Option("--deny-host", type=acl_host, repeatable=True, metavar="IP",
           help="Address the deny principals are denied from (default *: any)."),
    Option("--operation", type=acl_operation, repeatable=True, metavar="OP",
           help=f"Operation (repeatable): {', '.join(OPERATIONS)}."),
)


def _resources(args: dict, default_any: bool = False) -> list[tuple[Res, str | None]]:
    found: list[tuple[Res, str | None]] = [(kind, n) for opt, kind in RESOURCE_OPTIONS.items()
                                           for n in args.get(opt) or ()]
    if args.get("cluster"):
        found.append((Res.CLUSTER, CLUSTER_NAME))
    if not found and default_any:
        return [(Res.ANY, None)]
    return found


def _check_operations(resources: list[tuple[Res, str | None]], operations: list[Op]) -> None:
    for kind, _ in resources:
        problem = acls.unsupported_operation(kind, operations)
        if problem:
            raise UsageError(problem)


def _pattern(args: dict, default: PatternType) -> PatternType:
    text = args.get("resource_pattern_type")
    return acl_pattern(text) if text else default


# -- ACLs -------------------------------------------------------------------------------------


def _describe(session: Session, kind: Res, name: str | None, pattern: PatternType,
              principal: str | None = None) -> list[list]:
    wanted = Binding(kind, name, pattern, principal, None, Op.ANY, Perm.ANY)
    return sorted(b.row() for b in acls.describe(session.conn, wanted))


@command("describe-acls", *RESOURCE,
         Option("--resource-pattern-type", metavar="TYPE", choices=PATTERN_TYPES,
                help="LITERAL, PREFIXED, MATCH (every ACL that applies to the name) or ANY (default)."),
         Option("--principal", type=principal_text, metavar="TYPE:NAME", completer="principal",
                help="Only the ACLs of this principal."),
         help="List ACLs (all, or those of the resources and principal given).",
         examples=("describe-acls", "describe-acls --topic orders --resource-pattern-type MATCH",
                   "describe-acls --principal User:alice"), tables=("acls",))
def describe_acls(session: Session, args: dict) -> Result:
    pattern = _pattern(args, PatternType.ANY)
    rows: list[list] = []
    for kind, name in _resources(args, default_any=True):
        rows += [r for r in _describe(session, kind, name, pattern, args["principal"]) if r not in rows]
    session.acl_names.remember(rows)
    if not rows:
        return Result(tables=[Table(acls.COLUMNS, [], name="acls")], messages=["No ACLs found."])
    return Result(tables=[Table(acls.COLUMNS, rows, name="acls")])


def _bindings(args: dict) -> list[Binding]:
    """The bindings create-acls adds: each resource x principal x host x operation, or with
    --producer / --consumer the operations kafka-acls gives them."""
    resources = _resources(args)
    pattern = _pattern(args, PatternType.LITERAL)
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError("--resource-pattern-type must be LITERAL or PREFIXED to create ACLs")
    allow, deny = args["allow_principal"] or [], args["deny_principal"] or []
    if not allow and not deny:
        raise UsageError("Give --allow-principal or --deny-principal (e.g. --allow-principal User:alice)")
    ops_for: dict[Res, list[Op]] = {}
    if args.get("producer") or args.get("consumer"):
        if args["operation"]:
            raise UsageError("--operation cannot be used with --producer or --consumer")
        if not args["topic"]:
            raise UsageError("--producer and --consumer need --topic")
        if args.get("consumer") and not args["group"]:
            raise UsageError("--consumer needs --group (the consumer group it reads with)")
        if args.get("producer"):
            ops_for.setdefault(Res.TOPIC, []).extend([Op.WRITE, Op.DESCRIBE, Op.CREATE])
            ops_for.setdefault(Res.TRANSACTIONAL_ID, []).extend([Op.WRITE, Op.DESCRIBE])
        if args.get("consumer"):
            ops_for.setdefault(Res.TOPIC, []).extend([Op.READ, Op.DESCRIBE])
            ops_for.setdefault(Res.GROUP, []).append(Op.READ)
        other = next((kind for kind, _ in resources if kind not in ops_for), None)
        if other is not None:
            raise UsageError(f"--producer and --consumer give no operations on {other.name}: "
                             "use --operation for it in another create-acls")
    elif not resources:
        raise UsageError("Give a resource: --topic, --group, --cluster or --transactional-id")
    else:
        _check_operations(resources, args["operation"] or [])
    out: list[Binding] = []
    for kind, resource in resources:
        ops = list(dict.fromkeys(ops_for.get(kind, []))) if ops_for else (args["operation"] or [Op.ALL])
        for permission, principals, hosts in ((Perm.ALLOW, allow, args["allow_host"]),
                                              (Perm.DENY, deny, args["deny_host"])):
            for who in principals:
                for where in hosts or ["*"]:
                    for op in ops:
                        b = Binding(kind, resource, pattern, who, where, op, permission)
                        if b not in out:
                            out.append(b)
    return out


@command("create-acls", *RESOURCE, *PRINCIPALS,
         Option("--resource-pattern-type", metavar="TYPE", choices=("LITERAL", "PREFIXED"),
                help="LITERAL (default) or PREFIXED: the names are prefixes."),
         Option("--producer", flag=True, help="Producer ACLs: WRITE, DESCRIBE, CREATE on the topics."),
         Option("--consumer", flag=True, help="Consumer ACLs: READ, DESCRIBE on the topics, READ on the group."),
         mutates=True, exclusive_groups=(("--producer", "--operation"),),
         help="Add ACLs (kafka-acls --add).",
         examples=("create-acls --allow-principal User:alice --operation Read --topic orders",
                   "create-acls --allow-principal User:app --consumer --topic orders --group billing",
                   "create-acls --deny-principal User:bob --operation All --topic secret- "
                   "--resource-pattern-type PREFIXED"), tables=("acls",))
def create_acls(session: Session, args: dict) -> Result:
    bindings = _bindings(args)
    table = Table(acls.COLUMNS, [b.row() for b in bindings], name="acls")
    session.acl_names.remember(table.rows)
    if args["dry_run"]:
        return Result(tables=[table], messages=[f"Would add {len(bindings)} ACL(s) (dry run)."])
    added = acls.create(session.conn, bindings)
    if not added.errors:
        return Result(tables=[table], messages=[f"Added {len(bindings)} ACL(s)."])
    table.rows = [b.row() for b in added.rows]
    return Result.outcome([table], [f"Added {len(added.rows)} of {len(bindings)} ACL(s)."] if added.rows else [],
                          failure_lines.acl_lines(added))


@command("delete-acls", *RESOURCE, *PRINCIPALS,
         Option("--resource-pattern-type", metavar="TYPE", choices=PATTERN_TYPES,
                help="LITERAL (default), PREFIXED, MATCH or ANY."),
         mutates=True, confirm=Confirm(proposed=True),
         help="Remove ACLs (kafka-acls --remove): those matching the resources, principals and operations "
              "given; asks for confirmation naming them (--yes outside the REPL).",
         examples=("delete-acls --topic orders", "delete-acls --allow-principal User:alice --topic orders",
                   "delete-acls --topic secret- --resource-pattern-type PREFIXED --yes"), tables=("acls",))
def delete_acls(session: Session, args: dict) -> Result | Proposal:
    resources = _resources(args)
    if not resources:
        raise UsageError("Give a resource: --topic, --group, --cluster or --transactional-id")
    pattern = _pattern(args, PatternType.LITERAL)
    ops = args["operation"] or [Op.ANY]
    _check_operations(resources, ops)
    filters: list[Binding] = []
    for kind, resource in resources:
        entries: list[tuple[str | None, str | None, Perm]] = [
            *[(p, h, Perm.ALLOW) for p in args["allow_principal"] or [] for h in args["allow_host"] or [None]],
            *[(p, h, Perm.DENY) for p in args["deny_principal"] or [] for h in args["deny_host"] or [None]]]
        for who, where, permission in entries or [(None, None, Perm.ANY)]:
            for op in ops:
                f = Binding(kind, resource, pattern, who, where, op, permission)
                if f not in filters:
                    filters.append(f)
    # What would go, read first: the confirmation and the dry run name it.
    doomed = _matching(session, filters)
    session.acl_names.remember(doomed)
    table = Table(acls.COLUMNS, doomed, name="acls")
    if not doomed:
        return Result(tables=[table], messages=["No ACLs match: nothing to delete."])
    if args["dry_run"]:
        return Result(tables=[table], messages=[f"Would delete {len(doomed)} ACL(s) (dry run)."])
    listing = "; ".join(" ".join(map(str, r)) for r in doomed)

    def delete() -> Result:
        deleted = sorted(b.row() for b in acls.delete(session.conn, filters))
        return Result(tables=[Table(acls.COLUMNS, deleted, name="acls")], messages=[f"Deleted {len(deleted)} ACL(s)."])
    return Proposal(f"Delete {len(doomed)} ACL(s): {listing}?",
                    f"delete-acls would delete {len(doomed)} ACL(s) ({printable(listing)})", delete)


def _matching(session: Session, filters: list[Binding]) -> list[list]:
    rows: list[list] = []
    for f in filters:
        for b in acls.describe(session.conn, f):
            row = b.row()
            if row not in rows:
                rows.append(row)
    return sorted(rows)


# -- SCRAM users ------------------------------------------------------------------------------


@command("describe-user-scram-credentials",
         Option("--user", type=any_name, repeatable=True, metavar="NAME", help="Only these users (repeatable)."),
         help="List SCRAM users with their mechanisms and iterations (never the credentials).",
         examples=("describe-user-scram-credentials", "describe-user-scram-credentials --user alice"), tables=("scram_credentials",))
def describe_user_scram_credentials(session: Session, args: dict) -> Result:
    rows = [list(c) for c in scram.describe(session.conn, args["user"])]
    table = Table(["User", "Mechanism", "Iterations"], rows, name="scram_credentials")
    return Result(tables=[table], messages=[] if rows else ["No SCRAM users."])


def _password(session: Session, args: dict) -> str:
    password = _read_password(session, args)
    if not password:
        raise UsageError("The password is empty: nothing changed")
    return password


def _read_password(session: Session, args: dict) -> str:
    if args["password_file"]:
        return read_text(args["password_file"], "--password-file").rstrip("\r\n")
    if args["password_env"]:
        value = os.environ.get(args["password_env"])
        if value is None:
            raise UsageError(f"--password-env {shown(args['password_env'])}: the variable is not set")
        return value
    if session.interactive and sys.stdin.isatty():
        import getpass
        first = getpass.getpass(f"Password for {args['add']}: ")
        if first != getpass.getpass("Again: "):
            raise UsageError("The passwords differ: nothing changed")
        return first
    raise UsageError("--add needs the password from --password-file F or --password-env VAR "
                     "(or a prompt in the REPL); it is never taken from the command line")


@command("alter-user-scram-credentials",
         Option("--add", type=any_name, metavar="USER", help="Add or replace USER's credential for --mechanism."),
         Option("--delete", type=any_name, metavar="USER", help="Delete USER's credential for --mechanism."),
         Option("--mechanism", choices=tuple(scram.MECHANISMS), required=True, metavar="M",
                help="SCRAM-SHA-256 or SCRAM-SHA-512."),
         Option("--iterations", type=int_range(1, INT32_MAX, "an iteration count"), default=4096, metavar="N",
                help="PBKDF2 iterations, 4096 to 16384 (default 4096)."),
         Option("--password-file", metavar="FILE", completer="path", help="Read the password from FILE."),
         Option("--password-env", type=any_name, metavar="VAR", help="Read the password from environment variable VAR."),
         mutates=True, required_groups=(("--add", "--delete"),),
         exclusive_groups=(("--password-file", "--password-env"),),
         help="Add or delete a SCRAM user (the password is salted here; it never leaves the shell).",
         examples=("alter-user-scram-credentials --add alice --mechanism SCRAM-SHA-512 --password-env ALICE_PW",
                   "alter-user-scram-credentials --delete alice --mechanism SCRAM-SHA-512"))
def alter_user_scram_credentials(session: Session, args: dict) -> Result:
    mechanism = args["mechanism"]
    if args["delete"] is not None:
        if args["password_file"] or args["password_env"]:
            raise UsageError("--delete takes no password")
        user = args["delete"]
        if args["dry_run"]:
            return Result.message(f"Would change the {mechanism} credential of {user} (dry run).")
        scram.delete(session.conn, user, mechanism)
        return Result.message(f"Deleted the {mechanism} credential of {user}.")
    user = args["add"]
    password = _password(session, args)
    if args["dry_run"]:
        return Result.message(f"Would change the {mechanism} credential of {user} (dry run).")
    scram.upsert(session.conn, user, mechanism, password, args["iterations"])
    return Result.message(f"Set the {mechanism} credential of {user} ({args['iterations']} iterations).")


# -- client quotas ----------------------------------------------------------------------------

QUOTA_ENTITY = (
    Option("--entity-type", choices=tuple(quotas.ENTITY_TYPES), repeatable=True, metavar="TYPE",
           help="users, clients or ips (users and clients may be combined)."),
    Option("--entity-name", type=any_name, repeatable=True, metavar="NAME",
           help="The entity's name, one per --entity-type."),
    Option("--entity-default", repeatable=True, flag=False, metavar="TYPE", choices=tuple(quotas.ENTITY_TYPES),
           help="The default entity of TYPE (users, clients or ips)."),
)


def _entity(args: dict) -> list[tuple[str, str | None]]:
    """The entity alter-client-quotas changes: (type, name; None for the default) pairs."""
    types = args["entity_type"] or []
    names = args["entity_name"] or []
    if len(names) != len(types):
        raise UsageError("Give one --entity-name for each --entity-type (or --entity-default TYPE)")
    out: list[tuple[str, str | None]] = [(quotas.ENTITY_TYPES[t], n) for t, n in zip(types, names)]
    out += [(quotas.ENTITY_TYPES[t], None) for t in args["entity_default"] or []]
    return out


@command("describe-client-quotas", *QUOTA_ENTITY,
         help="Show client quotas (all, or those of an entity).",
         examples=("describe-client-quotas", "describe-client-quotas --entity-type users --entity-name alice"), tables=("client_quotas",))
def describe_client_quotas(session: Session, args: dict) -> Result:
    components: list[tuple[str, int, str | None]] = []
    named = len(args["entity_name"] or [])
    if named > len(args["entity_type"] or []):
        raise UsageError("Each --entity-name needs an --entity-type before it (users, clients or ips)")
    for i, t in enumerate(args["entity_type"] or []):
        if i < named:
            components.append((quotas.ENTITY_TYPES[t], quotas.EXACT, args["entity_name"][i]))
        else:  # a type without a name: every named entity of it
            components.append((quotas.ENTITY_TYPES[t], quotas.ANY_NAMED, None))
    components += [(quotas.ENTITY_TYPES[t], quotas.DEFAULT, None) for t in args["entity_default"] or []]
    rows = [[dict(q.entity), q.key, q.value] for q in quotas.describe(session.conn, components)]
    return Result(tables=[Table(["Entity", "Key", "Value"], rows, name="client_quotas", kinds={"Entity": "entity"})],
                  messages=[] if rows else ["No client quotas."])


def _quota_ops(args: dict) -> list[tuple[str, float | None]]:
    """(key, value to set, or None to remove) in the order given."""
    ops: list[tuple[str, float | None]] = []
    for item in (args["add_config"] or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        try:
            number: float | None = float(value)
        except ValueError:
            number = None
        if not sep or number is None or not math.isfinite(number) or not CONFIG_NAME.fullmatch(key.strip()):
            raise UsageError(f'Invalid --add-config item "{shown(item)}": use key=number, e.g. producer_byte_rate=1048576')
        ops.append((key.strip(), number))
    for key in (args["delete_config"] or "").split(","):
        if key.strip() and not CONFIG_NAME.fullmatch(key.strip()):
            raise UsageError(f'Invalid --delete-config key "{shown(key)}": use quota names, e.g. producer_byte_rate')
        if key.strip():
            ops.append((key.strip(), None))
    if not ops:
        raise UsageError("Give --add-config k=v,... or --delete-config k,...")
    return ops


@command("alter-client-quotas", *QUOTA_ENTITY,
         Option("--add-config", metavar="K=V,...", help="Quotas to set, e.g. producer_byte_rate=1048576."),
         Option("--delete-config", metavar="K,...", help="Quotas to remove."),
         mutates=True,
         help="Set or remove client quotas of users, clients (client ids) or ips (kafka-configs).",
         examples=("alter-client-quotas --entity-type users --entity-name alice --add-config producer_byte_rate=1048576",
                   "alter-client-quotas --entity-default clients --delete-config consumer_byte_rate"))
def alter_client_quotas(session: Session, args: dict) -> Result:
    entity = _entity(args)
    if not entity:
        raise UsageError("Give the entity: --entity-type TYPE --entity-name NAME, or --entity-default TYPE")
    ops = _quota_ops(args)
    label = ", ".join(f"{t}={n if n is not None else '<default>'}" for t, n in entity)
    quotas.alter(session.conn, entity, ops, bool(args["dry_run"]))
    if args["dry_run"]:
        return Result.message(f"The quotas of {label} would change (validated, dry run).")
    return Result.message(f"Updated the quotas of {label}.")
