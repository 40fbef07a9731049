"""``{{ variable }}`` templates and where a placeholder may sit in a shell command.

- ``template``: parsing, shell-safe rendering and the ``DAGQ_VAR_*`` variables (used by
  ``foreach`` at submit and by ``foreach_from`` when the engine expands it);
- ``shell_lexer``: a conservative POSIX shell tokenizer that refuses every placeholder the shell
  would not read as one plain word;
- ``shell_words``: commands that run their arguments as code (``eval``, ``trap``, ``sh -c``...),
  recognised by the words' values after shell unquoting.
"""

from __future__ import annotations

from shared.definition.templating.shell_lexer import placement_problems
from shared.definition.templating.template import (
    ENV_PREFIX,
    PARAM_ENV_PREFIX,
    PARAMS_PREFIX,
    Template,
    env_var_name,
    parse_command,
    parse_template,
    render_value,
    variable_env,
)

__all__ = [
    "ENV_PREFIX",
    "PARAMS_PREFIX",
    "PARAM_ENV_PREFIX",
    "Template",
    "env_var_name",
    "parse_command",
    "parse_template",
    "placement_problems",
    "render_value",
    "variable_env",
]
