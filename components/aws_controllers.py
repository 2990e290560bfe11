"""AwsControllers: the ACK EC2 controller and its IAM role (IRSA, least privilege)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.helm import release
from components.pins import ChartPin
from components.platform_config import AwsConfig
from greenops.renderers.base import MANAGED_BY, MANAGED_BY_TAG

NAMESPACE = "ack-system"
SERVICE_ACCOUNT = "ack-ec2-controller"
# What the minimum set needs (VPC, Subnet, SecurityGroup, Instance), each action only on resources
# tagged as the renderer tags them (greenops/renderers: managed-by = greenops), and each create only
# when the request carries that tag (ACK passes spec.tags as the create call's TagSpecifications).
OWNED = {"StringEquals": {f"aws:ResourceTag/{MANAGED_BY_TAG}": MANAGED_BY}}
TAGGED_REQUEST = {"StringEquals": {f"aws:RequestTag/{MANAGED_BY_TAG}": MANAGED_BY}}
CREATES = {  # action -> the resource type it creates
    "ec2:CreateVpc": "vpc",
    "ec2:CreateSubnet": "subnet",
    "ec2:CreateSecurityGroup": "security-group",
    "ec2:RunInstances": "instance",
}
# resource type -> the actions on an existing one, allowed only when it carries the tag
MUTATIONS = {
    "vpc": ["ec2:DeleteVpc", "ec2:ModifyVpcAttribute", "ec2:CreateSubnet", "ec2:CreateSecurityGroup"],
    "subnet": ["ec2:DeleteSubnet", "ec2:ModifySubnetAttribute", "ec2:RunInstances"],
    "security-group": [
        "ec2:DeleteSecurityGroup",
        "ec2:AuthorizeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupEgress",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:RevokeSecurityGroupIngress",
        "ec2:RunInstances",
    ],
    "instance": ["ec2:TerminateInstances", "ec2:StopInstances", "ec2:StartInstances"],
}
# What else a RunInstances or a rule change names, which the renderer does not tag: the public AMI,
# the volume and interface the launch creates, a rule's own id. None is enough on its own: the same
# call must also be allowed on the tagged instance, subnet or group above.
COMPANIONS = {
    "ec2:RunInstances": ["image", "volume", "network-interface", "key-pair"],
    "ec2:AuthorizeSecurityGroupEgress": ["security-group-rule"],
    "ec2:RevokeSecurityGroupEgress": ["security-group-rule"],
    "ec2:AuthorizeSecurityGroupIngress": ["security-group-rule"],
    "ec2:RevokeSecurityGroupIngress": ["security-group-rule"],
}


def ec2_policy(partition: str, account: str) -> dict:
    """The ACK EC2 controller's permissions, in any region (the scheduler picks it) of one account."""

    def arns(*types: str) -> list[str]:
        return [f"arn:{partition}:ec2:*:{account}:{t}/*" for t in types]

    statements: list[dict] = [
        # reads cannot be narrowed by tag (Describe* takes no resource); they change nothing
        {"Sid": "Read", "Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
    ]
    for action, created in CREATES.items():
        statements.append(
            {
                "Sid": f"Create{created.title().replace('-', '')}",
                "Effect": "Allow",
                "Action": [action],
                "Resource": arns(created),
                "Condition": TAGGED_REQUEST,
            }
        )
    statements.append(
        # tagging as part of a create above (TagSpecifications), never on its own
        {
            "Sid": "TagOnCreate",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags"],
            "Resource": arns(*MUTATIONS),
            "Condition": {"StringEquals": {"ec2:CreateAction": sorted(CREATES)}},
        }
    )
    for resource_type, actions in MUTATIONS.items():
        statements.append(
            {
                "Sid": f"Owned{resource_type.title().replace('-', '')}",
                "Effect": "Allow",
                "Action": actions,
                "Resource": arns(resource_type),
                "Condition": OWNED,
            }
        )
    statements += [
        # ACK keeps the tags in sync: on our resources only, and the owner tag stays ours
        {
            "Sid": "RetagOwned",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags"],
            "Resource": arns(*MUTATIONS),
            "Condition": {**OWNED, "StringEqualsIfExists": {f"aws:RequestTag/{MANAGED_BY_TAG}": MANAGED_BY}},
        },
        {
            "Sid": "UntagOwned",
            "Effect": "Allow",
            "Action": ["ec2:DeleteTags"],
            "Resource": arns(*MUTATIONS),
            "Condition": {**OWNED, "ForAllValues:StringNotEquals": {"aws:TagKeys": [MANAGED_BY_TAG]}},
        },
    ]
    for action, types in COMPANIONS.items():
        statements.append(
            {"Sid": f"With{action.split(':')[1]}", "Effect": "Allow", "Action": [action], "Resource": arns(*types)}
        )
    return {"Version": "2012-10-17", "Statement": statements}


def account_of(arn: str) -> tuple[str, str]:
    """(partition, account) of an ARN such as the cluster's OIDC provider's."""
    parts = arn.split(":")
    if len(parts) < 6 or parts[0] != "arn" or not parts[4].isdigit():
        raise ValueError(f"not an IAM ARN with an account: {arn!r}")
    return parts[1], parts[4]


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
            policy=json.dumps(ec2_policy(*account_of(c.oidc_provider_arn))),
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
