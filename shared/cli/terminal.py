"""What the CLI writes to a terminal: text from the service, never the terminal's instructions.

A task's log, its error, a worker's name... reach the reader through the API; on a terminal,
bytes such as ``ESC ] 52`` (write the clipboard), ``ESC ] 0`` (the window title), ``ESC [ 2 J``
(clear the screen), ``ESC ] 8`` (a hyperlink), DCS strings and C1 controls are instructions, not
text. On a terminal the CLI therefore shows every control character but newline and tab as text
(``\\x1b``, ``\\x07``, ``\\x9b``...), keeps only the SGR colour sequences of a log
(``ESC [ ... m``), and turns a carriage return into a new line (a progress bar's redraws stay
readable, an overwritten line cannot hide what came before). Rich markup in data is text too
(``SafeConsole``: ``[link=...]`` is not a hyperlink). ``dagq logs --raw``, and any output that is
not a terminal (a pipe, a file), keep the bytes as they are.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

SGR = re.compile(r"\x1b\[[0-9;:]{0,64}m")
"""A Select Graphic Rendition sequence: colours and text attributes, nothing else."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Every C0 control but tab and newline, DEL, and every C1 control."""

_PARTIAL_ESCAPE = re.compile(r"\x1b(\[[0-9;:]{0,64})?\Z|\r\Z")
"""The end of a chunk that may continue as an SGR sequence (or as ``\\r\\n``) in the next one."""


def _shown(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def neutralise(text: str, *, keep_sgr: bool = False) -> str:
    """``text`` with every control character but newline and tab shown as text (``\\x1b``); a
    carriage return ends the line; SGR colour sequences stay when ``keep_sgr``."""
    if not _CONTROL.search(text):
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not keep_sgr:
        return _CONTROL.sub(_shown, text)
    parts: list[str] = []
    at = 0
    for colour in SGR.finditer(text):
        parts.append(_CONTROL.sub(_shown, text[at : colour.start()]))
        parts.append(colour.group())
        at = colour.end()
    parts.append(_CONTROL.sub(_shown, text[at:]))
    return "".join(parts)


class TerminalFilter:
    """``neutralise`` over a stream of bytes (a log read piece by piece): UTF-8 characters and SGR
    sequences cut between two pieces are held until the next, invalid UTF-8 is shown as U+FFFD."""

    def __init__(self, *, keep_sgr: bool = True) -> None:
        self.keep_sgr = keep_sgr
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""

    def feed(self, data: bytes) -> bytes:
        text = self._held + self._decoder.decode(data)
        partial = _PARTIAL_ESCAPE.search(text)
        cut = partial.start() if partial else len(text)
        self._held = text[cut:]
        return neutralise(text[:cut], keep_sgr=self.keep_sgr).encode()

    def flush(self) -> bytes:
        text = self._held + self._decoder.decode(b"", final=True)
        self._held = ""
        return neutralise(text, keep_sgr=self.keep_sgr).encode()


def is_terminal(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed: not a terminal
        return False


def for_stderr(message: str) -> str:
    """``message`` (an error that may quote the service) as it may be shown on stderr."""
    return neutralise(message) if is_terminal(sys.stderr) else message


class SafeConsole(Console):
    """A rich console for data from the service: no markup in strings (``[link=...]`` is text),
    and on a terminal the text it renders is ``neutralise``d (rich's own styles and cursor
    controls are not text: they pass)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(**kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        segments = super().render(renderable, options)
        if not self.is_terminal:
            yield from segments
            return
        for segment in segments:
            if segment.control or not _CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(neutralise(segment.text), segment.style, segment.control)
