"""The scheduler service's settings: read from the environment (in a cluster, the Deployment's env
and its Secrets), each overridden by its command-line flag where it has one (``__main__``).

An invalid value stops the service with one line naming the variable or flag, never echoing the
value: the database URL may carry a password and the token is a secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from limits import parse
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from greenops.common.errors import field_errors
from greenops.intensity.electricitymaps import TOKEN_VARIABLE

# Which flag overrides which setting. The admin token has only --admin-token-file: a token on the
# command line would show in ps.
FLAGS = {
    "source": "--source",
    "capacity_vcpu": "--capacity-vcpu",
    "database": "--database",
    "rate_limit": "--rate-limit",
    "hold_seconds": "--hold-seconds",
    "admin_token": "--admin-token-file",
    "principals": "--principals",
    "kubeconfig": "--kubeconfig",
    "policy_config": "--policy-config",
    "scarcity_price": "--scarcity-price",
}
ENV_PREFIX = "GREENOPS_SCHEDULER_"
SOURCE_KINDS = ("profiles", "traces", "oip", "electricitymaps")  # what __main__.build_source builds


class SettingsError(ValueError):
    """Invalid settings, said in one line that names each setting at fault."""


class SchedulerSettings(BaseSettings):
    # GREENOPS_SCHEDULER_<FIELD>, except the names older than the prefix (validation_alias). No field
    # may be called port, service_host or the like: Kubernetes gives every pod in the namespace
    # GREENOPS_SCHEDULER_PORT=tcp://... for the Service named greenops-scheduler.
    # Variable names match regardless of case (pydantic-settings' default): case_sensitive would
    # look for the field names as written, GREENOPS_SCHEDULER_token.
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid")

    source: str = Field(
        default="profiles",
        validation_alias="GREENOPS_CARBON_SOURCE",
        description="profiles, traces:DIR, oip:URL or electricitymaps",
    )
    capacity_vcpu: float = Field(
        default=512.0,
        gt=0,
        validation_alias="GREENOPS_CAPACITY_VCPU",
        description="vCPUs each zone offers per hourly slot (inf: no bound)",
    )
    database: str | None = Field(
        default=None, description="SQLAlchemy URL of the reservation record; None: the default SQLite file"
    )
    hold_seconds: float = Field(
        default=120.0,
        ge=5,
        le=3600,
        description="how long a cluster-path booking made at admission waits for its VmTemplate to be "
        "stored before the controller releases it (well above the webhook's timeout)",
    )
    rate_limit: str = Field(default="600/minute", description="scheduling requests per principal and replica, or none")
    admin_token: SecretStr | None = Field(
        default=None, description="the bootstrap admin's bearer token (issues and revokes the API tokens)"
    )
    principals: str | None = Field(
        default=None,
        description="YAML file of declared principals: static tokens by digest, and ServiceAccounts "
        "checked through TokenReview",
    )
    kubeconfig: str | None = Field(
        default=None,
        description="the API server that reviews ServiceAccount tokens; None: the pod's own (in-cluster)",
    )
    policy_config: str | None = Field(
        default=None,
        description="the policy settings the bundle ships (tenant quotas); None: the packaged defaults",
    )
    orphan_grace_seconds: float = Field(
        default=86400.0,
        ge=60,
        le=90 * 86400,
        description="how long a Pulumi stack may go unseen before the sweep releases its Scheduled bookings",
    )
    orphan_sweep_seconds: float = Field(
        default=600.0,
        ge=0,
        description="how often the service sweeps orphaned bookings; 0: never (an admin's POST /sweeps/orphans only)",
    )
    queue_max_per_tenant: int = Field(
        default=1000, ge=1, le=100000, description="requests of one tenant that may wait in the queue at once"
    )
    queue_seconds: float = Field(
        default=30.0,
        ge=0,
        description="how often the service tries the queue besides each release it records; 0: only then",
    )
    scarcity_price: bool = Field(
        default=False,
        description="weigh the scarcity of the hours a booking fills, with the record's urgent requests "
        "of the last four weeks as the outlook (greenops.scheduler.outlook); point rule only",
    )
    electricitymaps_token: SecretStr | None = Field(
        default=None,
        validation_alias=TOKEN_VARIABLE,
        description="the Electricity Maps API's token, for --source electricitymaps",
    )

    @field_validator("source")
    @classmethod
    def _source_is_known(cls, value: str) -> str:
        # Checked here, not only when the source is built, so that a typo stops the service before
        # it opens the reservation record.
        if value.partition(":")[0] not in SOURCE_KINDS:
            raise ValueError("expected profiles, traces:DIR, oip:URL or electricitymaps")
        return value

    @field_validator("database", mode="before")
    @classmethod
    def _empty_is_default(cls, value: object) -> object:
        # An empty GREENOPS_SCHEDULER_DATABASE has always meant the default file.
        return value or None

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit_parses(cls, value: str) -> str:
        if value != "none":
            try:
                parse(value)
            except ValueError:
                raise ValueError("expected a count per period, e.g. 600/minute, or none") from None
        return value

    @field_validator("admin_token")
    @classmethod
    def _token_strong(cls, value: SecretStr | None) -> SecretStr | None:
        # An empty or short admin token would be guessed; refuse it rather than run weakly guarded.
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("the admin token must be at least 16 characters (e.g. openssl rand -hex 32)")
        return value

    def requests_per_principal(self) -> str | None:
        """The rate limit for PrincipalRateLimit, None when switched off."""
        return None if self.rate_limit == "none" else self.rate_limit

    def bootstrap_admin_token(self) -> str | None:
        return _reveal(self.admin_token)

    def electricitymaps_api_token(self) -> str | None:
        return _reveal(self.electricitymaps_token)


def _reveal(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None


def env_name(field: str) -> str:
    """The environment variable a setting is read from."""
    alias = SchedulerSettings.model_fields[field].validation_alias
    return alias if isinstance(alias, str) else ENV_PREFIX + field.upper()


def load_settings(flags: Mapping[str, Any] | None = None) -> SchedulerSettings:
    """The environment's settings, with ``flags`` (setting -> value of each flag given) over them."""
    flags = dict(flags or {})
    try:
        return SchedulerSettings(**{_key(field): value for field, value in flags.items()})
    except ValidationError as exc:
        field_of = {_key(field): field for field in SchedulerSettings.model_fields}
        problems = []
        for key, message in field_errors(exc.errors(include_input=False)):
            field = field_of.get(key, key)
            where = FLAGS.get(field, field) if field in flags else env_name(field)
            problems.append(f"{where}: {message}")
        raise SettingsError("; ".join(problems)) from None


def _key(field: str) -> str:
    # What a setting is validated under: an aliased one only under its alias, so that its plain name
    # is never read from the environment too (GREENOPS_SCHEDULER_SOURCE is not a setting).
    alias = SchedulerSettings.model_fields[field].validation_alias
    return alias if isinstance(alias, str) else field
