"""The cloud-init user-data that gives a placed VM its work: a workload's ``run.script``.

One cloud-config document, the same text on both paths: the chart writes it byte for byte
(components/charts/vm-template/templates/_helpers.tpl, "vmtemplate.userData"), and a test holds the
two equal and checks both with cloud-init's own schema. It
- puts the script at RUN_SCRIPT, base64 in ``write_files`` (nothing in a script needs escaping);
- runs it once from ``runcmd``, its output in RUN_LOG and its exit status in EXIT_STATUS;
- powers the VM off after it, whatever the status: a stopped VM is how the end of the run shows,
  as each operator reports its VM's power state.
Each operator takes it its own way: ASO ``osProfile.customData`` and ACK ``userData`` base64,
Config Connector the ``user-data`` metadata item as text.
"""

from __future__ import annotations

import base64

from greenops.models import Workload

RUN_SCRIPT = "/var/lib/greenops/run.sh"
RUN_LOG = "/var/log/greenops-run.log"
EXIT_STATUS = "/var/lib/greenops/exit-status"

_CLOUD_CONFIG = """#cloud-config
write_files:
  - path: {script}
    permissions: "0700"
    encoding: b64
    content: {content}
runcmd:
  - [sh, -c, "{script} > {log} 2>&1; echo $? > {status}"]
power_state:
  mode: poweroff
  message: "greenops: the run has ended"
  condition: true
"""


def user_data(workload: Workload) -> str | None:
    """The cloud-config of ``workload``'s run; None when it runs nothing."""
    if workload.run is None:
        return None
    content = base64.b64encode(workload.run.script.encode()).decode()
    return _CLOUD_CONFIG.format(script=RUN_SCRIPT, content=content, log=RUN_LOG, status=EXIT_STATUS)


def user_data_base64(workload: Workload) -> str | None:
    """The same, base64 (as ASO's customData and ACK's userData take it); None when it runs nothing."""
    text = user_data(workload)
    return None if text is None else base64.b64encode(text.encode()).decode()
