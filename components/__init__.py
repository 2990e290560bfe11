"""Pulumi ComponentResources that install the GreenOps platform on a Kubernetes cluster."""
