"""What the tests, the benchmarks and the simulation share to exercise dagq without Azure.

- ``synthetic_worker``: a worker that plays each task from a script (no subprocess), over the
  storage ports; ``synthetic_run``: a workflow to run with it;
- ``api_host``: the Functions app under the local host, as a subprocess;
- ``flaky_proxy``: a TCP proxy that closes connections before or after the server acted;
- ``partition_ids``: workflow ids that land in each partition;
- ``signing``: the app's signing key for a test deployment.

None of it is part of dagq's packages (``pip install dagq`` ships ``dagq``, ``shared`` and
``worker_agent`` only).
"""
