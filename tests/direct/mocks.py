"""Pulumi mocks for the direct sets: they record what the engine would be sent and answer as a
cloud would, echoing the inputs and adding what the cloud assigns (the VM's private address)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pulumi
import pytest
from pulumi.runtime.rpc import _special_secret_sig, _special_sig_key

PARENT_TYPE = "greenops:index:GreenWorkload"
# The SDKs warn, as they are imported, about resources of theirs that are deprecated; the sets use none.
SDK_DEPRECATIONS = pytest.mark.filterwarnings("ignore:.* has been deprecated in favor of:DeprecationWarning")
# Addresses "assigned" by the mocked clouds, inside each renderer's subnet.
ASSIGNED_IP = {"azure": "10.0.0.4", "gcp": "10.10.0.2", "aws": "10.20.1.5"}


class DirectMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(args)
        # The inputs come back as outputs, "name" included: without it, an output such as a
        # resource group's name resolves to None and the inputs built from it silently vanish.
        outs: dict[str, Any] = {"name": args.name, **args.inputs}
        if args.typ == "azure-native:network:NetworkInterface":
            outs["ipConfigurations"] = [
                {**c, "privateIPAddress": ASSIGNED_IP["azure"]} for c in outs["ipConfigurations"]
            ]
        elif args.typ == "gcp:compute/instance:Instance":
            outs["networkInterfaces"] = [{**n, "networkIp": ASSIGNED_IP["gcp"]} for n in outs["networkInterfaces"]]
        elif args.typ == "aws:ec2/instance:Instance":
            outs["privateIp"] = ASSIGNED_IP["aws"]
        return [f"{args.name}-id", outs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}

    def created(self) -> list[pulumi.runtime.MockResourceArgs]:
        """Everything but the parent component the test made."""
        return [r for r in self.resources if r.typ != PARENT_TYPE]

    def types(self) -> Counter[str]:
        return Counter(r.typ for r in self.created())

    def one(self, typ: str) -> pulumi.runtime.MockResourceArgs:
        found = [r for r in self.created() if r.typ == typ]
        assert len(found) == 1, f"{len(found)} resources of type {typ}"
        return found[0]


def secret(value: Any) -> dict[str, Any]:
    return {_special_sig_key: _special_secret_sig, "value": value}


def is_secret(value: Any) -> bool:
    """Pulumi's wire form of a secret: it reaches the engine marked, and is stored encrypted."""
    return isinstance(value, dict) and value.get(_special_sig_key) == _special_secret_sig


# Input names that carry a credential in these providers' resources and configuration: adminPassword,
# clientSecret, clientCertificatePassword, accessKey, secretKey, token, oidcToken, credentials, privateKey
# (by the name's end: skipCredentialsValidation and disablePasswordAuthentication are flags).
SECRET_NAME = re.compile(r"(password|secret|token|credentials|privatekey|accesskey|secretkey)$", re.IGNORECASE)


def plaintext_secrets(value: Any, path: str = "") -> list[str]:
    """Paths of inputs named like a credential whose text is not marked secret."""
    if is_secret(value):
        return []
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}/{key}" if path else str(key)
            # a credential is text: flags such as disablePasswordAuthentication are not one
            if SECRET_NAME.search(str(key)) and isinstance(item, str):
                found.append(where)
            else:
                found += plaintext_secrets(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += plaintext_secrets(item, f"{path}/{i}")
    return found
