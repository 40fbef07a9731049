"""Every limit dagq enforces on what it is given, defined once (the bottom floor).

Definitions, task-computed lists, queue messages, states, index rows, the deployment's shape and
HTTP requests are all bounded before they are used (docs/security.md); each bound is here, with
what it protects, and every check imports it from here. Settings that a deployment may tune
(``shared.settings``) take their defaults and ranges from these names. Pure constants: this module
imports nothing.
"""

from __future__ import annotations

# -- Definitions (checked at submit; shared.definition) --------------------------------------------

MAX_DEFINITION_BYTES = 16 * 1024 * 1024
"""Largest definition accepted, in bytes of UTF-8 (a 100,000-task JSON definition written out
task by task is about 6 MiB; foreach keeps most definitions tiny)."""

MAX_YAML_NODES = 2_000_000
"""Most YAML nodes after alias expansion (stops "billion laughs" documents)."""

MAX_TASKS = 100_000
"""Most tasks in a workflow, after foreach expansion (and foreach_from's, at run time)."""

MAX_CMD_BYTES = 16 * 1024
"""Longest ``cmd`` of one task, in UTF-8 bytes after templating (at submit, or at expansion)."""

MAX_EXPANSIONS = 10_000
"""Most tasks one foreach may expand to."""

MAX_DEPENDENCIES = 10_000
"""Most dependencies of one task, after foreach fan-in is expanded."""

MAX_EDGES = 2_000_000
"""Most dependency edges in a workflow, after expansion."""

MAX_ENV_BYTES = 16 * 1024
"""Largest environment of one task (workflow env merged with the task's), as NAME=value bytes."""

MAX_EXPANDED_BYTES = 64 * 1024 * 1024
"""Most bytes of ``cmd`` and environment (workflow env included) of all tasks after expansion:
what bounds the work and memory of a small definition that expands to much."""

MAX_CWD_CHARS = 1024
"""Longest ``cwd``."""

MAX_WORKFLOW_NAME = 200
"""Longest workflow name."""

MAX_TASK_GPUS = 64
"""Most GPUs a task may say it uses (``gpus``: its cost and its cache key)."""

MAX_CACHE_VERSION = 64
"""Longest ``cache.version`` of a task."""

MAX_CACHE_TTL_S = 365 * 86400.0
"""Longest ``cache.ttl``: how long a result cache entry may be reused (the storage lifecycle
backstop deletes entries a day after it)."""

DEAD_LETTER_SCAN = 5000
"""Most dead-letter names one listing of the recent ones reads (newest day first): what showing
them costs, whatever the container holds (``DeadLetters.list``)."""

CACHE_SCAN = 5000
"""Most cache entries one expiry scan lists (a bulk purge's first step): the container may hold
far more, so each scan starts at another of the 256 key prefixes (``CACHE_SCAN_ROTATE_S``) and
successive purges reach every entry."""

CACHE_SCAN_ROTATE_S = 3600.0
"""An expiry scan starts at the key prefix ``int(now / this) % 256``: the start moves on every
hour, so purges at any rhythm walk the whole container over time."""

MAX_REFRESH_TASKS = 100
"""Most task names one submit's ``?refresh=`` lists."""

MAX_PARAMS = 100
"""Most parameters a workflow declares (``params:``)."""

MAX_PARAM_CHARS = 4096
"""Longest value of one workflow parameter, in characters."""

MAX_CARRIED_DEFINITION_BYTES = 8 * 1024
"""Largest definition blob a state blob carries (version 9): every flush of the state writes it
again, so a larger one stays in its blob only (read once per process, then cached)."""

MAX_PARAMS_BYTES = 8 * 1024
"""Most characters of all parameter names and values together: every task message carries them
(``DAGQ_PARAM_<NAME>``), within ``MESSAGE_BUDGET_BYTES``."""

INDEX_BATCH = 100
"""Most index rows one batch transaction projects (Azure Tables' limit per transaction)."""

