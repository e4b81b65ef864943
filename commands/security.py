"""ACLs (kafka-acls), SCRAM users and client quotas (kafka-configs --entity-type users|clients|ips).

describe-acls, create-acls, delete-acls; describe-user-scram-credentials,
alter-user-scram-credentials; describe-client-quotas, alter-client-quotas. Requests go on the
direct channel; shared logic (names, the authorization messages) is in `kafka_shell.acl`.
A SCRAM password is read from --password-file, --password-env or a prompt: never from the
command line, never printed.
"""

from __future__ import annotations

import math
import os
import sys
from typing import TYPE_CHECKING

from kafka_shell import acl
from kafka_shell.codes import AclOperation as Op
from kafka_shell.codes import AclPermission, AclResourceType as Res, ApiKey, PatternType, QuotaMatch, ScramMechanism
from kafka_shell.errors import KafkaCallError, UsageError, printable, shown
from kafka_shell.files import read_text
from kafka_shell.operations import debug, error_line, response_error
from kafka_shell.option_types import CONFIG_NAME
from kafka_shell.registry import INT32_MAX, Option, command, int_range
from kafka_shell.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.session import Session

RESOURCE = (
    Option("--topic", type=acl.topic, repeatable=True, metavar="NAME", completer="acl_resource",
           help="Topic resource (repeatable; * for every topic)."),
    Option("--group", type=acl.name, repeatable=True, metavar="NAME", completer="acl_resource",
           help="Group resource (repeatable; * for every group)."),
    Option("--cluster", flag=True, help="The cluster resource."),
    Option("--transactional-id", type=acl.name, repeatable=True, metavar="ID", completer="acl_resource",
           help="Transactional id resource (repeatable)."),
)
PRINCIPALS = (
    Option("--allow-principal", type=acl.principal, repeatable=True, metavar="TYPE:NAME", completer="principal",
           help="Principal to allow, e.g. User:alice (repeatable)."),
    Option("--deny-principal", type=acl.principal, repeatable=True, metavar="TYPE:NAME", completer="principal",
           help="Principal to deny (repeatable)."),
    Option("--allow-host", type=acl.host, repeatable=True, metavar="IP",
           help="Address the allow principals may connect from (default *: any)."),
    Option("--deny-host", type=acl.host, repeatable=True, metavar="IP",
           help="Address the deny principals are denied from (default *: any)."),
    Option("--operation", type=acl.operation, repeatable=True, metavar="OP",
           help=f"Operation (repeatable): {', '.join(acl.OPERATIONS)}."),
)


def _resources(args: dict, default_any: bool = False) -> list[tuple[Res, str | None]]:
    found: list[tuple[Res, str | None]] = [(kind, n) for opt, kind in acl.RESOURCE_OPTIONS.items()
                                           for n in args.get(opt) or ()]
    if args.get("cluster"):
        found.append((Res.CLUSTER, acl.CLUSTER_NAME))
    if not found and default_any:
        return [(Res.ANY, None)]
    return found


def _check_operations(resources: list[tuple[Res, str | None]], operations: list[Op]) -> None:
    for kind, _ in resources:
        problem = acl.unsupported_operation(kind, operations)
        if problem:
            raise UsageError(problem)


def _pattern(args: dict, default: PatternType) -> PatternType:
    text = args.get("resource_pattern_type")
    return acl.pattern_type(text) if text else default


QUOTA_PART_ORDER = {"user": 0, "client-id": 1, "ip": 2}   # how a quota entity is written


# -- ACLs -------------------------------------------------------------------------------------


def _describe(session: Session, kind: Res, name: str | None, pattern: PatternType,
              principal: str | None = None) -> list[list]:
    body = {"resource_type_filter": kind, "resource_name_filter": name, "pattern_type_filter": pattern,
            "principal_filter": principal, "host_filter": None, "operation": Op.ANY,
            "permission_type": AclPermission.ANY}
    debug(session, "DescribeAcls request")
    answer = session.conn.any_broker_request(ApiKey.DESCRIBE_ACLS, body)
    if answer.get("error_code"):
        raise response_error(ApiKey.DESCRIBE_ACLS, answer["error_code"], answer.get("error_message"))
    rows = [acl.binding_row(r["resource_type"], r["resource_name"], r.get("pattern_type", PatternType.LITERAL), e)
            for r in answer.get("resources", []) for e in r["acls"]]
    return sorted(rows)


