"""GreenOps platform: carbon-aware placement of generic VM workloads on Azure, GCP and AWS."""

__version__ = "0.1.0"
