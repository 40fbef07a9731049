"""Definitions the CLI's stack tests submit."""

from __future__ import annotations

LONG = """
name: long-sleep
default_queue: cpu
tasks:
  - name: sleeper
    kwargs:
      cmd: echo started; sleep 60
  - name: after
    depends_on: [sleeper]
    kwargs:
      cmd: echo never
"""