@command("describe-acls", *RESOURCE,
         Option("--resource-pattern-type", metavar="TYPE", choices=acl.PATTERN_TYPES,
                help="LITERAL, PREFIXED, MATCH (every ACL that applies to the name) or ANY (default)."),
         Option("--principal", type=acl.principal, metavar="TYPE:NAME", completer="principal",
                help="Only the ACLs of this principal."),
         help="List ACLs (all, or those of the resources and principal given).",
         examples=("describe-acls", "describe-acls --topic orders --resource-pattern-type MATCH",
                   "describe-acls --principal User:alice"))
def describe_acls(session: Session, args: dict) -> Result:
    pattern = _pattern(args, PatternType.ANY)
    rows: list[list] = []
    for kind, name in _resources(args, default_any=True):
        rows += [r for r in _describe(session, kind, name, pattern, args["principal"]) if r not in rows]
    acl.SEEN.remember(rows)
    if not rows:
        return Result(tables=[Table(acl.ACL_COLUMNS, [], name="acls")], messages=["No ACLs found."])
    return Result(tables=[Table(acl.ACL_COLUMNS, rows, name="acls")])


def _bindings(args: dict) -> list[dict]:
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
    out: list[dict] = []
    for kind, name in resources:
        ops = list(dict.fromkeys(ops_for.get(kind, []))) if ops_for else (args["operation"] or [Op.ALL])
        for permission, principals, hosts in ((AclPermission.ALLOW, allow, args["allow_host"]),
                                              (AclPermission.DENY, deny, args["deny_host"])):
            for p in principals:
                for host in hosts or ["*"]:
                    for op in ops:
                        b = {"resource_type": kind, "resource_name": name, "resource_pattern_type": pattern,
                             "principal": p, "host": host, "operation": op, "permission_type": permission}
                        if b not in out:
                            out.append(b)
    return out


def _row(b: dict) -> list:
    return acl.binding_row(b["resource_type"], b["resource_name"], b["resource_pattern_type"], b)


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
                   "--resource-pattern-type PREFIXED"))
def create_acls(session: Session, args: dict) -> Result:
    bindings = _bindings(args)
    table = Table(acl.ACL_COLUMNS, [_row(b) for b in bindings], name="acls")
    acl.SEEN.remember(table.rows)
    if args["dry_run"]:
        return Result(tables=[table], messages=[f"Would add {len(bindings)} ACL(s) (dry run)."])
    debug(session, f"CreateAcls request: {len(bindings)} ACL(s)")
    answer = session.conn.controller_request(ApiKey.CREATE_ACLS, {"creations": bindings}, mutation=True)
    failed = [(b, r) for b, r in zip(bindings, answer.get("results", [])) if r.get("error_code")]
    if failed:  # each binding succeeds or fails alone: say how many went in, and the first refusal
        b, r = failed[0]
        if acl.is_authorization_error(r["error_code"]):  # the request as a whole was refused
            raise response_error(ApiKey.CREATE_ACLS, r["error_code"])
        why = error_line(ApiKey.CREATE_ACLS, r["error_code"], r.get("error_message"))
        raise KafkaCallError(f"{len(failed)} of {len(bindings)} ACL(s) not added; "
                             f"{' '.join(map(str, _row(b)))}: {why}", code=r["error_code"])
    return Result(tables=[table], messages=[f"Added {len(bindings)} ACL(s)."])


@command("delete-acls", *RESOURCE, *PRINCIPALS,
         Option("--resource-pattern-type", metavar="TYPE", choices=acl.PATTERN_TYPES,
                help="LITERAL (default), PREFIXED, MATCH or ANY."),
         Option("--yes", flag=True, help="Do not ask for confirmation."),
         mutates=True,
         help="Remove ACLs (kafka-acls --remove): those matching the resources, principals and operations "
              "given; asks for confirmation naming them (--yes outside the REPL).",
         examples=("delete-acls --topic orders", "delete-acls --allow-principal User:alice --topic orders",
                   "delete-acls --topic secret- --resource-pattern-type PREFIXED --yes"))
