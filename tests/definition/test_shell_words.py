"""The code-runner check's fast path (no quoting, no code runner named) answers as the full one.

``code_runner_problem`` skips ``shlex`` for a command with no quotes, no backslashes and no word
naming a code runner or a shell; a refusal is a security decision, so the fast path must never
clear a command the full walk would refuse (and the two must agree on every answer)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.definition.templating import shell_words
from shared.definition.templating.shell_words import code_runner_problem

_WORDS = ["eval", "trap", ".", "source", "let", "[[", "sh", "bash", "/bin/sh", "./eval", "-c",
          "-ec", "env", "exec", "x=1", "python", "run.py", "--lr", "e'v'al", "\\eval", '"sh"',
          "#", "ev al", "if", "then", "{", "!"]  # fmt: skip
_GLUE = [" ", "\t", "\n", ";", "&&", "|", "(", ")", ">", "<", "", "/", "'", '"', "\\", "#", "\xa0"]


@st.composite
def templates(draw: st.DrawFn) -> list[str]:
    """A command template split as (text, name, text, ...): words and glue around placeholders."""
    texts = draw(
        st.lists(
            st.lists(st.sampled_from(_WORDS) | st.sampled_from(_GLUE), max_size=8).map("".join),
            min_size=1,
            max_size=4,
        )
    )
    parts: list[str] = []
    for i, text in enumerate(texts):
        parts += [text] if i == 0 else [f"v{i}", text]
    return parts


@settings(max_examples=2000)
@given(templates())
def test_the_fast_path_answers_as_the_full_walk(parts: list[str]) -> None:
    marks = (f"DAGQPLACEHOLDER{i // 2}X" for i in range(1, len(parts), 2))
    text = "".join(part if i % 2 == 0 else next(marks) for i, part in enumerate(parts))
    assert code_runner_problem(parts) == shell_words._problem_of_words(text)


def test_plain_commands_take_the_fast_path_and_code_runners_do_not() -> None:
    assert shell_words._plainly_runs_no_code("python train.py --lr DAGQPLACEHOLDER0X > out.txt")
    for text in ("eval DAGQPLACEHOLDER0X", "x; /bin/sh -c DAGQPLACEHOLDER0X", "echo 'a'", "a\\ b"):
        assert not shell_words._plainly_runs_no_code(text)
    assert code_runner_problem(["sh -c ", "v", ""]) == "sh -c with a placeholder as its code"
    assert code_runner_problem(["x=1 eval ", "v", ""]) is not None
    assert code_runner_problem(["eval# ", "v", ""]) is not None  # shlex ends a word at "#"
