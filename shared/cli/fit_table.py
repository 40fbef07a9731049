"""Tables laid out for the terminal's width, so that a number or a unit is never cut.

Every table the CLI prints is a ``FitTable``: each column says what its cells are
(``Column.kind``), and the layout treats each kind the same way in every table:

- ``whole``: numbers, durations, money, counts, states, ids. Shown whole, or the whole column is
  left out when the width runs out (``drop``); never ``10/…`` or ``1m44`` without its unit.
- ``name``: task, workflow, queue and worker names. Elided in the middle
  (``preprocess-t…-evaluation``) so both ends stay recognisable.
- ``words``: lists such as a worker's GPUs or running tasks. Wrapped between words, each whole.
- ``text``: free text (an error's last line). What fits, ending in ``…``.

The layout, for a width W: every column at its natural width if the table fits; otherwise the
shrinkable columns (name, words, text) go down to their floors and, while that is still wider
than W, droppable columns leave, highest ``drop`` first. If it still does not fit, names and
text go down to a hard floor. The width left over goes back to names first, then words, then
text, up to their natural widths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

Kind = Literal["whole", "name", "words", "text"]
Cell = str | Text

ELLIPSIS = "…"
HARD_FLOOR = 8
"""The narrowest a name or text column gets before the table gives up fitting the width."""
TEXT_FLOOR = 12
"""How wide a text column (an error) stays before other columns are left out for it."""


@dataclass(frozen=True)
class Column:
    """One column: its header, what its cells are, and when it may leave."""

    header: str
    kind: Kind = "whole"
    right: bool = False
    """Right-aligned (numbers)."""
    drop: int = 0
    """0: always shown; otherwise left out when the width runs out, the highest first."""
    floor: int = 16
    """A name column's width before columns are left out for it (names up to it stay whole);
    for a words column, the longest word kept whole before other columns are left out."""


def plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def elide_middle(cell: Cell, width: int) -> Cell:
    """``cell`` in at most ``width`` characters, the middle replaced by ``…``."""
    text = plain(cell)
    if len(text) <= width:
        return cell
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2
    tail = width - 1 - head
    if isinstance(cell, Text):
        end = cell[len(text) - tail :] if tail else Text()
        return Text.assemble(cell[:head], ELLIPSIS, end)
    return text[:head] + ELLIPSIS + (text[len(text) - tail :] if tail else "")


def elide_end(cell: Cell, width: int) -> Cell:
    """``cell`` in at most ``width`` characters, the end replaced by ``…``."""
    text = plain(cell)
    if len(text) <= width:
        return cell
    if isinstance(cell, Text):
        return Text.assemble(cell[: max(0, width - 1)], ELLIPSIS)
    return text[: max(0, width - 1)] + ELLIPSIS


class FitTable:
    """Rows under columns, laid out for the width the console gives (see the module's doc)."""

    def __init__(self, columns: Sequence[Column], gap: int = 1) -> None:
        self.columns = list(columns)
        self.rows: list[list[Cell]] = []
        self.gap = gap
        """Spaces after each column."""
        self._natural: dict[int, int] = {}

    def add_row(self, *cells: Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))
        self._natural.clear()

    def natural(self, i: int) -> int:
        """Column ``i``'s width with every cell whole."""
        if i not in self._natural:
            cells = (cell_len(plain(row[i])) for row in self.rows)
            self._natural[i] = max([cell_len(self.columns[i].header), *cells])
        return self._natural[i]

    def _longest_word(self, i: int) -> int:
        words = [w for row in self.rows for w in plain(row[i]).split()]
        return max([cell_len(self.columns[i].header), *map(cell_len, words)])

    def _floor(self, i: int, hard: bool) -> int:
        column, natural = self.columns[i], self.natural(i)
        header = cell_len(column.header)
        if column.kind == "whole":
            return natural
        if column.kind == "words":
            word = min(self._longest_word(i), column.floor)
            return min(natural, max(header, HARD_FLOOR) if hard else max(header, word))
        least = HARD_FLOOR if hard else (column.floor if column.kind == "name" else TEXT_FLOOR)
        return min(natural, max(header, least))

    def widths(self, max_width: int) -> dict[int, int]:
        """Shown column -> its width, for ``max_width`` characters."""
        shown = list(range(len(self.columns)))

        def need(hard: bool) -> int:
            return sum(self._floor(i, hard) + self.gap for i in shown)

        if sum(self.natural(i) + self.gap for i in shown) > max_width:
            droppable = sorted(
                (i for i in shown if self.columns[i].drop), key=lambda i: -self.columns[i].drop
            )
            for i in droppable:
                if need(False) <= max_width:
                    break
                shown.remove(i)
        hard = need(False) > max_width
        widths = {i: self._floor(i, hard) for i in shown}
        spare = max_width - need(hard)
        # Back up to the soft floors first (so no column starves), then to the natural widths.
        soft: list[Callable[[int], int]] = [lambda i: self._floor(i, False)] if hard else []
        for goal in (*soft, self.natural):
            for kind in ("name", "words", "text"):
                for i in (i for i in shown if self.columns[i].kind == kind):
                    more = max(0, min(spare, goal(i) - widths[i]))
                    widths[i] += more
                    spare -= more
        return widths

    def layout(self, max_width: int) -> Table:
        """The rich table for ``max_width`` characters."""
        widths = self.widths(max_width)
        table = Table(box=None, padding=(0, self.gap, 0, 0), header_style="bold")
        for i, width in widths.items():
            column = self.columns[i]
            table.add_column(
                column.header,
                justify="right" if column.right else "left",
                width=width,
                # Words wrap between words; the rest is sized to fit (fold only if nothing can).
                no_wrap=column.kind in ("name", "text"),
                overflow="fold",
            )
        for row in self.rows:
            table.add_row(*(self._fit(i, row[i], w) for i, w in widths.items()))
        return table

    def _fit(self, i: int, cell: Cell, width: int) -> Cell:
        kind = self.columns[i].kind
        if kind == "name":
            return elide_middle(cell, width)
        if kind == "text":
            return elide_end(cell, width)
        return cell

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.layout(options.max_width)


class Phrases:
    """Phrases on a line, wrapped between phrases, never inside one (``1.5 tasks/s`` stays on
    one line); a phrase wider than the console is folded."""

    def __init__(self, *parts: Cell, sep: str = "  ") -> None:
        self.parts = [Text(p) if isinstance(p, str) else p for p in parts if plain(p)]
        self.sep = sep

    def append(self, part: Cell) -> None:
        if plain(part):
            self.parts.append(Text(part) if isinstance(part, str) else part)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines: list[Text] = []
        for part in self.parts:
            if lines and lines[-1].cell_len + len(self.sep) + part.cell_len <= options.max_width:
                lines[-1].append(self.sep)
                lines[-1].append_text(part)
            else:
                lines.append(part.copy())
        yield Text("\n").join(lines)
