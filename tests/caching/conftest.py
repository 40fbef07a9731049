"""The coordinator tests' fixtures (a fake clock, memory storage following it) serve these too."""

from tests.support.memory_fixtures import clock, storage

__all__ = ["clock", "storage"]
