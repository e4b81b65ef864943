"""The plain aligned writer that large tables go through prints exactly tabulate's layout."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from kafka_shell.render import LARGE_TABLE_ROWS, Table, _aligned, _table

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
