"""GreenOpsScheduler: the scheduler service as a Deployment and Service, with probes."""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.config import SchedulerConfig
from components.secret_env import secret_env

PORT = 8080
TOKEN_VARIABLE = "GREENOPS_SCHEDULER_TOKEN"  # read by the scheduler and by OPA's http.send (scheduler.rego)


@dataclass
class GreenOpsSchedulerArgs:
    config: SchedulerConfig
    image: str
    token: pulumi.Input[str] | None = None  # greenops:schedulerToken: callers must present it


class GreenOpsScheduler(pulumi.ComponentResource):
    def __init__(self, name: str, args: GreenOpsSchedulerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:GreenOpsScheduler", name, None, opts)
        c = args.config
        labels = {"app.kubernetes.io/name": "greenops-scheduler", "app.kubernetes.io/part-of": "greenops"}
        self.namespace = k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": c.namespace},
                                               opts=pulumi.ResourceOptions(parent=self))
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        env = []
        if args.token is not None:
            self.token_secret, token_env = secret_env(f"{name}-token", "greenops-scheduler-token", c.namespace,
                                                      TOKEN_VARIABLE, args.token, in_ns)
            env.append(token_env)
        probe = lambda path: {"httpGet": {"path": path, "port": PORT}, "periodSeconds": 10}  # noqa: E731
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deploy",
            metadata={"name": "greenops-scheduler", "namespace": c.namespace, "labels": labels},
            spec={
                "replicas": c.replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                    "name": "scheduler",
                    "image": args.image,
                    "args": ["--host", "0.0.0.0", "--port", str(PORT), "--source", c.source,
                             "--capacity-vcpu", str(c.capacity_vcpu)],
                    "ports": [{"name": "http", "containerPort": PORT}],
                    "env": env,
                    "readinessProbe": probe("/readyz"),
                    "livenessProbe": probe("/healthz"),
                    "resources": {"requests": {"cpu": c.cpu, "memory": c.memory}, "limits": {"memory": c.memory}},
                    "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False},
                }]}},
            },
            opts=in_ns,
        )
        self.service = k8s.core.v1.Service(
            f"{name}-svc", metadata={"name": "greenops-scheduler", "namespace": c.namespace, "labels": labels},
            spec={"selector": labels, "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]}, opts=in_ns)
        self.url = pulumi.Output.concat("http://greenops-scheduler.", c.namespace, ".svc:", str(PORT))
        self.register_outputs({"url": self.url})
