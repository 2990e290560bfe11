"""What a cluster would have to resolve in one rendered set. The workloads' namespace holds only our
objects, so an owner named in-namespace must be one of them: ``owner: {name: <resource group>}``
passed every mock and schema check while nothing in the namespace created that ResourceGroup, and an
ACK Instance without its security group's id ran under the VPC's default group."""

from __future__ import annotations

import re

# ASO's owner.armId for a resource group (the CRDs accept other ARM ids too; we only ever mean this one)
RESOURCE_GROUP_ARM_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+$")


def owner_problems(objects: list[dict]) -> list[str]:
    """One line per ASO object whose ``spec.owner`` a real cluster could not resolve."""
    rendered = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects}
    problems = []
    for o in objects:
        if not o["apiVersion"].split("/")[0].endswith(".azure.com"):
            continue
        where = f"{o['kind']}/{o['metadata']['name']}: spec.owner"
        owner = (o.get("spec") or {}).get("owner") or {}
        if "armId" in owner:
            if not RESOURCE_GROUP_ARM_ID.match(owner["armId"]):
                problems.append(f"{where}.armId: {owner['armId']!r} is not /subscriptions/<id>/resourceGroups/<name>")
        elif "name" in owner:
            namespace = o["metadata"]["namespace"]
            if (namespace, owner["name"]) not in rendered:
                problems.append(
                    f"{where}.name: {owner['name']!r} is not an object of this set, and nothing else "
                    f"creates it in namespace {namespace!r}"
                )
        else:
            problems.append(f"{where}: neither armId nor name")
    return problems


# The id the ACK controller reports in a SecurityGroup's status once AWS has created the group.
GROUP_ID = "sg-0a1b2c3d4e5f60718"


def group_reported(workload: str, group_id: str = GROUP_ID) -> dict[str, dict]:
    """What the cluster reports about ``workload``'s SecurityGroup once it exists, as a renderer's
    ``observed`` (``"Kind/name"`` -> status)."""
    return {f"SecurityGroup/{workload}-sg": {"id": group_id}}


def security_group_problems(objects: list[dict], reported: dict[str, dict]) -> list[str]:
    """One line per ACK Instance that does not attach every SecurityGroup of its set by the id the
    cluster reports for it (ACK's Instance takes groups by id only). Without one the VPC's default
    group applies, and the rendered group guards nothing."""
    groups = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "SecurityGroup")
    problems = []
    for o in objects:
        if o["kind"] != "Instance" or not o["apiVersion"].startswith("ec2.services.k8s.aws/"):
            continue
        attached = (o.get("spec") or {}).get("securityGroupIDs") or []
        for group in groups:
            group_id = (reported.get(f"SecurityGroup/{group}") or {}).get("id")
            if group_id is None or group_id not in attached:
                problems.append(
                    f"Instance/{o['metadata']['name']}: spec.securityGroupIDs {attached} does not attach "
                    f"SecurityGroup {group} (reported id {group_id})"
                )
    return problems