MAX_COST_WORKFLOWS = 500
"""Most workflows one period's cost report reads (``GET /api/cost``): each is a state read."""

MAX_QUEUE_NAME = 40
"""Longest queue name in a definition: ``{prefix}-q-{queue}`` must stay within Azure's 63."""

MAX_CONDITION_CHARS = 2000
"""Longest condition, in characters."""

MAX_CONDITION_DEPTH = 32
"""Deepest nesting of a condition's syntax tree."""

MAX_GLOB_MATCHES = 2_000_000
"""Most glob name tests (glob x dependency) of all the conditions of one workflow at submit."""

MAX_CONDITION_STEPS = 200_000
"""Most steps one evaluation may take (a value read, a JSON node compared, a KiB of string
compared: ``shared.definition.conditions.values``). Also the budget for matching its globs when it
compiles."""

MAX_SUGGESTION_WORK = 2_000_000
"""Characters compared by all the hints of one validation (about a second in the worst case)."""


# -- Lists that tasks output for foreach_from (checked when their source completes) ----------------

MAX_ITEM_CHARS = 1024
"""Longest item of a list, as JSON (an item is a parameter, not a payload)."""

MAX_LIST_BYTES = 16 * 1024 * 1024
"""Largest output (JSON bytes) the coordinator reads to find a list stored as a blob."""


# -- Queue messages (checked at decode: shared.messages and its fields) ---------------------------

MAX_MESSAGE_BYTES = 64 * 1024
"""Azure's limit for one queue message: anything longer did not come from a queue (or a sender of
ours) and is rejected before it is parsed."""

MESSAGE_BUDGET_BYTES = 48 * 1024
"""What dagq allows itself per message (Azure's hard limit is 64 KiB; XML escaping of JSON quotes by
the SDK and headroom for future fields take the rest)."""

MAX_BATCH_BYTES = 24 * 1024
"""Largest event batch (bytes): half the message budget, so a batch the coordinator hands back to
the queue inside a redelivery (``shared.messages.wrappers``, its quotes escaped: at most twice
its size) still fits Azure's 64 KiB. A single event keeps the whole budget."""

MAX_BATCH_EVENTS = 32
"""Most task events one event message carries (``shared.messages.wrappers.EventBatch``): the
coordinator deletes a batch only once every event in it is handled, so a batch is kept small
enough that one slow or failing event holds back few others."""

MAX_VISIBILITY_S = 7 * 24 * 3600
"""Azure's longest visibility timeout (and initial delay) of a queue message."""

MAX_COUNTER = 2**32 - 1
"""Largest attempt or run number: the state blob keeps them in unsigned 32-bit columns."""

MAX_TIMESTAMP_S = 1e10
"""Latest timestamp a message may carry (year 2286, where the index's inverted keys end)."""

MAX_WORKER_CHARS = 256
"""Longest worker name an event may carry."""

MAX_EVENT_REASON_CHARS = 1000
"""Longest cancel reason an event may carry."""

MAX_OUTPUT_SIZE = 2**50
"""Largest output size a ref may state (a sanity bound, far above anything real)."""

ERROR_TAIL_CHARS = 2000
"""How much of a failed task's error text (stderr tail) an event carries."""


# -- Workflow state, index rows and the worker registry --------------------------------------------

MAX_TASK_ERROR_CHARS = ERROR_TAIL_CHARS + 200
"""Longest error text kept per task (the worker's tail plus dagq's own prefix)."""

MAX_INDEX_ERROR_CHARS = 16_000
"""Longest error text an index row keeps (a table string property holds at most 32K characters)."""

MAX_RECORD_TASKS = 100
"""Most current tasks a worker record lists (a record is one table entity of bounded size)."""

MAX_PROGRESS_CHARS = 16_000
"""Most characters of progress and metrics a worker record carries (a table string property holds
32K characters); the tasks past the budget are listed without their progress."""

