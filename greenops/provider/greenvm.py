"""The names this provider had before it became ``Placement``, kept for stacks created then.

A dynamic resource's state records its provider by import path (``__provider``, a pickle of
``greenops.provider.greenvm.GreenVmProvider``), and Pulumi unpickles the recorded one to delete
or read a resource. Without these aliases a stack created before the rename could not retire its
placements. The Pulumi type (``pulumi-python:dynamic:Resource``) and the resource names never
changed, so no URN moved and nothing is replaced (tests/provider/test_placement_rename.py).
"""

from greenops.provider.placement import Placement as GreenVm
from greenops.provider.placement import PlacementProvider as GreenVmProvider

__all__ = ["GreenVm", "GreenVmProvider"]
