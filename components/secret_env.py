"""A Pulumi secret handed to a container as an environment variable, through a Kubernetes Secret.

The value stays encrypted in Pulumi state (the Secret's ``stringData`` is a secret output) and the
pod spec only names the Secret, so neither ``kubectl get deployment -o yaml`` nor the state's
plaintext shows it.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def secret_env(
    resource_name: str,
    secret_name: str,
    namespace: str,
    variable: str,
    value: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> tuple[k8s.core.v1.Secret, k8s.core.v1.EnvVarArgs]:
    """The Secret holding ``value`` under key ``variable``, and the container env entry reading it."""
    secret = k8s.core.v1.Secret(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=secret_name, namespace=namespace),
        string_data={variable: pulumi.Output.secret(value)},
        opts=opts,
    )
    env = k8s.core.v1.EnvVarArgs(
        name=variable,
        value_from=k8s.core.v1.EnvVarSourceArgs(
            secret_key_ref=k8s.core.v1.SecretKeySelectorArgs(name=secret_name, key=variable)
        ),
    )
    return secret, env