def delete_acls(session: Session, args: dict) -> Result:
    resources = _resources(args)
    if not resources:
        raise UsageError("Give a resource: --topic, --group, --cluster or --transactional-id")
    pattern = _pattern(args, PatternType.LITERAL)
    ops = args["operation"] or [Op.ANY]
    _check_operations(resources, ops)
    filters = []
    for kind, name in resources:
        entries: list[tuple[str | None, str | None, AclPermission]] = [
            *[(p, h, AclPermission.ALLOW) for p in args["allow_principal"] or [] for h in args["allow_host"] or [None]],
            *[(p, h, AclPermission.DENY) for p in args["deny_principal"] or [] for h in args["deny_host"] or [None]]]
        for principal, host, permission in entries or [(None, None, AclPermission.ANY)]:
            for op in ops:
                f = {"resource_type_filter": kind, "resource_name_filter": name, "pattern_type_filter": pattern,
                     "principal_filter": principal, "host_filter": host, "operation": op,
                     "permission_type": permission}
                if f not in filters:
                    filters.append(f)
    # What would go, read first: the confirmation and the dry run name it.
    doomed = _matching(session, filters)
    acl.SEEN.remember(doomed)
    table = Table(acl.ACL_COLUMNS, doomed, name="acls")
    if not doomed:
        return Result(tables=[table], messages=["No ACLs match: nothing to delete."])
    if args["dry_run"]:
        return Result(tables=[table], messages=[f"Would delete {len(doomed)} ACL(s) (dry run)."])
    if not (args["yes"] or session.yes):
        listing = "; ".join(" ".join(map(str, r)) for r in doomed)
        if not session.interactive or session.confirm is None:
            raise UsageError(f"delete-acls would delete {len(doomed)} ACL(s) ({printable(listing)}): "
                             "add --yes to confirm")
        if not session.confirm(f"Delete {len(doomed)} ACL(s): {listing}?"):
            return Result(tables=[table], messages=["Nothing deleted."], exit_code=1)
    debug(session, f"DeleteAcls request: {len(filters)} filter(s)")
    answer = session.conn.controller_request(ApiKey.DELETE_ACLS, {"filters": filters}, mutation=True)
    deleted: list[list] = []
    for r in answer.get("filter_results", []):
        if r.get("error_code"):
            raise response_error(ApiKey.DELETE_ACLS, r["error_code"], r.get("error_message"))
        deleted += [acl.binding_row(m["resource_type"], m["resource_name"], m["pattern_type"], m)
                    for m in r["matching_acls"]]
    return Result(tables=[Table(acl.ACL_COLUMNS, sorted(deleted), name="acls")],
                  messages=[f"Deleted {len(deleted)} ACL(s)."])


def _matching(session: Session, filters: list[dict]) -> list[list]:
    rows: list[list] = []
    for f in filters:
        debug(session, "DescribeAcls request")
        answer = session.conn.any_broker_request(ApiKey.DESCRIBE_ACLS, f)
        if answer.get("error_code"):
            raise response_error(ApiKey.DESCRIBE_ACLS, answer["error_code"], answer.get("error_message"))
        for r in answer.get("resources", []):
            for e in r["acls"]:
                row = acl.binding_row(r["resource_type"], r["resource_name"],
                                      r.get("pattern_type", PatternType.LITERAL), e)
                if row not in rows:
                    rows.append(row)
    return sorted(rows)


# -- SCRAM users ------------------------------------------------------------------------------


@command("describe-user-scram-credentials",
         Option("--user", type=acl.name, repeatable=True, metavar="NAME", help="Only these users (repeatable)."),
         help="List SCRAM users with their mechanisms and iterations (never the credentials).",
         examples=("describe-user-scram-credentials", "describe-user-scram-credentials --user alice"))
