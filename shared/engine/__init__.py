"""dagq's workflow engine: a pure state machine over ``shared.engine.state.RuntimeState``.

``(workflow, state, event, now) -> commands``: no I/O, no clock, no randomness. The coordinator
loads a state, applies events (``apply``) and sweep ticks (``sweep``), carries out the returned
commands (``shared.engine.commands``) and writes the state back. Applying an event costs time
proportional
to the tasks it touches (the task and its children), never to the size of the workflow.

Modules: ``transitions`` (the events), ``sweep`` (the timer's checks), ``step`` (the primitives
both are made of), ``rerun`` (rerun from failure), ``policy`` (dependency policies and conditions),
``capture`` and ``expansion`` (dynamic fan-out: ``expanded(wf, state)`` is the workflow as it runs,
definition plus expansions), ``cached`` (a dispatch answered from the result cache).
"""

from shared.engine.cached import complete_from_cache
from shared.engine.capture import list_sources
from shared.engine.expansion import expanded
from shared.engine.sweep import TIMEOUT_GRACE_S, sweep
from shared.engine.transitions import apply, new_state, premature
from shared.limits import MAX_LIST_BYTES

__all__ = [
    "MAX_LIST_BYTES",
    "TIMEOUT_GRACE_S",
    "apply",
    "complete_from_cache",
    "expanded",
    "list_sources",
    "new_state",
    "premature",
    "sweep",
]
