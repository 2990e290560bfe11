"""Combining many Outputs without the Python SDK's deep unwrapping.

``pulumi.Output.all`` passes every argument through ``Output.from_input``, which re-walks each
resolved value and creates an Output for every nested list item and dict entry, so that Outputs
hidden inside plain data are found. Values that come from resource outputs hold none. At 1000
workloads, the placement rows and the VM manifests alone made tens of thousands of such Outputs.
The SDK then waits on each of them at the end of the program, and that wait grows with the square
of their number (SDK 3.259 to at least 3.272). ``gather`` wraps each value in an object the SDK
does not walk, and unwraps it again once all are known.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi


@dataclass(frozen=True)
class _Opaque:
    value: Any


def gather(*outputs: pulumi.Output[Any]) -> pulumi.Output[list[Any]]:
    """``Output.all(*outputs)`` for outputs whose values are plain data: the same list, unknown
    while any is unknown and secret if any is secret, without an Output per nested value."""
    return pulumi.Output.all(*(o.apply(_Opaque) for o in outputs)).apply(lambda boxes: [b.value for b in boxes])
