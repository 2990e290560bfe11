"""A tiny dynamic provider, importable by the provider process (``python -m pulumi.dynamic``)."""

import pulumi
from pulumi.dynamic import CreateResult, Resource, ResourceProvider


class EchoProvider(ResourceProvider):
    def create(self, props):
        return CreateResult(
            id_="echo-" + props["value"], outs={"value": props["value"], "echoed": props["value"].upper()}
        )


class Echo(Resource):
    echoed: pulumi.Output[str]

    def __init__(self, name: str, value: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(EchoProvider(), name, {"value": value, "echoed": None}, opts)
