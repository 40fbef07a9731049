"""The coordinator tests' fixtures (a fake clock, memory storage following it) serve these too."""

from tests.coordinator.conftest import clock, storage

__all__ = ["clock", "storage"]
