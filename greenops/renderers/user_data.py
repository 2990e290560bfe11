"""The cloud-init user-data that gives a placed VM its work: a workload's ``run.script``.

One cloud-config document, the same text on both paths: the chart writes it byte for byte
(components/charts/vm-template/templates/_helpers.tpl, "vmtemplate.userData"), and a test holds the
two equal and checks both with cloud-init's own schema. It
- puts the script at RUN_SCRIPT, base64 in ``write_files`` (nothing in a script needs escaping);
- runs it once from ``runcmd``, its output in RUN_LOG and its exit status in EXIT_STATUS;
- when given a report (``report_script``), tells the scheduler how the run ended: the exit status,
  with a completion token good for this one reservation only (greenops.reservations.completion);
- powers the VM off after it, whatever the status: a stopped VM is how the end of the run shows,
  as each operator reports its VM's power state.
Each operator takes it its own way: ASO ``osProfile.customData`` and ACK ``userData`` base64,
Config Connector the ``user-data`` metadata item as text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping

from greenops.common.errors import GreenOpsError
from greenops.models import Workload

RUN_SCRIPT = "/var/lib/greenops/run.sh"
RUN_LOG = "/var/log/greenops-run.log"
EXIT_STATUS = "/var/lib/greenops/exit-status"
REPORT_SCRIPT = "/var/lib/greenops/report.sh"
RUN_ENV = "/var/lib/greenops/run.env"  # the run's secret environment (run.env), root-only
# The Secret, in the VmTemplate's namespace, that holds its run's report script (key REPORT_KEY): the
# controller writes it at the gate, the chart reads it (lookup) into the user-data. Never a chart value:
# the script carries the completion token.
REPORT_SECRET_SUFFIX = "-greenops-run"
REPORT_KEY = "report.sh"
# A completion URL and token as they go into the script, unquoted: nothing a shell would read
_URL = re.compile(r"^https?://[A-Za-z0-9._~:/%-]+$")
_TOKEN = re.compile(r"^gor_[A-Za-z0-9_-]{20,100}$")

_REPORT = """#!/bin/sh
# greenops: tell the scheduler how the run ended, with a credential good for this one reservation only
status=$(cat {status})
exec curl -fsS --retry 8 --retry-delay 15 --retry-all-errors --max-time 30 -X POST \\
  -H "Authorization: Bearer {token}" -H "Content-Type: application/json" \\
  --data "{{\\"exitStatus\\": $status}}" {url} >> {log} 2>&1
"""

# One line per variable: the value travels base64 (as a Secret's data holds it), so no value needs
# quoting, and the chart writes the same bytes from the Secret's data as they are.
_ENV_LINE = "export {name}=\"$(printf %s '{value}' | base64 -d)\"\n"
_ENVIRONMENT = """  - path: {path}
    permissions: "0600"
    encoding: b64
    content: {content}
"""
_REPORTER = """  - path: {path}
    permissions: "0700"
    encoding: b64
    content: {content}
"""
_CLOUD_CONFIG = """#cloud-config
write_files:
  - path: {script}
    permissions: "0700"
    encoding: b64
    content: {content}
{environment}{reporter}runcmd:
  - [sh, -c, "{source}{script} > {log} 2>&1; echo $? > {status}{then}"]
power_state:
  mode: poweroff
  message: "greenops: the run has ended"
  condition: true
"""


def report_script(url: str, token: str) -> str:
    """The script that posts the run's exit status to ``url`` (its reservation's completion
    endpoint) with ``token``; refuses what a shell would read as more than a word."""
    if not _URL.match(url) or not _TOKEN.match(token):
        raise GreenOpsError(f"completion report: {url!r} is not a plain http(s) URL, or the token is not a gor_ token")
    return _REPORT.format(status=EXIT_STATUS, token=token, url=url, log=RUN_LOG)


class MissingRunSecret(GreenOpsError):
    """A run's env names a secret key its secrets do not hold; names the workload and the field."""


def environment(workload: Workload, secrets: Mapping[str, str]) -> str | None:
    """The run's env file from ``secrets`` (key -> value); None when its run has no env."""
    if workload.run is None or not workload.run.env:
        return None
    lines = []
    for i, e in enumerate(workload.run.env):
        if e.secret not in secrets:
            raise MissingRunSecret(
                f"workload {workload.name!r}: run.env[{i}].secret {e.secret!r} ({e.name}): no such key in its run "
                "secrets (greenops:runSecrets on the Pulumi path, the Secret greenops-run-secrets on the cluster path)"
            )
        lines.append(_ENV_LINE.format(name=e.name, value=_b64(secrets[e.secret])))
    return "".join(lines)


def user_data(workload: Workload, report: str | None = None, secrets: Mapping[str, str] | None = None) -> str | None:
    """The cloud-config of ``workload``'s run, with ``report`` (report_script) when given and its env
    from ``secrets``; None when it runs nothing."""
    if workload.run is None:
        return None
    content = base64.b64encode(workload.run.script.encode()).decode()
    env = environment(workload, secrets or {})
    text = _CLOUD_CONFIG.format(
        script=RUN_SCRIPT,
        content=content,
        log=RUN_LOG,
        status=EXIT_STATUS,
        environment="" if env is None else _ENVIRONMENT.format(path=RUN_ENV, content=_b64(env)),
        source="" if env is None else f". {RUN_ENV}; ",
        reporter="" if report is None else _REPORTER.format(path=REPORT_SCRIPT, content=_b64(report)),
        then="" if report is None else f"; {REPORT_SCRIPT}",
    )
    return text


def user_data_base64(
    workload: Workload, report: str | None = None, secrets: Mapping[str, str] | None = None
) -> str | None:
    """The same, base64 (as ASO's customData and ACK's userData take it); None when it runs nothing."""
    text = user_data(workload, report, secrets)
    return None if text is None else _b64(text)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
