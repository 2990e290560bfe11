"""Every span the platform makes itself, and its attributes, named once (the instrumentations add
the HTTP server and client spans and the database's). A placement's trace, parent to child:

    greenops.reconcile.pass            the reconcile loop's pass (greenops reconcile)
      greenops.pulumi                  one Pulumi operation; its context goes to the engine as TRACEPARENT
        greenops.placement.<op>        the dynamic provider's create, diff, update or delete (its own process)
          greenops.place               policy -> scheduler -> policy for one workload
            POST (httpx)               -> OPA's decision span (OPA's own, when it exports)
            POST (httpx)               -> POST /scheduling (the scheduler's server span)
                                            greenops.scheduler.search   the placement search, per attempt
                                            greenops.scheduler.commit   the booking's transaction
                                              the database's statements (SQLAlchemy)

Attributes are bounded and never a credential: a workload's name is fine on a span (it is not a
metric label), a token never is.
"""

from __future__ import annotations

PASS = "greenops.reconcile.pass"
PULUMI = "greenops.pulumi"
PROVIDER = "greenops.placement."  # + create, diff, update, delete
PLACE = "greenops.place"
SEARCH = "greenops.scheduler.search"
COMMIT = "greenops.scheduler.commit"

STACK = "greenops.stack"
OPERATION = "greenops.pulumi.operation"
WORKLOAD = "greenops.workload"
TENANT = "greenops.tenant"
KEY = "greenops.reservation.key"
ZONE = "greenops.zone"
ZONES = "greenops.zones"  # how many zones a search weighs
JOBS = "greenops.jobs"
RULE = "greenops.rule"
ATTEMPT = "greenops.attempt"
PROVIDER_NAME = "greenops.provider"
REGION = "greenops.region"
