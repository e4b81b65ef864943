"""The plain aligned writer that tables go through prints exactly tabulate's layout."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from kafka_shell.declarations.render import Table, _aligned, _horizontal, _table, cell, for_people

LARGE_TABLE_ROWS = 1000

ascii_text = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(ascii_text.filter(bool), min_size=n, max_size=n),
    st.lists(st.lists(ascii_text, min_size=n, max_size=n), min_size=1, max_size=20))))
def test_aligned_writer_matches_tabulate(table):
    columns, rows = table
    assert _aligned(columns, [list(c) for c in zip(*rows)]) == tabulate(rows, headers=columns, tablefmt="simple", disable_numparse=True)


def test_large_tables_take_the_aligned_writer_with_the_same_text():
    rows = [[f"t{i % 7}", i, None if i % 2 else 1, [1, 2, 3]] for i in range(LARGE_TABLE_ROWS + 1)]
    columns = ["Topic", "Partition", "Leader", "Replicas"]
    text = [[str(c) if c is not None else "-" for c in r[:3]] + ["1,2,3"] for r in rows]
    assert _table([Table(columns, rows)]) == tabulate(text, headers=columns, tablefmt="simple",
                                                      disable_numparse=True) + "\n"


printable_text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=8)
any_text = st.text(max_size=6)
cell_value = st.one_of(st.none(), st.integers(-5, 10**6), st.booleans(), printable_text, any_text,
                       st.lists(st.integers(0, 9), max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.lists(printable_text.filter(str.strip), min_size=n, max_size=n, unique=True),
    st.lists(st.lists(cell_value, min_size=n, max_size=n), min_size=1, max_size=12))))
def test_every_table_prints_what_tabulate_prints(table):
    """Without tabulate for tables of printable ASCII (spaces and padding included), the same
    bytes; any other text still goes through tabulate."""
    columns, rows = table
    expected = tabulate([[cell(v) for v in row] for row in rows], headers=columns, tablefmt="simple",
                        disable_numparse=True)
    assert _horizontal(columns, list(zip(*rows))) == expected


def test_for_people_makes_declared_kinds_readable_when_no_column_is_left_out():
    """The header stays the same, the values of a column with a kind do not (watch shows these)."""
    t = Table(["Topic", "Size", "Empty"], [["a", 1536, 1], ["b", 10, None]], kinds={"Size": "bytes"})
    shown = for_people(t)
    assert shown.columns == ["Topic", "Size", "Empty"]
    assert shown.rows == [["a", "1.5 KiB", 1], ["b", "10 B", None]]
    plain = Table(["Topic", "Partitions"], [["a", 3]])
    assert for_people(plain) is plain
