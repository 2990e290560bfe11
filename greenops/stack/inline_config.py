"""How much stack config a program can be handed.

A Pulumi language host starts the program with the whole stack config as one environment variable,
``PULUMI_CONFIG`` (a JSON object of ``namespace:key`` to string); the official Python host does and
so does the project's own (greenops/local/langhost.py). Linux refuses to start a program when any
one string of its environment is longer than MAX_ARG_STRLEN, 32 pages or 128 KiB: 1000 workloads
written inline failed with "could not run language executor: [Errno 7] Argument list too long",
with no word of what to do. The project's language host and the program itself refuse config past
a bound just below it, naming greenops:workloadsFrom, which reads workloads from files instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

# MAX_ARG_STRLEN on Linux: "NAME=value" and its terminating NUL must fit.
ENVIRONMENT_STRING_LIMIT = 128 * 1024
# The bound this platform holds the config to: 8 KiB below the kernel's, so a stack that passes
# does not start failing when a secret's ciphertext or a setting grows by a few lines.
INLINE_CONFIG_LIMIT = 120 * 1024
ENVIRONMENT_VARIABLE = "PULUMI_CONFIG"


def too_large_for_environment(config: Mapping[str, str]) -> str | None:
    """Why ``config`` (the stack's, as the engine hands it to a language host) cannot be handed to a
    program in its environment, or None when it can. Measured as the host serializes it."""
    size = _size(config)
    if size <= INLINE_CONFIG_LIMIT:
        return None
    largest = max(config, key=lambda k: _size(config[k]))
    return (
        f"the stack's config is {size} bytes as the program's environment ({ENVIRONMENT_VARIABLE}), above the "
        f"{INLINE_CONFIG_LIMIT} bytes allowed: Linux refuses to start a program with an environment string over "
        f"{ENVIRONMENT_STRING_LIMIT} bytes. {largest} is {_size(config[largest])} bytes of it: declare the "
        "workloads in files named by greenops:workloadsFrom instead"
    )


def _size(value: object) -> int:
    return len(json.dumps(value).encode())
