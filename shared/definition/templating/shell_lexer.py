"""Where a ``{{ placeholder }}`` sits in a shell command, as a POSIX shell's tokenizer sees it.

dagq renders a placeholder in ``cmd`` as one ``shlex.quote``-d word (``'it'\\''s'``). That is one
word only where the shell reads the text as code, at an unquoted word position. Inside double or
single quotes, ``$'...'``, ``${...}``, ``$((...))``, a comment or a here-document, right after a
backslash or a ``$``, the value's quotes are literal characters (or change meaning) and the value
can run code: ``echo "{{ v }}"`` with ``v = "$(touch x)"`` runs ``touch``.

The scan is conservative by construction. It follows quotes, ``$(...)``, subshells and comments
the way every POSIX shell does, and refuses every placeholder of a command that uses a construct
whose extent needs a full parser, differs between shells, or evaluates text as code: backticks,
here-documents (``<<``), arithmetic, ``[[``, ``eval``, ``let``, ``case`` inside parentheses, an
unbalanced ``)``, quotes or substitutions inside ``${...}``, a backslash inside ``$'...'`` or a
line continuation inside parentheses. A placeholder is accepted only where every enclosing level
is code: the top level, a subshell ``( ... )`` or an unquoted ``$( ... )``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from shared.definition.templating.shell_words import code_runner_problem

_CODE_LEVELS = frozenset({"(", "$("})
"""Levels whose text the shell reads as code: a quoted word there stays one word."""
_WORD_BREAKS = frozenset(" \t\n;&|()<>")
"""Characters after which a new word starts (where ``#`` opens a comment)."""
_DISTRUSTED_WORDS = {
    "[[": "[[ (bash evaluates some of its operands as arithmetic)",
    "eval": "eval (it runs its arguments as shell code)",
    "let": "let (it evaluates its arguments as arithmetic)",
}
"""Words with which a value can still run code (bash arithmetic evaluates array subscripts)."""
_ARITHMETIC = "arithmetic ($((...)) or ((...)); bash evaluates array subscripts in values)"
_NAME_CHAR = re.compile(r"[A-Za-z0-9_]")
_CLOSER = {"'": "'", "#": "\n", "$'": "'"}
"""What ends a literal level (``${...}`` is handled apart)."""
_WHERE = {
    '"': "inside double quotes",
    "'": "inside single quotes",
    "$'": "inside $'...'",
    "${": "inside ${...}",
    "#": "in a comment",
}


class _Lexer:
    """Just enough of a shell tokenizer to know the quoting level at each point."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        """Open levels, innermost last: ``( $( $(( " ' $' ${ #``."""
        self.untrusted: str | None = None
        """Why the rest of the command cannot be read reliably (None while it can)."""
        self.escaped = False
        """A backslash outside single quotes is waiting for the character it escapes."""
        self.prev = "\n"
        """The previous character (a placeholder counts as a word character)."""
        self.name: str | None = ""
        """The current word so far while it is a plain name (``arr`` in ``arr[i]=``), else None."""

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text) and self.untrusted is None:
            i = self._step(text, i)

    def placeholder_problem(self) -> str | None:
        """Where a placeholder at this point would be, if that is not a plain code word."""
        problem = next((_WHERE[lv] for lv in reversed(self.stack) if lv not in _CODE_LEVELS), None)
        if problem is None and self.escaped:
            problem = "right after a backslash (which would escape the value's opening quote)"
        elif problem is None and self.prev in ("$", "["):
            problem = f"right after a '{self.prev}'"
        self.escaped = False
        self.prev = "x"
        self.name = None
        return problem

    def _distrust(self, why: str) -> None:
        self.untrusted = why

    def _step(self, text: str, i: int) -> int:
        c, prev = text[i], self.prev
        top = self.stack[-1] if self.stack else ""
        if self.escaped:
            self.escaped = False
            if c != "\n":  # a backslash-newline vanishes: the word before it goes on
                self.prev = "x"  # an escaped character is an ordinary word character
                self.name = None
            elif any(level in _CODE_LEVELS for level in self.stack):
                self._distrust("a line continuation inside parentheses")
            return i + 1
        self.prev = prev if c == "\\" else c
        if top in ("'", "#", "$'", "${"):
            self.name = None
            self._step_literal(top, c)
            return i + 1
        if top == '"':
            self.name = None
            if c == "\\":
                self.escaped = True
            elif c == '"':
                self.stack.pop()
            elif c == "`":
                self._distrust("backticks (`...`; write $(...) instead)")
            elif c == "$":
                return self._dollar(text, i, quoted=True)
            return i + 1
        return self._step_code(text, i, top, prev in _WORD_BREAKS)

    def _step_literal(self, top: str, c: str) -> None:
        """Single quotes, comments, ``$'...'`` and ``${...}``: only the end matters."""
        if c == _CLOSER.get(top):
            self.stack.pop()
        elif top == "$'" and c == "\\":
            self._distrust("a backslash inside $'...' (shells disagree where it ends)")
        elif top == "${":
            if c == "}":
                self.stack.pop()
            elif c in "'\"`\\$({[":
                self._distrust("quotes or substitutions inside ${...}")

    def _step_code(self, text: str, i: int, top: str, prev_break: bool) -> int:
        c = text[i]
        name = "" if prev_break else self.name
        self.name = name + c if name is not None and _NAME_CHAR.match(c) else None
        if c == "[" and name and name[0] not in "0123456789":
            self._distrust(f"an array subscript {name}[...] (bash evaluates it as arithmetic)")
        elif c == "\\":
            self.escaped = True
        elif c in "'\"":
            self.stack.append(c)
        elif c == "`":
            self._distrust("backticks (`...`; write $(...) instead)")
        elif c == "$":
            return self._dollar(text, i, quoted=False)
        elif c in "()":
            self._paren(text, i, top)
        elif c == "<" and text[i + 1 : i + 2] == "<":
            self._distrust("a here-document (<<)")
        elif prev_break:
            self._word_start(text, i)
        return i + 1

    def _paren(self, text: str, i: int, top: str) -> None:
        """``(`` opens a subshell (``((`` is arithmetic), ``)`` closes one."""
        if text[i] == ")":
            if top in _CODE_LEVELS:
                self.stack.pop()
            else:
                self._distrust("an unbalanced ')'")
        elif text[i + 1 : i + 2] == "(":
            self._distrust(_ARITHMETIC)
        else:
            self.stack.append("(")

    def _word_start(self, text: str, i: int) -> None:
        """The first character of a word: a comment, a distrusted word, ``case`` in parentheses."""
        if text[i] == "#":
            self.stack.append("#")
        elif (word := _distrusted_word(text, i)) is not None:
            self._distrust(word)
        elif text[i] == "c" and self.stack and _is_word(text, i, "case"):
            self._distrust("'case' inside parentheses")

    def _dollar(self, text: str, i: int, *, quoted: bool) -> int:
        after = text[i + 1 : i + 3]
        if after == "((":
            self._distrust(_ARITHMETIC)
            return i + 1
        for opener in ("(", "{") if quoted else ("(", "{", "'"):
            if after.startswith(opener):
                self.stack.append("$" + opener)
                return i + 1 + len(opener)
        return i + 1


def _distrusted_word(text: str, i: int) -> str | None:
    for word, why in _DISTRUSTED_WORDS.items():
        if _is_word(text, i, word):
            return why
    return None


def _is_word(text: str, i: int, word: str) -> bool:
    end = i + len(word)
    return text[i:end] == word and (end == len(text) or text[end] in _WORD_BREAKS)


def placement_problems(parts: Sequence[str]) -> list[str | None]:
    """For each placeholder of a template split as (text, name, text, name, ..., text), None if
    it is a plain code word of the shell, else where it is (``"inside double quotes"``)."""
    lexer = _Lexer()  # (one pass over the text: linear in its length)
    problems: list[str | None] = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            lexer.feed(part)
        else:
            problems.append(lexer.placeholder_problem())
    if lexer.untrusted is None and problems:
        lexer.untrusted = code_runner_problem(parts)  # \eval, "eval", trap, sh -c {{ v }} ...
    if lexer.untrusted is not None:
        # A construct dagq does not follow makes every placeholder suspect, before it as well:
        # `x={{ v }}; eval "$x"` runs the value as code.
        where = f"in a command with {lexer.untrusted}, which dagq does not follow"
        return [where for _ in problems]
    return problems
