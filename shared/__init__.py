"""dagq's core package.

The functional core (definition model, validation, engine, codec, conditions) imports nothing from
Azure and reads no clock; the thin imperative shell around it (storage adapters, coordinator, HTTP
handlers) lives in subpackages. Importing this package is cheap on purpose: the Functions host
imports it at start-up.
"""

__version__ = "0.1.0"
