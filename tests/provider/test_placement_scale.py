"""Thousands of placements in one program: the dynamic provider pickles small and constant, and the
SDK's pickler leak (pulumi.dynamic.serialize_provider) is undone after every Placement."""

from __future__ import annotations

import pickle
import time

import pulumi
import pytest
from pulumi.dynamic.dynamic import serialize_provider

from greenops.provider.placement import Placement, PlacementProvider
from tests.components.test_platform_mocks import SECRET_SIG

N = 2000


class Recording(pulumi.runtime.Mocks):
    def __init__(self):
        self.providers: list[str] = []

    def new_resource(self, args):
        provider = args.inputs.get("__provider")
        if isinstance(provider, dict) and SECRET_SIG in provider:
            provider = provider["value"]
        self.providers.append(provider)
        return [f"{args.name}-id", args.inputs]

    def call(self, args):
        return {}


def props(i: int) -> dict:
    return {
        "workload": {
            "name": f"w{i:04d}",
            "cpu": 2,
            "memory": 4,
            "duration": "1h",
            "deadline": "2030-01-01T00:00:00Z",
            "originRegion": "westeurope",
        },
        "opaUrl": "http://127.0.0.1:8181",
        "schedulerUrl": "http://127.0.0.1:8080",
        "stack": "scale",
    }


def test_2000_placements_in_one_program_pickle_the_same_small_provider():
    mocks = Recording()
    pulumi.runtime.set_mocks(mocks, project="greenops-platform", stack="scale", preview=False)

    @pulumi.runtime.test
    def program():
        for i in range(N):
            Placement(f"w{i:04d}-placement", props(i))

    started = time.perf_counter()
    program()
    print(f"\n{N} Placement registrations under mocks: {time.perf_counter() - started:.1f} s")
    assert len(mocks.providers) == N
    # One serialised provider for every resource: nothing in it grows with the program.
    assert len(set(mocks.providers)) == 1
    assert len(mocks.providers[0]) == len(serialize_provider(PlacementProvider())) < 512


def test_the_sdk_still_leaks_its_pickler_patch():
    """Why greenops.provider.placement._pickler_restored exists. When a Pulumi release fixes
    serialize_provider, this fails, and the workaround can go."""
    saved = pickle._Pickler._batch_setitems, pickle._Pickler.save_dict
    try:
        serialize_provider(PlacementProvider())
        assert pickle._Pickler._batch_setitems is not saved[0]  # left wrapped
        with pytest.raises(RecursionError):
            for _ in range(5000):
                serialize_provider(PlacementProvider())
    finally:
        pickle._Pickler._batch_setitems, pickle._Pickler.save_dict = saved
