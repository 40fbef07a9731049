"""Operating a deployment: the worker registry's view, ``dagq doctor``'s checks, and purge.

Plain async functions over the storage ports and pure functions over gathered facts; the HTTP
shell (``shared.api.ops_http``) and the CLI (``shared.cli.ops``) call them.
"""
