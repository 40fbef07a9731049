"""``python -m shared.definition.schema [--check]``: regenerate (or check) workflow.schema.json."""

from __future__ import annotations

import sys

from shared.definition.schema import SCHEMA_PATH, render_schema


def main(argv: list[str]) -> int:
    text = render_schema()
    current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
    if "--check" in argv:
        if current != text:
            print(
                f"{SCHEMA_PATH} is stale: run python -m shared.definition.schema", file=sys.stderr
            )
            return 1
        print(f"{SCHEMA_PATH} is up to date")
        return 0
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
