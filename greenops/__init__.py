"""GreenOps platform: carbon-aware placement of generic VM workloads on Azure, GCP and AWS."""

from importlib.metadata import version

# The one version: pyproject.toml's, as the installed package's metadata says (in a checkout, the
# editable install's). The CLI, the image labels and the chart's appVersion all read or check it.
__version__ = version("greenops-platform")
