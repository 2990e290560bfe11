"""A Pulumi secret handed to a container through a Kubernetes Secret: as an environment variable
(``secret_env``), or as a mounted file (``secret_file``) for a program that reads one.

The value stays encrypted in Pulumi state (the Secret's ``stringData`` is a secret output) and the
pod spec only names the Secret, so neither ``kubectl get deployment -o yaml`` nor the state's
plaintext shows it.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def secret_holding(
    resource_name: str,
    secret_name: str,
    namespace: str,
    key: str,
    value: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Secret:
    """The Secret holding ``value`` under ``key``, encrypted in state."""
    return k8s.core.v1.Secret(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=secret_name, namespace=namespace),
        string_data={key: pulumi.Output.secret(value)},
        opts=opts,
    )


def secret_env(
    resource_name: str,
    secret_name: str,
    namespace: str,
    variable: str,
    value: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> tuple[k8s.core.v1.Secret, k8s.core.v1.EnvVarArgs]:
    """The Secret holding ``value`` under key ``variable``, and the container env entry reading it."""
    secret = secret_holding(resource_name, secret_name, namespace, variable, value, opts)
    env = k8s.core.v1.EnvVarArgs(
        name=variable,
        value_from=k8s.core.v1.EnvVarSourceArgs(
            secret_key_ref=k8s.core.v1.SecretKeySelectorArgs(name=secret_name, key=variable)
        ),
    )
    return secret, env


def secret_file(
    resource_name: str,
    secret_name: str,
    namespace: str,
    key: str,
    value: pulumi.Input[str],
    directory: str,
    opts: pulumi.ResourceOptions,
) -> tuple[k8s.core.v1.Secret, k8s.core.v1.VolumeArgs, k8s.core.v1.VolumeMountArgs]:
    """The Secret holding ``value`` under ``key``, and the volume and mount that show it to a
    container as the file ``<directory>/token``, readable by the pod's group only."""
    secret = secret_holding(resource_name, secret_name, namespace, key, value, opts)
    volume = k8s.core.v1.VolumeArgs(
        name=secret_name,
        secret=k8s.core.v1.SecretVolumeSourceArgs(
            secret_name=secret_name, items=[k8s.core.v1.KeyToPathArgs(key=key, path="token")], default_mode=0o440
        ),
    )
    mount = k8s.core.v1.VolumeMountArgs(name=secret_name, mount_path=directory, read_only=True)
    return secret, volume, mount
