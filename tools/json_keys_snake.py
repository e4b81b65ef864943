"""Rewrite tests that read --output json/jsonl/csv from the shell's old key spelling (a table's
columns as the table shows them, "LogEndOffset") to the one spelling of every machine format
(snake_case, "log_end_offset"; issue 34 item 6).

    python tools/json_keys_snake.py tests/test_x.py ...     rewrite these files in place
    python tools/json_keys_snake.py --check tests/...       list what it would change, change nothing

The column names come from the shell's own declarations (the string lists given to Table,
Result.table and Stream, and lists assigned to names holding "column"), so only those words
change, and only where a test uses them as json keys: `row["LogEndOffset"]`,
`row.get("LogEndOffset")` (and .pop, .setdefault), dict keys `{"LogEndOffset": 3}`, sets of
them (`TIME_KEYS = {"Timestamp", ...}`), and csv header strings ("Topic,Partition,Offset" as a
string's first line). A column name left elsewhere (a table's printed header, a list or tuple of
names) is listed with its file and line for a person to decide: a table for people keeps Kafka's
words. Run it on a branch's new tests after merging; it changes nothing twice."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "kafka_shell", ROOT / "commands"]
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PASCAL = re.compile(r"[A-Z][A-Za-z0-9]*(\([a-z]+\))?")
TABLE_CALLS = {"Table", "table", "Stream"}
KEY_METHODS = {"get", "pop", "setdefault"}


def snake_case(column: str) -> str:
    """As kafka_shell.declarations.render.snake_case (kept here so the tool runs on any checkout)."""
    return re.sub(r"[^0-9a-zA-Z]+", "_", _WORD_START.sub("_", column.strip())).strip("_").lower()


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def column_names() -> set[str]:
    """Every column the shell declares, as written in its tables."""
    names: set[str] = set()
    for top in SOURCES:
        for path in top.rglob("*.py"):
            if "sandbox" in path.parts:
                continue
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and node.args and _called(node) in TABLE_CALLS:
                    names.update(_strings(node.args[0]))
                elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and "column" in t.id.lower()
                                                          for t in node.targets):
                    names.update(_strings(node.value))
    return {n for n in names if _PASCAL.fullmatch(n) and snake_case(n) != n}


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _csv_header(text: str, columns: set[str]) -> str | None:
    """`text` with its first line, a csv header of column names, in snake_case; None if it is not one."""
    first, sep, rest = text.partition("\n")
    parts = first.split(",")
    if len(parts) < 2 or not all(p in columns for p in parts):
        return None
    return ",".join(snake_case(p) for p in parts) + sep + rest


def edits(source: str, columns: set[str]) -> tuple[list[tuple[ast.Constant, str]], list[tuple[int, str]]]:
    """(the string constants to rewrite and their new text, the column names left: (line, name))."""
    tree = ast.parse(source)
    found: dict[int, tuple[ast.Constant, str]] = {}
    # The parts of an f-string have no place of their own in the source: never rewritten.
    formatted = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}

    def take(node: ast.AST | None) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in columns \
                and id(node) not in formatted:
            found[id(node)] = (node, snake_case(node.value))

    # A table's own declaration in a test (Table(["Topic"], ..., kinds={"Topic": ...})) keeps its words.
    declared = {id(n) for call in ast.walk(tree) if isinstance(call, ast.Call) and _called(call) in TABLE_CALLS
                for n in ast.walk(call)}
    for node in ast.walk(tree):
        if id(node) in declared:
            continue
        if isinstance(node, ast.Subscript):
            take(node.slice)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                take(key)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEY_METHODS \
                and node.args:
            take(node.args[0])
        elif isinstance(node, ast.Set) and all(isinstance(e, ast.Constant) and e.value in columns for e in node.elts):
            for e in node.elts:
                take(e)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in formatted:
            header = _csv_header(node.value, columns)
            if header is not None:
                found[id(node)] = (node, header)
    left = sorted({(n.lineno, n.value) for n in ast.walk(tree)
                   if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in columns
                   and id(n) not in found and id(n) not in declared})
    return list(found.values()), left


def rewrite(source: str, changes: list[tuple[ast.Constant, str]]) -> str:
    """`source` with each constant's literal replaced (its own quotes kept; single-line literals)."""
    lines = source.splitlines(keepends=True)
    for node, new in sorted(changes, key=lambda c: (c[0].lineno, c[0].col_offset), reverse=True):
        if node.lineno != node.end_lineno:
            continue   # a multi-line literal: left for a person (listed)
        line = lines[node.lineno - 1]
        raw = line.encode()[node.col_offset:node.end_col_offset].decode()
        prefix = re.match(r"[rRbBuUfF]*", raw).group()  # type: ignore[union-attr]
        quote = raw[len(prefix)]
        body = new if "r" in prefix.lower() else (new.replace("\\", "\\\\").replace(quote, "\\" + quote)
                                                  .replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r"))
        literal = f"{prefix}{quote}{body}{quote}"
        data = line.encode()
        lines[node.lineno - 1] = (data[:node.col_offset] + literal.encode() + data[node.end_col_offset:]).decode()
    return "".join(lines)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    if not paths:
        print(__doc__)
        return 2
    columns = column_names()
    total = 0
    for path in paths:
        source = path.read_text()
        changes, left = edits(source, columns)
        changes = [(n, new) for n, new in changes if new != n.value]
        total += len(changes)
        for node, new in changes:
            print(f"{path}:{node.lineno}: {node.value!r} -> {new!r}" if check else "", end="\n" if check else "")
        if changes and not check:
            path.write_text(rewrite(source, changes))
            print(f"{path}: {len(changes)} key(s) rewritten")
        for line, name in left:
            print(f"{path}:{line}: left {name!r} (a table's header, or keys in a list: check by hand)")
    print(f"{total} key(s) {'to rewrite' if check else 'rewritten'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
