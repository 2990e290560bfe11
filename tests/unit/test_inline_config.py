"""Stack config reaches a Python program as one environment variable (PULUMI_CONFIG), and Linux
refuses to start a program with an environment string over 128 KiB: 1000 workloads written inline
used to fail with "could not run language executor: [Errno 7] Argument list too long". Too much
inline config is refused before that, saying why and naming greenops:workloadsFrom."""

from __future__ import annotations

import json

from pulumi.runtime.proto import language_pb2

from greenops.local.langhost import LanguageHost
from greenops.stack.inline_config import ENVIRONMENT_STRING_LIMIT, INLINE_CONFIG_LIMIT, too_large_for_environment


def workloads(n: int) -> str:
    return json.dumps(
        [
            {
                "name": f"job-{i}",
                "cpu": 2,
                "memory": 4,
                "duration": "1h",
                "deadline": "2027-01-01T00:00:00Z",
                "originRegion": "westeurope",
                "tenant": "media",
            }
            for i in range(n)
        ]
    )


def test_the_bound_is_below_what_linux_allows_one_environment_string():
    assert ENVIRONMENT_STRING_LIMIT == 128 * 1024
    assert INLINE_CONFIG_LIMIT + len("PULUMI_CONFIG=") + 1 < ENVIRONMENT_STRING_LIMIT


def test_small_config_passes():
    assert too_large_for_environment({"greenops:workloads": workloads(10), "greenops:render": "{}"}) is None


def test_a_thousand_inline_workloads_are_refused_naming_workloads_from():
    config = {"greenops:workloads": workloads(1000), "greenops:render": "{}"}
    size = len(json.dumps(config).encode())
    assert size > ENVIRONMENT_STRING_LIMIT  # what failed with "Argument list too long"
    problem = too_large_for_environment(config)
    assert problem == (
        f"the stack's config is {size} bytes as the program's environment (PULUMI_CONFIG), above the "
        f"{INLINE_CONFIG_LIMIT} bytes allowed: Linux refuses to start a program with an environment string "
        f"over {ENVIRONMENT_STRING_LIMIT} bytes. greenops:workloads is "
        f"{len(json.dumps(config['greenops:workloads']).encode())} bytes of it: declare the workloads in files "
        "named by greenops:workloadsFrom instead"
    )


def test_the_language_host_refuses_before_starting_the_program(monkeypatch):
    import subprocess

    def no_start(*args, **kwargs):
        raise AssertionError("the program must not be started")

    monkeypatch.setattr(subprocess, "Popen", no_start)
    request = language_pb2.RunRequest(project="p", stack="s", config={"greenops:workloads": workloads(1000)})
    answer = LanguageHost(None, None).Run(request, None)
    assert answer.error.startswith("the stack's config is ")
    assert "greenops:workloadsFrom" in answer.error and "Argument list too long" not in answer.error
