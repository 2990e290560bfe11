"""Every platform component under Pulumi mocks: types and counts, key fields, secrets, stable
certificates, and parts switched off."""

from __future__ import annotations

import base64
import json

import pulumi
import pytest
import yaml

from components.platform_config import VERSIONS_FILE
from greenops.policies import metrics_token, webhook_token
from greenops.policies.webhook import CONFIGURATION_NAME

CA_PEM = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
PROD = {
    "krateo": {"vmTemplateChartUrl": "oci://registry.example.com/charts"},
    "azure": {
        "enabled": True,
        "subscriptionId": "sub-1",
        "tenantId": "tenant-1",
        "oidcIssuerUrl": "https://oidc.example.com/cluster",
    },
    "gcp": {"enabled": True, "project": "acme-green"},
    "aws": {
        "enabled": True,
        "oidcProviderArn": "arn:aws:iam::123456789012:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC",
        "oidcIssuer": "oidc.eks.eu-west-1.amazonaws.com/id/ABC",
    },
    "policy": {"bundleServiceUrl": "https://bundles.example.com", "webhookTimeoutSeconds": 10},
    "kserve": {"zones": ["DE", "FR"]},
    "networkPolicy": {"apiServerCidrs": ["172.16.0.0/28"]},
}
MOCK_OUTPUTS = {
    "tls:index/selfSignedCert:SelfSignedCert": {"certPem": CA_PEM},
    "tls:index/privateKey:PrivateKey": {"privateKeyPem": "KEY"},
    "tls:index/certRequest:CertRequest": {"certRequestPem": "CSR"},
    "tls:index/locallySignedCert:LocallySignedCert": {"certPem": "SERVING"},
    "azure-native:managedidentity:UserAssignedIdentity": {
        "principalId": "principal-1",
        "clientId": "client-1",
        "name": "id-1",
    },
    "azure-native:resources:ResourceGroup": {"id": "/subscriptions/sub-1/resourceGroups/greenops-workloads"},
    "gcp:serviceaccount/account:Account": {
        "email": "kcc@acme-green.iam.gserviceaccount.com",
        "name": "projects/acme-green/serviceAccounts/kcc",
    },
    "aws:iam/role:Role": {"arn": "arn:aws:iam::123456789012:role/ack", "name": "ack"},
    "aws:iam/policy:Policy": {"arn": "arn:aws:iam::123456789012:policy/ack-ec2"},
}


class Mocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.resources = []

    def new_resource(self, args):
        self.resources.append(args)
        outs = {**args.inputs, **MOCK_OUTPUTS.get(args.typ, {})}
        return [outs.get("id", f"{args.name}-id"), outs]

    def call(self, args):
        return {}


OPA_TOKENS = {"greenops:opaToken": "Q7x-query-s3cret", "greenops:opaAdminToken": "A9z-admin-s3cret"}
SCHEDULER_TOKENS = {
    "greenops:schedulerAdminToken": "S4d-scheduler-admin-s3cret",  # the scheduler's bootstrap admin
    "greenops:opaSchedulerToken": "O2p-opa-at-the-scheduler-s3cret",  # OPA's principal at the scheduler
}
METRICS_TOKEN = {"greenops:metricsToken": "M3t-prometheus-s3cret"}  # Prometheus's, with monitoring on
# what a cluster install with the scheduler and policy on refuses to go without (greenops.stack.program)
CREDENTIALS = {**SCHEDULER_TOKENS, **OPA_TOKENS, **METRICS_TOKEN}


def run_platform(
    platform: dict,
    secrets=True,
    without: str | tuple[str, ...] | None = None,
    extra: dict | None = None,
    credentials: bool = True,
) -> Mocks:
    """``secrets``: the optional secrets (MLflow's and the object store's); ``credentials``: the
    scheduler's and OPA's tokens, without which a platform that runs them is refused."""
    m = Mocks()
    pulumi.runtime.set_mocks(m, project="greenops-platform", stack="prod", preview=False)
    config = {
        "greenops:platform": json.dumps(platform),
        "greenops:kubernetes": json.dumps({"mode": "cluster"}),
        "greenops:kubeconfig": "apiVersion: v1",
        "greenops:schedulerDbPassword": "sched-db/pa:ss",
    }
    if secrets:
        config.update(
            {"greenops:mlflowDbPassword": "db-pass", "greenops:s3AccessKey": "ak", "greenops:s3SecretKey": "sk"}
        )
    if credentials:
        config.update(CREDENTIALS)
    config.update(extra or {})
    for key in (without,) if isinstance(without, str) else without or ():
        config.pop(key, None)
    pulumi.runtime.set_all_config(
        config,
        secret_keys=[
            "greenops:mlflowDbPassword",
            "greenops:s3AccessKey",
            "greenops:s3SecretKey",
            "greenops:kubeconfig",
            "greenops:schedulerDbPassword",
            "greenops:schedulerDatabaseUrl",
            *CREDENTIALS,
        ],
    )
    return m


