"""The terminal filter alone: what is kept, what is shown as text, and pieces cut anywhere."""

from __future__ import annotations

from shared.cli.terminal import TerminalFilter, neutralise

LOG = (
    "ok\t\x1b[1;31mred\x1b[0m\n"
    "\x1b]52;c;cHduZWQ=\x07\x1b]0;t\x1b\\\x1b[2J\x1bP1$qm\x1b\\\u009b2J\x08\x7f\n"
    "50%\r100%\r\n"
    "été ✓\n"
).encode()


def test_only_newline_tab_and_colours_reach_the_terminal() -> None:
    shown = TerminalFilter().feed(LOG) + TerminalFilter().flush()
    assert shown.decode() == (
        "ok\t\x1b[1;31mred\x1b[0m\n"
        "\\x1b]52;c;cHduZWQ=\\x07\\x1b]0;t\\x1b\\\\x1b[2J\\x1bP1$qm\\x1b\\\\x9b2J\\x08\\x7f\n"
        "50%\n100%\n"
        "été ✓\n"
    )
    assert neutralise("a\x1b[31mb", keep_sgr=False) == "a\\x1b[31mb"


def test_pieces_cut_inside_a_character_or_a_colour_read_the_same() -> None:
    whole = TerminalFilter()
    expected = whole.feed(LOG) + whole.flush()
    for size in (1, 2, 3, 5, 7):
        cut = TerminalFilter()
        shown = b"".join(cut.feed(LOG[i : i + size]) for i in range(0, len(LOG), size))
        assert shown + cut.flush() == expected, size


def test_an_escape_left_open_at_the_end_is_shown_as_text() -> None:
    stream = TerminalFilter()
    assert stream.feed(b"end \x1b[31") == b"end "
    assert stream.flush() == b"\\x1b[31"
    invalid = TerminalFilter()
    assert invalid.feed(b"\xff\xfe ok") + invalid.flush() == "\ufffd\ufffd ok".encode()


def test_every_console_of_the_cli_is_a_safe_one() -> None:
    # A plain rich Console keeps ESC and reads markup in data: each command makes a SafeConsole.
    import re
    from pathlib import Path

    import shared.cli

    for path in Path(shared.cli.__file__).parent.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "terminal.py" and re.search(r"\bConsole\(", text):
            assert "import SafeConsole as Console" in text, path.name
