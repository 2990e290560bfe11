"""greenops.common.pulumi_outputs: Output.all's result without an Output per nested value, and the
SDK's end-of-program wait without a cost that grows with the square of the Outputs."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Coroutine
from typing import Any, TypeVar

import pulumi
import pytest

from greenops.common.pulumi_outputs import _AsyncioWithCheapWait, gather, sdk_waits_cheaply

T = TypeVar("T")
NESTED = {"objects": [{"metadata": {"name": f"o{i}", "labels": {"a": "b"}}, "spec": {"n": i}} for i in range(50)]}


def run_apart(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine`` on a loop of its own. Not asyncio.run: it leaves the thread without a current
    loop, and the Pulumi mocks of a later test (tests/direct) then find none."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


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

        return run_apart(run())

    made_by_all = outputs_made(lambda v: pulumi.Output.all(v))
    made_by_gather = outputs_made(lambda v: gather(v))
    assert made_by_gather <= 5 and made_by_all > 300, (made_by_gather, made_by_all)


# -- the SDK's end-of-program wait ------------------------------------------------------------------


class _CountingFuture(asyncio.Future):
    hooks = 0

    def add_done_callback(self, fn, *, context=None):
        _CountingFuture.hooks += 1
        super().add_done_callback(fn, context=context)


def _sdk_like_loop(wait, n: int) -> int:
    """The SDK's loop (pulumi.runtime.stack.wait_for_rpcs) over n Outputs that finish one by one;
    returns how many times a task was hooked."""

    async def run() -> int:
        pending = {_CountingFuture() for _ in range(n)}

        async def finish_one_by_one():  # as the engine answers: one, then the waiter gets a turn
            for i, f in enumerate(list(pending)):
                f.set_result(i)
                for _ in range(3):
                    await asyncio.sleep(0)

        _CountingFuture.hooks = 0
        finisher = asyncio.ensure_future(finish_one_by_one())
        while pending:
            done, not_done = await wait(list(pending), return_when=asyncio.FIRST_COMPLETED)
            for f in done:
                await f
            pending = set(not_done)
        await finisher
        return _CountingFuture.hooks

    return run_apart(run())


def test_the_sdk_still_waits_on_every_output_at_once():
    """When this fails, Pulumi has changed its end-of-program wait: sdk_waits_cheaply can go."""
    import inspect

    from pulumi.runtime import stack

    source = inspect.getsource(stack.wait_for_rpcs)
    assert "asyncio.wait(" in source and "FIRST_COMPLETED" in source and "SETTINGS.outputs" in source
    assert stack.asyncio is asyncio or isinstance(stack.asyncio, types.ModuleType)


def test_the_cheap_wait_hooks_far_fewer_tasks():
    n = 1000
    plain = _sdk_like_loop(asyncio.wait, n)
    cheap = _sdk_like_loop(_AsyncioWithCheapWait.wait, n)
    assert plain == n * (n + 1) // 2  # each round hooks every pending task: the square of n
    assert cheap <= _AsyncioWithCheapWait._FEW * n and cheap < plain / 10, (cheap, plain)  # a few per round


def test_the_cheap_wait_keeps_asyncio_wait_s_promise():
    async def run():
        futures = [asyncio.get_running_loop().create_future() for _ in range(100)]
        futures[3].set_result("ok")
        futures[7].set_exception(RuntimeError("an apply failed"))
        done, not_done = await _AsyncioWithCheapWait.wait(futures, return_when=asyncio.FIRST_COMPLETED)
        assert done == {futures[3], futures[7]} and not_done == set(futures) - done
        with pytest.raises(RuntimeError, match="an apply failed"):
            await futures[7]  # the SDK awaits each done task: the error reaches the program
        rest = list(not_done)
        done, not_done = await _AsyncioWithCheapWait.wait(rest, return_when=asyncio.FIRST_COMPLETED)
        assert done == set() and not_done == set(rest)  # nothing finished within the poll: look again
        asyncio.get_running_loop().call_later(0.01, rest[-1].set_result, "late")  # not among the few
        while not done:
            done, not_done = await _AsyncioWithCheapWait.wait(rest, return_when=asyncio.FIRST_COMPLETED)
        assert done == {rest[-1]}

    run_apart(run())


def test_the_program_installs_it_once():
    from pulumi.runtime import stack

    sdk_waits_cheaply()
    installed = stack.asyncio
    sdk_waits_cheaply()
    assert stack.asyncio is installed and isinstance(installed, _AsyncioWithCheapWait)
    assert installed.sleep is asyncio.sleep  # everything else is asyncio's own