def describe_user_scram_credentials(session: Session, args: dict) -> Result:
    users = args["user"]
    debug(session, "DescribeUserScramCredentials request")
    # No users: an empty list, which Kafka reads as "every user" as it does null; but with null a
    # principal without DESCRIBE on the cluster gets no answer at all (Kafka 4.4's error response
    # iterates the null list and fails), instead of CLUSTER_AUTHORIZATION_FAILED.
    answer = session.conn.any_broker_request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                                             {"users": [{"name": u} for u in users or ()]})
    if answer.get("error_code"):
        raise response_error(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, answer["error_code"], answer.get("error_message"))
    rows = []
    for r in answer.get("results", []):
        if r.get("error_code"):
            raise response_error(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, r["error_code"], r.get("error_message"),
                                 entity=f'The SCRAM user "{shown(r["user"])}"')
        for c in r["credential_infos"]:
            mechanism = ScramMechanism(c["mechanism"]).mechanism_name if c["mechanism"] in tuple(ScramMechanism) \
                else str(c["mechanism"])
            rows.append([r["user"], mechanism, c["iterations"]])
    rows.sort(key=lambda row: (row[0], row[1]))   # Kafka answers in no stable order
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
         Option("--add", type=acl.name, metavar="USER", help="Add or replace USER's credential for --mechanism."),
         Option("--delete", type=acl.name, metavar="USER", help="Delete USER's credential for --mechanism."),
         Option("--mechanism", choices=tuple(acl.SCRAM_MECHANISMS), required=True, metavar="M",
                help="SCRAM-SHA-256 or SCRAM-SHA-512."),
         Option("--iterations", type=int_range(1, INT32_MAX, "an iteration count"), default=4096, metavar="N",
                help="PBKDF2 iterations, 4096 to 16384 (default 4096)."),
         Option("--password-file", metavar="FILE", completer="path", help="Read the password from FILE."),
         Option("--password-env", type=acl.name, metavar="VAR", help="Read the password from environment variable VAR."),
         mutates=True, required_groups=(("--add", "--delete"),),
         exclusive_groups=(("--password-file", "--password-env"),),
         help="Add or delete a SCRAM user (the password is salted here; it never leaves the shell).",
         examples=("alter-user-scram-credentials --add alice --mechanism SCRAM-SHA-512 --password-env ALICE_PW",
                   "alter-user-scram-credentials --delete alice --mechanism SCRAM-SHA-512"))
def alter_user_scram_credentials(session: Session, args: dict) -> Result:
    mechanism = args["mechanism"]
    mech_id = acl.SCRAM_MECHANISMS[mechanism]
    if args["delete"] is not None:
        if args["password_file"] or args["password_env"]:
            raise UsageError("--delete takes no password")
        user, body = args["delete"], {"deletions": [{"name": args["delete"], "mechanism": mech_id}], "upsertions": []}
        done = f"Deleted the {mechanism} credential of {user}."
    else:
        user = args["add"]
        password = _password(session, args)
        salt, salted = acl.salted_password(mechanism, password, args["iterations"])
        body = {"deletions": [], "upsertions": [{"name": user, "mechanism": mech_id, "iterations": args["iterations"],
                                                 "salt": salt, "salted_password": salted}]}
        done = f"Set the {mechanism} credential of {user} ({args['iterations']} iterations)."
    if args["dry_run"]:
        return Result.message(f"Would change the {mechanism} credential of {user} (dry run).")
    debug(session, "AlterUserScramCredentials request")
    answer = session.conn.controller_request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body, mutation=True)
    for r in answer.get("results", []):
        if r.get("error_code"):
            raise response_error(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, r["error_code"], r.get("error_message"))
    return Result.message(done)


# -- client quotas ----------------------------------------------------------------------------

QUOTA_ENTITY = (
    Option("--entity-type", choices=tuple(acl.QUOTA_ENTITY_TYPES), repeatable=True, metavar="TYPE",
           help="users, clients or ips (users and clients may be combined)."),
    Option("--entity-name", type=acl.name, repeatable=True, metavar="NAME",
           help="The entity's name, one per --entity-type."),
    Option("--entity-default", repeatable=True, flag=False, metavar="TYPE", choices=tuple(acl.QUOTA_ENTITY_TYPES),
           help="The default entity of TYPE (users, clients or ips)."),
)


