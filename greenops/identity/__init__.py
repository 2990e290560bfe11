"""Who is calling the scheduler, and what they may touch.

A caller is a ``Principal``: a name, a role (read, write or admin), the tenants it acts for and
the paths (pulumi, cluster, api) whose reservations it books and changes. Principals are proven by a
credential the scheduler checks (``greenops.identity.authenticate``): the bootstrap admin token, a
hashed API token issued with ``greenops token issue``, or a Kubernetes ServiceAccount token through
the API server's TokenReview. Nothing a request body says widens them.
"""

from .principal import ALL_PATHS, Forbidden, Invisible, Principal, Role

__all__ = ["ALL_PATHS", "Forbidden", "Invisible", "Principal", "Role"]
