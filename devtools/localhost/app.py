"""The app's functions: found in ``function_app.py``, invoked as the Python worker invokes them."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.localhost.config import HostError


@dataclass
class Function:
    """One function of the app: its trigger binding and the user function."""

    name: str
    trigger: dict[str, Any]
    user_function: Callable[..., Any]

    @property
    def kind(self) -> str:
        return str(self.trigger["type"])

    @property
    def arg_name(self) -> str:
        return str(self.trigger["name"])

    async def invoke(self, argument: Any) -> Any:
        """Call the user function; a coroutine is awaited, a plain function runs in a thread
        (as the Python worker does)."""
        if inspect.iscoroutinefunction(self.user_function):
            return await self.user_function(**{self.arg_name: argument})
        result = await asyncio.to_thread(self.user_function, **{self.arg_name: argument})
        if inspect.isawaitable(result):
            return await result
        return result


def discover(app_dir: Path, module: str = "function_app") -> list[Function]:
    """Import the app module and list its functions (``get_functions`` is called once)."""
    if str(app_dir) not in sys.path:
        sys.path.insert(0, str(app_dir))
    mod = importlib.import_module(module)
    app = getattr(mod, "app", None)
    if app is None or not hasattr(app, "get_functions"):
        raise HostError(f"{module}.py defines no FunctionApp named 'app'")
    functions = []
    for f in app.get_functions():
        bindings = json.loads(f.get_function_json())["bindings"]
        trigger = next(b for b in bindings if str(b.get("type", "")).endswith("Trigger"))
        functions.append(Function(f.get_function_name(), trigger, f.get_user_function()))
    return functions
