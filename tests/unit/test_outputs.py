"""greenops.outputs.gather: Output.all's result without an Output per nested value."""
from __future__ import annotations

import asyncio

import pulumi
import pytest

from greenops.outputs import gather

NESTED = {"objects": [{"metadata": {"name": f"o{i}", "labels": {"a": "b"}}, "spec": {"n": i}} for i in range(50)]}


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return [f"{args.name}-id", dict(args.inputs)]

    def call(self, args):
        return {}


@pytest.fixture(autouse=True)
def mocks():
    pulumi.runtime.set_mocks(_Mocks(), project="p", stack="s", preview=False)


@pulumi.runtime.test
def test_gather_gives_what_output_all_gives():
    a, b = pulumi.Output.from_input(NESTED), pulumi.Output.from_input(["x", {"y": 1}])

    def check(both):
        assert both[0] == both[1] == [NESTED, ["x", {"y": 1}]]

    return pulumi.Output.all(gather(a, b), pulumi.Output.all(a, b)).apply(check)


@pulumi.runtime.test
def test_gather_keeps_secrets_secret():
    gathered = gather(pulumi.Output.secret({"token": "t"}), pulumi.Output.from_input("plain"))

    async def check():
        assert await gathered.is_secret()
        assert await gathered.future() == [{"token": "t"}, "plain"]

    return pulumi.Output.from_input(check())


def test_gather_does_not_walk_nested_values(monkeypatch):
    """The reason it exists: Output.all makes an Output per nested list item and dict entry."""
    made = []
    track = pulumi.Output._track  # every Output the SDK makes is tracked, to be waited for at the end

    def counting_track(self):
        made.append(1)
        track(self)

    def outputs_made(combine) -> int:
        async def run() -> int:
            value = pulumi.Output.from_input(NESTED)
            await value.future()
            made.clear()
            monkeypatch.setattr(pulumi.Output, "_track", counting_track)
            try:
                await combine(value).future()
            finally:
                monkeypatch.setattr(pulumi.Output, "_track", track)
            return len(made)

        return asyncio.run(run())

    made_by_all = outputs_made(lambda v: pulumi.Output.all(v))
    made_by_gather = outputs_made(lambda v: gather(v))
    assert made_by_gather <= 5 and made_by_all > 300, (made_by_gather, made_by_all)