def unwrap(value):
    """The value inside Pulumi's secret marker (the marker itself proves it is registered secret)."""
    return value["value"] if isinstance(value, dict) and SECRET_SIG in value else value


def of(m: Mocks, typ: str):
    return [r for r in m.resources if r.typ == typ]


def collect(platform: dict, secrets: bool = True, credentials: bool = True) -> Mocks:
    """Run the program; pulumi.runtime.test waits for every registration before returning."""
    m = run_platform(platform, secrets, credentials=credentials)

    @pulumi.runtime.test
    def go():
        from greenops.stack import program

        program.run()

    go()
    return m


def stack_platform(stack: str) -> dict:
    from pathlib import Path

    config = yaml.safe_load((Path(__file__).resolve().parents[2] / "stacks" / f"Pulumi.{stack}.yaml").read_text())[
        "config"
    ]
    return config["greenops:platform"]


def test_the_prod_stack_previews_the_whole_platform():
    m = collect(stack_platform("prod"))
    assert (
        len({r.typ for r in m.resources if r.typ.startswith("greenops:platform:")}) == 15
    )  # + WorkloadReconciler, ExternalAccess, NetworkPolicies, Monitoring
    assert len(of(m, "kubernetes:serving.kserve.io/v1beta1:InferenceService")) == 6  # 5 zones + generic


def test_staging_installs_only_its_parts():
    m = collect(stack_platform("staging"), secrets=False)
    assert {
        r.typ.removeprefix("greenops:platform:") for r in m.resources if r.typ.startswith("greenops:platform:")
    } == {
        "GreenOpsPlatform",
        "KrateoPlatform",
        "ConfigConnector",
        "GreenOpsScheduler",
        "Controller",
        "PolicyEngine",
        "NetworkPolicies",
    }


def test_the_whole_platform_in_prod():
    m = collect(PROD)
    types = [r.typ for r in m.resources]
    components = {r.typ for r in m.resources if r.typ.startswith("greenops:platform:")}
    assert components == {
        f"greenops:platform:{c}"
        for c in (
            "GreenOpsPlatform",
            "KrateoPlatform",
            "CertManager",
            "AzureServiceOperator",
            "ConfigConnector",
            "AwsControllers",
            "GreenOpsScheduler",
            "Controller",
            "PolicyEngine",
            "ModelTracking",
            "ModelServing",
            "NetworkPolicies",
        )
    }
    pins = yaml.safe_load(VERSIONS_FILE.read_text())
    releases = {r.name: r.inputs for r in of(m, "kubernetes:helm.sh/v3:Release")}
    assert releases["krateo-core-provider"]["version"] == pins["krateo_core_provider"]["version"]
    assert releases["aso-aso"]["version"] == pins["azure_service_operator"]["version"]
    assert (
        unwrap(releases["aso-aso"]["values"])["crdPattern"]
        == "resources.azure.com/*;network.azure.com/*;compute.azure.com/*"
    )
    assert releases["ack-ec2"]["chart"] == "oci://public.ecr.aws/aws-controllers-k8s/ec2-chart"
    assert unwrap(releases["kserve-controller"]["values"])["kserve"]["controller"]["deploymentMode"] == "RawDeployment"
    assert types.count("kubernetes:serving.kserve.io/v1beta1:InferenceService") == 3  # DE, FR, generic
    assert len(of(m, "kubernetes:core.krateo.io/v1alpha1:CompositionDefinition")) == 1


