"""The fake services' time source."""

from collections.abc import Callable

Clock = Callable[[], float]
"""Seconds, like ``time.time``: tests pass a callable reading a variable they advance."""
