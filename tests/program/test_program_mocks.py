"""Program structure under Pulumi mocks (no engine, no cloud)."""
import json

import pulumi
import pytest


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return [args.name + "_id", args.inputs]

    def call(self, args):
        return {}


WORKLOAD = {"name": "etl", "cpu": 2, "memory": 4, "duration": "1h", "deadline": "2030-01-01T00:00:00Z",
            "originRegion": "westeurope"}


def test_bad_config_fails_with_named_error():
    pulumi.runtime.set_mocks(Mocks(), project="greenops-platform", stack="test", preview=True)
    pulumi.runtime.set_all_config({"greenops:workloads": json.dumps([dict(WORKLOAD, cpu=-1)])})
    from greenops import program

    with pytest.raises(pulumi.RunError, match=r"greenops:workloads\[0\] \(etl\)\.cpu"):
        program.run()
