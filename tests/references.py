"""What a cluster would have to resolve in one rendered set. The workloads' namespace holds only our
objects, so an owner named in-namespace must be one of them: ``owner: {name: <resource group>}``
passed every mock and schema check while nothing in the namespace created that ResourceGroup."""
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
                problems.append(f"{where}.name: {owner['name']!r} is not an object of this set, and nothing else "
                                f"creates it in namespace {namespace!r}")
        else:
            problems.append(f"{where}: neither armId nor name")
    return problems


def security_group_problems(objects: list[dict]) -> list[str]:
    """One line per ACK Instance that does not attach every SecurityGroup of its set by reference.
    Without one the VPC's default group applies, and the rendered group guards nothing."""
    groups = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "SecurityGroup")
    problems = []
    for o in objects:
        if o["kind"] != "Instance" or not o["apiVersion"].startswith("ec2.services.k8s.aws/"):
            continue
        spec = o.get("spec") or {}
        attached = {(r.get("from") or {}).get("name") for r in spec.get("securityGroupRefs") or []}
        for group in groups:
            if group not in attached:
                problems.append(f"Instance/{o['metadata']['name']}: spec.securityGroupRefs: does not attach "
                                f"SecurityGroup {group} (securityGroupIDs: {spec.get('securityGroupIDs')})")
    return problems