def _entity(args: dict) -> list[tuple[str, str | None]]:
    """The entity alter-client-quotas changes: (type, name; None for the default) pairs."""
    types = args["entity_type"] or []
    names = args["entity_name"] or []
    if len(names) != len(types):
        raise UsageError("Give one --entity-name for each --entity-type (or --entity-default TYPE)")
    out: list[tuple[str, str | None]] = [(acl.QUOTA_ENTITY_TYPES[t], n) for t, n in zip(types, names)]
    out += [(acl.QUOTA_ENTITY_TYPES[t], None) for t in args["entity_default"] or []]
    return out


@command("describe-client-quotas", *QUOTA_ENTITY,
         help="Show client quotas (all, or those of an entity).",
         examples=("describe-client-quotas", "describe-client-quotas --entity-type users --entity-name alice"))
def describe_client_quotas(session: Session, args: dict) -> Result:
    components = []
    named = len(args["entity_name"] or [])
    if named > len(args["entity_type"] or []):
        raise UsageError("Each --entity-name needs an --entity-type before it (users, clients or ips)")
    for i, t in enumerate(args["entity_type"] or []):
        if i < named:
            components.append({"entity_type": acl.QUOTA_ENTITY_TYPES[t], "match_type": QuotaMatch.EXACT,
                               "match": args["entity_name"][i]})
        else:  # a type without a name: every named entity of it
            components.append({"entity_type": acl.QUOTA_ENTITY_TYPES[t], "match_type": QuotaMatch.SPECIFIED,
                               "match": None})
    components += [{"entity_type": acl.QUOTA_ENTITY_TYPES[t], "match_type": QuotaMatch.DEFAULT, "match": None}
                   for t in args["entity_default"] or []]
    debug(session, "DescribeClientQuotas request")
    answer = session.conn.any_broker_request(ApiKey.DESCRIBE_CLIENT_QUOTAS, {"components": components, "strict": False})
    if answer.get("error_code"):
        raise response_error(ApiKey.DESCRIBE_CLIENT_QUOTAS, answer["error_code"], answer.get("error_message"))
    rows = []
    for e in answer.get("entries") or []:
        # The entity's parts in one order (user, client-id, ip): Kafka answers them in its own.
        parts = sorted(e["entity"], key=lambda d: QUOTA_PART_ORDER.get(d["entity_type"], len(QUOTA_PART_ORDER)))
        label = ", ".join(f"{d['entity_type']}={d['entity_name'] if d['entity_name'] is not None else '<default>'}"
                          for d in parts)
        for v in e["values"]:
            value = v["value"]
            rows.append([label, v["key"], int(value) if value == int(value) else value])
    rows.sort()
    return Result(tables=[Table(["Entity", "Key", "Value"], rows, name="client_quotas")],
                  messages=[] if rows else ["No client quotas."])


def _quota_ops(args: dict) -> list[dict]:
    ops = []
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
        ops.append({"key": key.strip(), "value": number, "remove": False})
    for key in (args["delete_config"] or "").split(","):
        if key.strip() and not CONFIG_NAME.fullmatch(key.strip()):
            raise UsageError(f'Invalid --delete-config key "{shown(key)}": use quota names, e.g. producer_byte_rate')
        if key.strip():
            ops.append({"key": key.strip(), "value": 0.0, "remove": True})
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
    body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity], "ops": ops}],
            "validate_only": bool(args["dry_run"])}
    debug(session, "AlterClientQuotas request" + (" (validate only)" if args["dry_run"] else ""))
    answer = session.conn.controller_request(ApiKey.ALTER_CLIENT_QUOTAS, body, mutation=not args["dry_run"])
    for r in answer.get("entries", []):
        if r.get("error_code"):
            raise response_error(ApiKey.ALTER_CLIENT_QUOTAS, r["error_code"], r.get("error_message"))
    if args["dry_run"]:
        return Result.message(f"The quotas of {label} would change (validated, dry run).")
    return Result.message(f"Updated the quotas of {label}.")