MAX_GPUS = 16
"""Most GPUs a worker record describes."""

KEPT_ATTEMPTS_PER_TASK = 8
"""Most earlier attempts of one task the state keeps (the oldest is dropped first)."""

KEPT_ATTEMPTS_PER_WORKFLOW = 2000
"""Most earlier attempts the state of one workflow keeps in all."""

KEPT_ATTEMPT_ERROR_CHARS = 300
"""Characters of an earlier attempt's error the state keeps (its end: where the cause is)."""


# -- What a running task reports about itself (shared.progress; worker_agent.live) ----------------

MAX_METRICS = 8
"""Most metrics kept per attempt (new names past that are ignored)."""

MAX_METRIC_NAME = 32
"""Longest metric name."""

MAX_PROGRESS_LINE_BYTES = 4096
"""Longest ``$DAGQ_PROGRESS`` line read; longer lines are skipped."""

PROGRESS_READ_BYTES = 64 * 1024
"""Most new bytes of ``$DAGQ_PROGRESS`` the worker reads per look (older lines are skipped)."""

LOG_CHUNK_BYTES = 4 * 1024 * 1024
"""Largest live log append (Azure's limit on one append block)."""

MAX_LOG_READ_BYTES = 4 * 1024 * 1024
"""Most bytes of a log one ``GET .../log`` answers (``offset`` reads on)."""


# -- The deployment --------------------------------------------------------------------------------

MAX_PARTITIONS = 64
"""Most partitions a deployment may have (names stay well inside Azure's 63 characters)."""


# -- HTTP requests (checked before any storage access; shared.api.request) -------------------------

MAX_REGISTRY_READ_BYTES = 8 * 1024 * 1024
"""Most bytes (of the known columns' values) one read of a registry partition keeps: anyone with
the workers' table role can write rows of up to 1 MiB, and each GET /api/workers, doctor run and
view of a running workflow reads the partition."""

MAX_REGISTRY_ROWS = 5000
"""Most rows read of each registry partition (workers, queues, marks): any worker may write the
registry, so what a read costs is bounded whatever they wrote."""

MAX_LIST_LIMIT = 1000
"""Most workflows one ``GET /workflows`` page may ask for (``?limit=``)."""

MAX_NAME_FILTER = 256
"""Longest ``?name=`` prefix filter."""

MAX_TOKEN_CHARS = 4096
"""Longest continuation token (``?next=``)."""

MAX_CANCEL_REASON_CHARS = 500
"""Longest cancel reason the API keeps (the rest is cut)."""

MAX_PURGE_PAGE = 1000
"""Most workflows one ``POST /purge`` selects."""

SIGNATURE_CHARS = 88
"""Length of an encoded message signature (Ed25519: 64 bytes in URL-safe base64; shared.signing)."""

MAX_JOB_MARKS = 1000
"""Most recurring jobs' marks one read returns (a sweep per partition writes one)."""

# -- notifications (issue 29: ``notify:``, ``--notify URL``; docs/notifications.md) ------------

MAX_NOTIFY_TARGETS = 10
"""Most webhooks one workflow notifies (its ``notify:`` list plus the submit's ``--notify``)."""

MAX_NOTIFY_URL = 2048
"""Longest webhook URL."""

MAX_NOTIFY_SECRET = 256
"""Longest ``secret`` of a webhook (the HMAC-SHA256 key)."""

NOTIFY_DELIVERY_BOUND_S = 3600.0
"""How long a notification is retried (with backoff) before it is dead-lettered with its reason
(``DAGQ_NOTIFY_RETRY_S`` changes it)."""

NOTIFY_TIMEOUT_S = 10.0
"""Longest one webhook request may take (connect and answer)."""

NOTIFY_LOG_LINES = 20
"""Last log lines of each failed task a notification carries."""

MAX_NOTIFY_FAILED_TASKS = 10
"""Most failed tasks one notification lists (their count is always given)."""
