"""Commands that run their arguments as code, found by the words' values after shell unquoting.

``shell_lexer`` knows where a placeholder sits; this module knows what the command around it runs.
A shell removes quotes and backslashes before it looks a command name up, so ``\\eval``,
``e\\val``, ``"eval"`` and ``ev''al`` all run ``eval``: words are compared by their unquoted value
(``shlex`` in POSIX mode), never by their text. In *command position* (the first word of a simple
command, after assignments and after the prefixes ``command``, ``builtin``, ``exec``, ``env``,
``nohup``, ``time``, ``nice``, ``!`` and the keywords that start a command), these are refused
with every placeholder of the command: ``eval``, ``trap`` (its first argument is code), ``.`` and
``source`` (they run a file a value may name), ``let`` and ``[[`` (arithmetic). A placeholder that
is the code argument of a shell's ``-c`` (``sh -c``, ``bash -ec`` ...) is refused too.

What cannot be detected: a program that runs its arguments as code in its own language
(``python -c``, ``perl -e``, ``awk``, ``find -exec sh -c``, ``xargs sh -c``, ``ssh host``) or a
script that ``eval``s its arguments. dagq passes a value as one word; what the program then does
with that word is the program's business (docs/security.md).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

_CODE_RUNNERS = {
    "eval": "eval (it runs its arguments as shell code)",
    "trap": "trap (its first argument is shell code)",
    ".": ". (it runs a file as shell code)",
    "source": "source (it runs a file as shell code)",
    "let": "let (it evaluates its arguments as arithmetic)",
    "[[": "[[ (bash evaluates some of its operands as arithmetic)",
}
_PREFIXES = frozenset({"command", "builtin", "exec", "env", "nohup", "time", "nice", "!"})
"""Words after which the next word is still a command name (their options are skipped)."""
_KEYWORDS = frozenset({"if", "then", "else", "elif", "while", "until", "do", "{"})
_SEPARATORS = frozenset({";", "&", "|", "&&", "||", ";;", "(", ")", "\n"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"})
_MARK = "DAGQPLACEHOLDER{}X"
_NAMES = frozenset(_CODE_RUNNERS) | _SHELLS
_BREAKS = re.compile(r"[ \t\r\n;&|()<>#]+")
_QUOTING = frozenset("'\"\\")


def _plainly_runs_no_code(text: str) -> bool:
    """True when ``text`` has no quoting at all (no quote, no backslash) and none of its words
    names a code runner or a shell: then :func:`code_runner_problem` has nothing to find, without
    ``shlex``. Unquoted, shlex with these settings ends a word at a blank, at one of the operators
    ``;&|()<>`` and at ``#`` (a comment starts there, even inside a word, and only drops words), so
    splitting at those sees every word the full walk would: it may send a harmless command the
    slow way, never a dangerous one the fast way (a property test holds the two to that)."""
    if not _QUOTING.isdisjoint(text):
        return False
    return not any(word.rsplit("/", 1)[-1] in _NAMES for word in _BREAKS.split(text))


def _words(text: str) -> list[str] | None:
    """The command's words (operators as their own words), unquoted, placeholders as marks;
    None if it does not split (unbalanced quotes: the lexer refuses those anyway)."""
    lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def _is_assignment(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isidentifier()


def code_runner_problem(parts: Sequence[str]) -> str | None:
    """Why the command of a template split as (text, name, text, ...) may run a value as code,
    or None."""
    text = "".join(part if i % 2 == 0 else _MARK.format(i // 2) for i, part in enumerate(parts))
    if _plainly_runs_no_code(text):
        return None  # most commands: a python/bash script with flags, no shell built-ins
    return _problem_of_words(text)


def _problem_of_words(text: str) -> str | None:
    """code_runner_problem's full test: the words by shlex, walked in command position."""
    words = _words(text)
    if words is None:
        return "quotes that do not close"
    at_command, target = True, False
    for i, word in enumerate(words):
        if target:  # a redirection's file name: neither a command nor an argument of one
            target = False
            continue
        if all(c in ";&|()<>" for c in word):
            target = "<" in word or ">" in word
            at_command = at_command or not target
            continue
        if not at_command:
            continue
        if _is_assignment(word) or word in _KEYWORDS or (word.isascii() and word.isdigit()):
            continue
        name = word.rsplit("/", 1)[-1]
        if name in _CODE_RUNNERS:
            return _CODE_RUNNERS[name]
        if name in _PREFIXES or word.startswith("-"):
            continue  # the next word (after options) is still a command name
        if name in _SHELLS and _code_argument_is_a_placeholder(words[i + 1 :]):
            return f"{name} -c with a placeholder as its code"
        at_command = False
    return None


def _code_argument_is_a_placeholder(args: list[str]) -> bool:
    """Whether the code string of ``sh [options] -c CODE ...`` contains a placeholder."""
    dash_c = False
    for word in args:
        if word in _SEPARATORS:
            return False
        if word.startswith("-") and not word.startswith("--") and len(word) > 1:
            dash_c = dash_c or "c" in word[1:]
            continue
        if word.startswith("--"):
            continue
        return dash_c and "DAGQPLACEHOLDER" in word
    return False