def test_webhook_configuration():
    m = collect(PROD)
    [hook] = of(m, "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration")
    # the one definition the local control plane uses too (greenops/policies/webhook.py)
    assert hook.inputs["metadata"] == {"name": CONFIGURATION_NAME}
    # one webhook: DELETE is not sent (the controller releases on the deletion it observes)
    [place] = hook.inputs["webhooks"]
    assert place["rules"] == [
        {
            "apiGroups": ["composition.krateo.io"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["vmtemplates"],
            "scope": "Namespaced",
        }
    ]
    # dry runs book nothing (request.dryRun), so the API server may send them
    assert place["sideEffects"] == "NoneOnDryRun" and place["timeoutSeconds"] == 10
    assert place["admissionReviewVersions"] == ["v1"] and place["reinvocationPolicy"] == "Never"
    assert base64.b64decode(place["clientConfig"]["caBundle"]).decode() == CA_PEM  # the CA resource's own cert
    # the webhook's own OPA process (the NetworkPolicy admits only the API server to it)
    assert place["clientConfig"]["service"] == {"name": "opa", "namespace": "opa", "path": "/", "port": 8444}
    assert place["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "opa"]
    assert place["failurePolicy"] == "Fail"  # placing fails closed
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] == "opa"]
    opa, webhook, mgmt = deploy.inputs["spec"]["template"]["spec"]["containers"]
    for c in (opa, webhook):
        assert {"name": "SCHEDULER_URL", "value": "http://greenops-scheduler.greenops.svc:8080"} in c["env"]
        assert "--config-file=/config/config.json" in c["args"]
    # each process serves one thing, on one address; only the webhook's holds the API server's token
    assert [a for a in opa["args"] if a.startswith("--addr")] == ["--addr=0.0.0.0:8443"]
    assert [a for a in webhook["args"] if a.startswith("--addr")] == ["--addr=0.0.0.0:8444"]
    assert {"name": "GREENOPS_OPA_SERVES", "value": "decisions"} in opa["env"]
    assert {"name": "GREENOPS_OPA_SERVES", "value": "webhook"} in webhook["env"]
    names = {c["name"]: {e["name"] for e in c["env"]} for c in (opa, webhook)}
    assert "GREENOPS_OPA_WEBHOOK_TOKEN" in names["opa-webhook"] and "GREENOPS_OPA_WEBHOOK_TOKEN" not in names["opa"]
    # two processes, two persistence directories: no two writers of one persisted bundle
    mounts = {c["name"]: {m["name"] for m in c["volumeMounts"]} for c in (opa, webhook)}
    assert "persist-opa" in mounts["opa"] and "persist-opa-webhook" in mounts["opa-webhook"]
    assert "--opa-url=https://127.0.0.1:8444/v1" in mgmt["args"]  # the namespaces go to the webhook's process
    assert "--replicate=composition.krateo.io/v1-0-0/vmtemplates" in mgmt["args"]
    assert "--replicate-cluster=v1/namespaces" in mgmt["args"]  # the tenant is the namespace's label
    [role] = [r for r in of(m, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole") if r.name == "opa-replicate"]
    assert role.inputs["rules"] == [
        {"apiGroups": ["composition.krateo.io"], "resources": ["vmtemplates"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
    ]
    [cm] = [r for r in of(m, "kubernetes:core/v1:ConfigMap") if r.name == "opa-config"]
    assert json.loads(cm.inputs["data"]["config.json"])["bundles"]["greenops"]["polling"]["min_delay_seconds"] == 30


def test_identities_trust_only_the_operators_and_roles_are_scoped():
    m = collect(PROD)
    [fic] = of(m, "azure-native:managedidentity:FederatedIdentityCredential")
    assert fic.inputs["subject"] == "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default"
    assert fic.inputs["issuer"] == "https://oidc.example.com/cluster"
    # Virtual Machine Contributor and Network Contributor, on the workloads' resource group only
    assignments = of(m, "azure-native:authorization:RoleAssignment")
    assert sorted(ra.inputs["roleDefinitionId"].rsplit("/", 1)[1] for ra in assignments) == [
        "4d97b98b-1d4f-4787-a291-c67834d212e7",
        "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",
    ]
    for ra in assignments:
        assert ra.inputs["scope"] == "/subscriptions/sub-1/resourceGroups/greenops-workloads"
        assert ra.inputs["principalId"] == "principal-1"
    [aso_secret] = [
        r for r in of(m, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "aso-controller-settings"
    ]
    assert unwrap(aso_secret.inputs["stringData"])["AZURE_CLIENT_ID"] == "client-1"
    assert unwrap(aso_secret.inputs["stringData"])["USE_WORKLOAD_IDENTITY_AUTH"] == "true"
    members = {r.inputs["role"]: r.inputs["member"] for r in m.resources if r.typ.endswith("IAMMember")}
    assert (
        members.pop("roles/iam.workloadIdentityUser")
        == "serviceAccount:acme-green.svc.id.goog[cnrm-system/cnrm-controller-manager]"
    )
    # instances, networks and subnetworks on the project: no Owner, Editor or compute.admin
    assert members == {
        "roles/compute.instanceAdmin.v1": "serviceAccount:kcc@acme-green.iam.gserviceaccount.com",
        "roles/compute.networkAdmin": "serviceAccount:kcc@acme-green.iam.gserviceaccount.com",
    }
    [role] = of(m, "aws:iam/role:Role")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert (
        trust["Condition"]["StringEquals"]["oidc.eks.eu-west-1.amazonaws.com/id/ABC:sub"]
        == "system:serviceaccount:ack-system:ack-ec2-controller"
    )
    [policy] = of(m, "aws:iam/policy:Policy")
    actions = {a for s in json.loads(policy.inputs["policy"])["Statement"] for a in s["Action"]}
    assert "ec2:RunInstances" in actions and "*" not in actions and "ec2:*" not in actions
    # every statement is in the account of the cluster's OIDC provider (tag conditions: test_cloud_roles.py)
    for s in json.loads(policy.inputs["policy"])["Statement"][1:]:
        assert all(arn.startswith("arn:aws:ec2:*:123456789012:") for arn in s["Resource"]), s


def test_secrets_stay_secret():
    m = collect(PROD)
    [creds] = [r for r in of(m, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "mlflow-credentials"]
    # the whole stringData is registered as a secret, since its values are
    assert set(creds.inputs["stringData"]["value"]) == {
        "username",
        "postgres-password",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    }
    assert SECRET_SIG in creds.inputs["stringData"]
    # MLflow's chart reads the login and the keys from that Secret: its values hold no secret at all
    mlflow = [r for r in of(m, "kubernetes:helm.sh/v3:Release") if r.name == "mlflow-mlflow"][0]
    assert SECRET_SIG not in json.dumps(mlflow.inputs["values"])
    for r in m.resources:
        for word in ("db-pass", "ak", "sk", "sched-db/pa:ss", "sched-db%2Fpa%3Ass", *CREDENTIALS.values()):
            assert not list(exposed(r.inputs, word)), (r.typ, r.name, word)
        text = json.dumps(plaintext(r.inputs))  # not inside a longer string either
        for token in CREDENTIALS.values():
            assert token not in text, (r.typ, r.name)


def test_the_scheduler_reads_its_admin_token_from_a_secret_and_declares_opa_by_digest():
    import hashlib

    m = collect(PROD)
    [admin] = [
        r
        for r in of(m, "kubernetes:core/v1:Secret")
        if r.inputs["metadata"]["name"] == "greenops-scheduler-admin-token"
    ]
    assert admin.inputs["metadata"]["namespace"] == "greenops"
    assert SECRET_SIG in admin.inputs["stringData"]  # registered secret: encrypted in state
    assert unwrap(admin.inputs["stringData"]) == {"token": SCHEDULER_TOKENS["greenops:schedulerAdminToken"]}
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.name == "scheduler-deploy"]
    pod = deploy.inputs["spec"]["template"]["spec"]
    [container] = pod["containers"]
    # a file, never a flag's value or a variable: nothing in ps or in the pod's environment
    args = container["args"]
    assert args[args.index("--admin-token-file") + 1] == "/var/run/secrets/greenops/admin/token"
    assert args[args.index("--principals") + 1] == "/etc/greenops/principals/principals.yaml"
    assert not [e for e in container.get("env", []) if "TOKEN" in e["name"]]
    assert {
        "name": "greenops-scheduler-admin-token",
        "mountPath": "/var/run/secrets/greenops/admin",
        "readOnly": True,
    } in container["volumeMounts"]
    assert {
        "name": "greenops-scheduler-admin-token",
        "secret": {
            "secretName": "greenops-scheduler-admin-token",
            "items": [{"key": "token", "path": "token"}],
            "defaultMode": 0o440,
        },
    } in pod["volumes"]
    # OPA is declared by its token's digest: write, every tenant, on the cluster path only; the
    # cluster path's controller by its ServiceAccount: report, every tenant, the cluster path only
    opa_token = SCHEDULER_TOKENS["greenops:opaSchedulerToken"]
    assert declared_principals(m) == {
        "principals": [
            {
                "name": "opa",
                "tokenSha256": hashlib.sha256(opa_token.encode()).hexdigest(),
                "role": "write",
                "paths": ["cluster"],
            },
            {"serviceAccount": "greenops/greenops-controller", "role": "report", "paths": ["cluster"]},
        ]
    }
    # OPA presents that token (GREENOPS_SCHEDULER_TOKEN, a client's variable) from its own Secret
    [opa_secret] = [
        r
        for r in of(m, "kubernetes:core/v1:Secret")
        if r.inputs["metadata"]["name"] == "greenops-scheduler-token" and r.inputs["metadata"]["namespace"] == "opa"
    ]
    assert SECRET_SIG in opa_secret.inputs["stringData"]
    assert unwrap(opa_secret.inputs["stringData"]) == {"GREENOPS_SCHEDULER_TOKEN": opa_token}
    ref = {
        "name": "GREENOPS_SCHEDULER_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "greenops-scheduler-token", "key": "GREENOPS_SCHEDULER_TOKEN"}},
    }
    [opa_deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.name == "opa-opa"]
    assert ref in opa_deploy.inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    # the scheduler's own namespace holds no shared token any more
    assert not [
        r
        for r in of(m, "kubernetes:core/v1:Secret")
        if r.inputs["metadata"]["name"] == "greenops-scheduler-token"
        and r.inputs["metadata"]["namespace"] == "greenops"
    ]
    # the controller's token is reviewed: the pod has an identity, bound to system:auth-delegator
    assert pod["automountServiceAccountToken"] is True and pod["serviceAccountName"] == "greenops-scheduler"
    [reviews] = [
        r for r in of(m, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding") if "token-reviews" in r.name
    ]
    assert reviews.inputs["roleRef"]["name"] == "system:auth-delegator"
    assert reviews.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": "greenops-scheduler", "namespace": "greenops"}
    ]
    # no ServiceAccount principal at all: the pod gets no identity and no API token of its own
    m = collect({**PROD, "controller": {"enabled": False}})
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.name == "scheduler-deploy"]
    pod = deploy.inputs["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod
    assert not [
        r for r in of(m, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding") if "token-reviews" in r.name
    ]
    assert [p.get("name") for p in declared_principals(m)["principals"]] == ["opa"]


def declared_principals(m: Mocks) -> dict:
    [principals] = [
        r
        for r in of(m, "kubernetes:core/v1:ConfigMap")
        if r.inputs["metadata"]["name"] == "greenops-scheduler-principals"
    ]
    # (derived from a secret, the digest stays marked secret in the state: more careful than needed)
    return yaml.safe_load(unwrap(principals.inputs["data"])["principals.yaml"])


def test_scheduler_replicas_share_a_postgresql_whose_url_is_a_secret():
    m = collect(PROD)
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.name == "scheduler-deploy"]
    assert deploy.inputs["spec"]["replicas"] == 2
    env = deploy.inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {
        "name": "GREENOPS_SCHEDULER_DATABASE",
        "valueFrom": {"secretKeyRef": {"name": "greenops-scheduler-database", "key": "GREENOPS_SCHEDULER_DATABASE"}},
    } in env
    [url] = [
        r for r in of(m, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "greenops-scheduler-database"
    ]
    assert SECRET_SIG in url.inputs["stringData"]
    assert unwrap(url.inputs["stringData"])["GREENOPS_SCHEDULER_DATABASE"] == (
        "postgresql+psycopg://greenops:sched-db%2Fpa%3Ass@scheduler-postgresql.greenops.svc:5432/greenops"
    )
    [pg] = [r for r in of(m, "kubernetes:helm.sh/v3:Release") if r.name == "scheduler-postgresql"]
    assert unwrap(pg.inputs["values"])["auth"]["existingSecret"] == "greenops-scheduler-db"
    assert "greenops-scheduler-db" in {r.inputs["metadata"]["name"] for r in of(m, "kubernetes:core/v1:Secret")}


def test_an_existing_database_url_deploys_no_postgresql_and_none_at_all_is_refused():
    from greenops.stack import program

    external = "postgresql+psycopg://u:p@db.example:5432/greenops"
    m = run_platform(PROD, without="greenops:schedulerDbPassword", extra={"greenops:schedulerDatabaseUrl": external})
    pulumi.runtime.test(program.run)()
    assert not [r for r in of(m, "kubernetes:helm.sh/v3:Release") if r.name == "scheduler-postgresql"]
    [url] = [
        r for r in of(m, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "greenops-scheduler-database"
    ]
    assert SECRET_SIG in url.inputs["stringData"]
    assert unwrap(url.inputs["stringData"])["GREENOPS_SCHEDULER_DATABASE"] == external
    run_platform(PROD, without="greenops:schedulerDbPassword")
    with pytest.raises(pulumi.RunError, match="greenops:schedulerDbPassword .* or greenops:schedulerDatabaseUrl"):
        pulumi.runtime.test(program.run)()


def test_opa_requires_tokens_and_kube_mgmt_presents_its_own():
    m = collect(PROD)
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] == "opa"]
    pod = deploy.inputs["spec"]["template"]["spec"]
    opa, webhook, mgmt = pod["containers"]
    for c in (opa, webhook):
        assert "--authentication=token" in c["args"] and "--authorization=basic" in c["args"]
    # OPA reads both tokens from Secrets; the probes stay on the open GET /health
    secrets = {
        r.inputs["metadata"]["name"]: r
        for r in of(m, "kubernetes:core/v1:Secret")
        if r.inputs["metadata"]["namespace"] == "opa"
    }
    for name, variable, value in (
        ("greenops-opa-query-token", "GREENOPS_OPA_QUERY_TOKEN", "Q7x-query-s3cret"),
        ("greenops-opa-admin-token", "GREENOPS_OPA_ADMIN_TOKEN", "A9z-admin-s3cret"),
        # the scraper's, for GET /metrics only: derived from the admin token, set by nobody
        ("greenops-opa-metrics-token", "GREENOPS_OPA_METRICS_TOKEN", metrics_token("A9z-admin-s3cret")),
        # the API server's, on the webhook's process: derived likewise, in the component's output
        ("greenops-opa-webhook-token", "GREENOPS_OPA_WEBHOOK_TOKEN", webhook_token("A9z-admin-s3cret")),
    ):
        assert SECRET_SIG in secrets[name].inputs["stringData"]
        assert unwrap(secrets[name].inputs["stringData"]) == {variable: value}
        holder = webhook if variable == "GREENOPS_OPA_WEBHOOK_TOKEN" else opa
        assert {"name": variable, "valueFrom": {"secretKeyRef": {"name": name, "key": variable}}} in holder["env"]
    assert opa["livenessProbe"]["httpGet"]["path"] == "/health"
    assert [c["livenessProbe"]["httpGet"]["port"] for c in (opa, webhook)] == [8443, 8444]
    assert opa["readinessProbe"]["httpGet"]["path"] == "/health?bundles"
    assert opa["startupProbe"]["httpGet"]["path"] == "/health"  # 500 until the bundle brings system.authz
    assert "--set=decision_logs.console=true" in opa["args"]  # decision logs on stdout, masked by system.log
    # kube-mgmt: the admin token as a file from the same Secret, and nothing else
    assert "--opa-auth-token-file=/var/run/secrets/greenops/opa-admin/token" in mgmt["args"]
    assert not [a for a in mgmt["args"] if a.startswith("--opa-auth-token=")]
    assert mgmt["volumeMounts"] == [
        {"name": "opa-admin-token", "mountPath": "/var/run/secrets/greenops/opa-admin", "readOnly": True}
    ]
    assert {
        "name": "opa-admin-token",
        "secret": {
            "secretName": "greenops-opa-admin-token",
            "items": [{"key": "GREENOPS_OPA_ADMIN_TOKEN", "path": "token"}],
        },
    } in pod["volumes"]
    assert not [e for e in mgmt.get("env", []) if "TOKEN" in e["name"]]
    assert "opa-admin-token" not in [v["name"] for v in opa["volumeMounts"]]
    # no token anywhere in plaintext: not as a value, not inside a longer string
    for r in m.resources:
        text = json.dumps(plaintext(r.inputs))
        for token in (*OPA_TOKENS.values(), metrics_token(OPA_TOKENS["greenops:opaAdminToken"])):
            assert token not in text, (r.typ, r.name)


def test_a_platform_without_its_credentials_is_refused_at_preview_by_key():
    from components.policy_engine import PolicyEngine, PolicyEngineArgs
    from greenops.stack import program

    lean = {**PROD, "mlflow": {"enabled": False}, "kserve": {"enabled": False}, "monitoring": {"enabled": True}}
    # each missing credential alone is refused, by its key, before anything is declared
    for missing in CREDENTIALS:
        m = run_platform(lean, without=missing)
        with pytest.raises(pulumi.RunError) as refused:
            program.run()
        assert f"the platform needs the secret(s) {missing}:" in str(refused.value)
        assert "an open scheduler or OPA API is never installed" in str(refused.value)
        assert not [r for r in m.resources if r.typ.startswith("kubernetes:")]
    # none at all: every one named, in one message, and no value quoted
    run_platform(lean, credentials=False)
    with pytest.raises(pulumi.RunError) as refused:
        program.run()
    message = str(refused.value)
    assert all(key in message for key in CREDENTIALS), message
    # only what the enabled parts need: without OPA, OPA's tokens are not asked for
    run_platform({**lean, "policy": {"enabled": False}}, without=tuple(OPA_TOKENS) + ("greenops:opaSchedulerToken",))
    pulumi.runtime.test(program.run)()
    run_platform({**lean, "scheduler": {"enabled": False}}, without="greenops:schedulerAdminToken")
    pulumi.runtime.test(program.run)()
    # the components refuse on their own too, for a program that declares them directly
    from components.platform_config import PolicyEngineConfig

    for query, admin in ((None, None), ("q", None), (None, "a")):
        run_platform(lean)

        @pulumi.runtime.test
        def declare(query=query, admin=admin):
            PolicyEngine(
                "opa",
                PolicyEngineArgs(
                    PolicyEngineConfig(), "opa:1", "mgmt:1", "bundle-init:1", query_token=query, admin_token=admin
                ),
            )

        with pytest.raises(pulumi.RunError, match="greenops:opaToken|greenops:opaAdminToken"):
            declare()


def plaintext(value):
    """``value`` with every secret-marked part replaced by a placeholder."""
    if isinstance(value, dict):
        return "<secret>" if SECRET_SIG in value else {k: plaintext(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plaintext(v) for v in value]
    return value


def exposed(value, word, inside_secret=False):
    """Paths where ``word`` appears outside any secret marker."""
    if isinstance(value, dict):
        secret = inside_secret or SECRET_SIG in value
        for k, v in value.items():
            yield from (f"{k}.{p}" for p in exposed(v, word, secret))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from (f"{i}.{p}" for p in exposed(v, word, inside_secret))
    elif value == word and not inside_secret:
        yield ""


def tls_inputs(m: Mocks) -> list:
    return sorted(
        (r.typ, r.name, json.dumps(r.inputs, sort_keys=True)) for r in m.resources if r.typ.startswith("tls:")
    )


def test_certificates_are_declared_identically_on_every_run():
    a, b = tls_inputs(collect(PROD)), tls_inputs(collect(PROD))
    assert a == b and len(a) == 5  # CA key + cert, serving key + CSR + cert: state keeps them stable


# every part that can be turned off, turned off
ALL_OFF = {
    part: {"enabled": False}
    for part in ("krateo", "policy", "scheduler", "mlflow", "kserve", "certManager", "networkPolicy")
}


def test_disabled_parts_create_nothing():
    m = collect(ALL_OFF, secrets=False, credentials=False)  # no scheduler, no OPA: no credential needed
    assert {r.typ for r in m.resources if r.typ.startswith("greenops:platform:")} == {
        "greenops:platform:GreenOpsPlatform"
    }
    assert not [r for r in m.resources if r.typ.startswith(("kubernetes:helm", "tls:", "azure", "gcp", "aws"))]


def test_bad_platform_config_names_the_key():
    run_platform({"azure": {"enabled": True, "subscriptionId": "s"}})
    from greenops.stack import program

    with pytest.raises(
        pulumi.RunError, match=r"greenops:platform\.azure: required when azure is enabled: tenantId, oidcIssuerUrl"
    ):
        program.run()


@pytest.mark.crds
def test_kserve_objects_validate_against_the_crds(crd_schemas):
    from components.mlops import forecaster_names

    m = collect(PROD)
    objs = [
        {
            "apiVersion": r.inputs["apiVersion"],
            "kind": r.inputs["kind"],
            "metadata": r.inputs["metadata"],
            "spec": r.inputs["spec"],
        }
        for r in m.resources
        if r.typ.startswith("kubernetes:serving.kserve.io")
    ]
    assert {o["metadata"]["name"] for o in objs if o["kind"] == "InferenceService"} == set(
        forecaster_names(["DE", "FR"])
    )
    assert [e for o in objs for e in crd_schemas.errors(o)] == []


def opa_pod(m: Mocks) -> dict:
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] == "opa"]
    return deploy.inputs["spec"]["template"]


def test_opa_boots_from_the_bundle_shipped_with_the_release():
    import io
    import tarfile

    from greenops.policies.bundle import pack

    # with a bundle service: the shipped bundle is copied into OPA's persistence directory first
    m = collect(PROD)
    [shipped] = [r for r in of(m, "kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "opa-bundle"]
    raw = base64.b64decode(shipped.inputs["binaryData"]["bundle.tar.gz"])
    names = tarfile.open(fileobj=io.BytesIO(raw)).getnames()
    assert {"/.manifest", "/data.json", "/admission.rego", "/system.rego", "/authz.rego"} <= set(names)
    assert not [n for n in names if n.endswith("_test.rego")]
    pod = opa_pod(m)
    assert pod["metadata"]["annotations"]["greenops.io/bundle-revision"] == pack()[1]
    [init] = pod["spec"]["initContainers"]
    # into each OPA process's own persistence directory (both mounted at /var/opa in their container)
    assert init["command"][-1] == " && ".join(
        f"mkdir -p /{v}/bundles/greenops && cp /shipped/bundle.tar.gz /{v}/bundles/greenops/bundle.tar.gz"
        for v in ("persist-opa", "persist-opa-webhook")
    )
    opa = pod["spec"]["containers"][0]
    assert not [a for a in opa["args"] if a.startswith("--bundle")]
    [config] = [r for r in of(m, "kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "opa-config"]
    settings = json.loads(config.inputs["data"]["config.json"])
    assert settings["persistence_directory"] == "/var/opa" and settings["bundles"]["greenops"]["persist"] is True
    # without one: OPA loads the shipped bundle itself; there is no state in which it has no policy
    bare = opa_pod(collect({**PROD, "policy": {"webhookTimeoutSeconds": 10}}))
    assert "initContainers" not in bare["spec"]
    # OPA's --bundle is a switch: the path is the last argument, after every flag
    assert bare["spec"]["containers"][0]["args"][-2:] == ["--bundle", "/shipped/bundle.tar.gz"]
    assert {"name": "shipped-bundle", "mountPath": "/shipped", "readOnly": True} in bare["spec"]["containers"][0][
        "volumeMounts"
    ]


def test_our_own_images_run_as_versions_yaml_pins_them():
    """The images the release builds (release/) are the ones the Deployments, the init container
    and the ServingRuntime run, by the reference versions.yaml holds: a digest pin pulls
    IfNotPresent (it names one content forever), a tag pin Always."""
    from components.pins import pinned_versions

    pins = pinned_versions()
    m = collect(PROD)
    containers: dict[str, dict] = {}
    for deploy in of(m, "kubernetes:apps/v1:Deployment"):
        pod = deploy.inputs["spec"]["template"]["spec"]
        for c in [*pod.get("initContainers", []), *pod["containers"]]:
            containers[f"{deploy.name}/{c['name']}"] = c
    [runtime] = [r for r in of(m, "kubernetes:serving.kserve.io/v1alpha1:ServingRuntime")]
    containers["runtime"] = runtime.inputs["spec"]["containers"][0]
    expected = {
        "scheduler-deploy/scheduler": pins.greenops_image,
        "controller-deploy/controller": pins.greenops_image,
        "runtime": pins.mlserver_image,
    }
    opa = {k: c for k, c in containers.items() if c["name"] == "opa"}
    init = {k: c for k, c in containers.items() if c["name"] == "shipped-bundle"}
    assert opa and init, sorted(containers)
    expected |= {k: pins.opa_image for k in opa} | {k: pins.bundle_init_image for k in init}
    for key, image in expected.items():
        assert key in containers, sorted(containers)
        assert containers[key]["image"] == image, key
        policy = containers[key].get("imagePullPolicy")
        assert policy == (None if "@sha256:" in image else "Always"), key


def test_the_api_servers_webhook_credential_names_the_webhooks_address():
    from components.platform_config import PolicyEngineConfig
    from components.policy_engine import webhook_address
    from greenops.policies.webhook import webhook_kubeconfig

    # the API server looks a webhook's credential up by the "host:port" it calls
    assert webhook_address(PolicyEngineConfig(namespace="opa")) == "opa.opa.svc:8444"
    assert webhook_address(PolicyEngineConfig(webhook_url="https://opa.example.com/")) == "opa.example.com"
    assert webhook_address(PolicyEngineConfig(webhook_url="https://10.0.0.5:8444/")) == "10.0.0.5:8444"
    config = webhook_kubeconfig({"opa.opa.svc:8444": webhook_token("A9z-admin-s3cret")})
    assert config["users"] == [{"name": "opa.opa.svc:8444", "user": {"token": webhook_token("A9z-admin-s3cret")}}]


def test_a_platform_teams_own_webhook_certificate_replaces_the_one_made_in_state():
    from pydantic import ValidationError

    from components.platform_config import PolicyEngineConfig
    from greenops.local.webhook import serving_pems
    from greenops.stack import program

    pems = serving_pems(("opa.opa.svc",), ())
    own = {"caBundle": pems.ca_pem.decode(), "servingCert": pems.cert_pem.decode()}
    m = run_platform({**PROD, "policy": own}, extra={"greenops:opaServingKey": pems.key_pem.decode()})
    pulumi.runtime.test(program.run)()
    assert not [r for r in m.resources if r.typ.startswith("tls:")]  # no CA of the stack's own
    [hook] = of(m, "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration")
    assert base64.b64decode(hook.inputs["webhooks"][0]["clientConfig"]["caBundle"]) == pems.ca_pem
    [tls] = [r for r in of(m, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "opa-server-tls"]
    data = unwrap(tls.inputs["stringData"])
    assert data["tls.crt"] == pems.cert_pem.decode() and data["tls.key"] == pems.key_pem.decode()
    assert SECRET_SIG in tls.inputs["stringData"]  # the key stays secret in state
    # without its key it is refused by name, before anything is declared
    m = run_platform({**PROD, "policy": own})
    with pytest.raises(pulumi.RunError, match="greenops:opaServingKey"):
        program.run()
    assert not [r for r in m.resources if r.typ.startswith("kubernetes:")]
    # half a certificate, or text that is not one, is refused with the field's name
    with pytest.raises(ValidationError, match="caBundle is given without servingCert"):
        PolicyEngineConfig.model_validate({"caBundle": own["caBundle"]})
    with pytest.raises(ValidationError, match="not a PEM certificate"):
        PolicyEngineConfig.model_validate({**own, "servingCert": "hello"})
