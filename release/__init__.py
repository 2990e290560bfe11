"""The platform's own artifacts, built here without a container daemon: the images (greenops, OPA,
bundle-init, MLServer forecasters), the VmTemplate chart and the policy bundle as OCI artifacts,
the Python wheel and sdist; pushed to a registry, signed, given SBOMs and pinned by digest in
components/versions.yaml. ``python -m release --help``; ``make release`` runs it all.

Not part of the greenops package (the wheel leaves it out): it is how the project is released.
"""
