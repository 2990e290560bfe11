"""AwsControllers: the ACK EC2 controller and its IAM role (IRSA, least privilege)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.config import AwsConfig
from components.helm import release
from components.pins import ChartPin

NAMESPACE = "ack-system"
SERVICE_ACCOUNT = "ack-ec2-controller"
# What the minimum set needs: VPC, Subnet, SecurityGroup, Instance (+ tags and reads).
EC2_ACTIONS = sorted(
    [
        "ec2:CreateVpc",
        "ec2:DeleteVpc",
        "ec2:ModifyVpcAttribute",
        "ec2:CreateSubnet",
        "ec2:DeleteSubnet",
        "ec2:ModifySubnetAttribute",
        "ec2:CreateSecurityGroup",
        "ec2:DeleteSecurityGroup",
        "ec2:AuthorizeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupEgress",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:RevokeSecurityGroupIngress",
        "ec2:RunInstances",
        "ec2:TerminateInstances",
        "ec2:StopInstances",
        "ec2:StartInstances",
        "ec2:CreateTags",
        "ec2:DeleteTags",
        "ec2:Describe*",
    ]
)


def trust_policy(provider_arn: str, issuer: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Federated": provider_arn},
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": {
                        "StringEquals": {
                            f"{issuer}:sub": f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}",
                            f"{issuer}:aud": "sts.amazonaws.com",
                        }
                    },
                }
            ],
        }
    )


@dataclass
class AwsControllersArgs:
    config: AwsConfig
    chart: ChartPin


class AwsControllers(pulumi.ComponentResource):
    def __init__(self, name: str, args: AwsControllersArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:AwsControllers", name, None, opts)
        c = args.config
        child = pulumi.ResourceOptions(parent=self)
        self.role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=trust_policy(c.oidc_provider_arn, c.oidc_issuer),
            description="ACK EC2 controller (GreenOps)",
            opts=child,
        )
        self.policy = aws.iam.Policy(
            f"{name}-ec2",
            policy=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": EC2_ACTIONS, "Resource": "*"}]}
            ),
            opts=child,
        )
        self.attachment = aws.iam.RolePolicyAttachment(
            f"{name}-attach", role=self.role.name, policy_arn=self.policy.arn, opts=child
        )
        self.controller = release(
            f"{name}-ec2",
            args.chart,
            NAMESPACE,
            {
                "aws": {"region": c.region},
                "serviceAccount": {
                    "name": SERVICE_ACCOUNT,
                    "annotations": {"eks.amazonaws.com/role-arn": self.role.arn},
                },
            },
            self,
            depends_on=[self.attachment],
        )
        self.register_outputs({"roleArn": self.role.arn})
