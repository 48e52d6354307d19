"""``python -m tests.helpers.kernels_oracle MODULE FUNCTION`` < payload.json → answer.json (see kernels_releases.ask)."""

from __future__ import annotations

import importlib
import json
import sys
import traceback


def main() -> None:
    module_name, function_name = sys.argv[1:3]
    function = getattr(importlib.import_module(f"tests.helpers.kernels_oracle.{module_name}"), function_name)
    payload = json.loads(sys.stdin.read() or "null")
    try:
        answer = function(payload)
    except Exception as exc:  # a refusal is the release's decision: answered, not crashed
        answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(traceback.format_exc(), file=sys.stderr)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
