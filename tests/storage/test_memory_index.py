"""Paging through the in-memory index visits every matching row once, newest first, whatever the
page size and filters (the Azure adapter is held to the same by the contract tests)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.states import WorkflowStatus
from shared.storage.memory import MemoryIndex
from shared.storage.ports import IndexRow

rows_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "ab", "b", "ba"]), st.sampled_from(list(WorkflowStatus))),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(
    rows=rows_strategy,
    limit=st.integers(min_value=1, max_value=8),
    prefix=st.sampled_from([None, "a", "b", "ab"]),
    status=st.sampled_from([None, WorkflowStatus.RUNNING, WorkflowStatus.FAILED]),
)
def test_paging_visits_each_match_once_newest_first(
    rows: list[tuple[str, WorkflowStatus]],
    limit: int,
    prefix: str | None,
    status: WorkflowStatus | None,
) -> None:
    async def scenario() -> list[str]:
        index = MemoryIndex()
        for i, (name, row_status) in enumerate(rows):
            await index.create(IndexRow(f"wf{i}", name, row_status, 100.0 + i, 100.0 + i))
        seen: list[str] = []
        token: str | None = None
        while True:
            page = await index.list(
                status=status, name_prefix=prefix, limit=limit, continuation=token
            )
            assert len(page.rows) <= limit
            seen += [row.workflow_id for row in page.rows]
            token = page.next
            if token is None:
                return seen

    expected = [
        f"wf{i}"
        for i in range(len(rows) - 1, -1, -1)
        if (prefix is None or rows[i][0].startswith(prefix))
        and (status is None or rows[i][1] == status)
    ]
    assert asyncio.run(scenario()) == expected
