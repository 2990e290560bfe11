"""A minimal Pulumi language host for Python programs, for machines without the official one.

The official ``pulumi-language-python`` is a Go module that the Go module proxy reachable here does
not serve (see tools/README.md). Without a language host, ``pulumi preview/up`` cannot run a
Python project from the CLI. This host implements the part of the LanguageRuntime gRPC service
that preview, up, refresh and destroy use, and runs the program exactly as the official host does:
through ``pulumi-language-python-exec`` from the pinned SDK, in the project's virtualenv. Anything
else (templates, code generation, packing, dependency installation) answers UNIMPLEMENTED or is a
no-op, and ``make setup`` installs the dependencies.

Usage (by the engine): ``pulumi-language-python [--tracing URL] [ENGINE_ADDRESS]``; prints its port.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from importlib.metadata import version
from pathlib import Path

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

from greenops.common.toolpaths import tool_path
from greenops.stack.inline_config import ENVIRONMENT_VARIABLE, too_large_for_environment

# The executor exits with this code after it has shown the user an actionable message.
EXIT_AFTER_USER_MESSAGE = 32


def _executor() -> str:
    return tool_path("pulumi-language-python-exec")


def _python(info: language_pb2.ProgramInfo) -> str:
    """The interpreter of the project's virtualenv (runtime option ``virtualenv``), else python3."""
    options = json_format.MessageToDict(info.options) if info.HasField("options") else {}
    venv = options.get("virtualenv")
    if venv:
        path = Path(venv)
        if not path.is_absolute():
            path = Path(info.root_directory or info.program_directory) / path
        python = path / "bin" / "python"
        if not python.exists():
            raise FileNotFoundError(f"virtualenv {path} has no bin/python: run `make setup` in the project first")
        return str(python)
    return os.environ.get("PULUMI_PYTHON_CMD", "python3")


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine_address: str | None, tracing: str | None):
        self.engine_address = engine_address
        self.tracing = tracing
        self._children: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def Handshake(
        self, request: language_pb2.LanguageHandshakeRequest, context: grpc.ServicerContext
    ) -> language_pb2.LanguageHandshakeResponse:
        self.engine_address = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> plugin_pb2.PluginInfo:
        return plugin_pb2.PluginInfo(version=version("pulumi"))

    def GetRequiredPlugins(
        self, request: language_pb2.GetRequiredPluginsRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPluginsResponse:
        # Plugins are installed ahead of time (tools/install.sh); the engine finds them by the
        # versions the SDK packages stamp on each resource.
        return language_pb2.GetRequiredPluginsResponse()

    def GetRequiredPackages(
        self, request: language_pb2.GetRequiredPackagesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPackagesResponse:
        return language_pb2.GetRequiredPackagesResponse()

    def InstallDependencies(
        self, request: language_pb2.InstallDependenciesRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.InstallDependenciesResponse]:
        return iter(())

    def Run(self, request: language_pb2.RunRequest, context: grpc.ServicerContext) -> language_pb2.RunResponse:
        config = dict(request.config)
        problem = too_large_for_environment(config)
        if problem:  # said, rather than the kernel refusing to start the program (E2BIG)
            return language_pb2.RunResponse(error=problem)
        args = [_python(request.info), "-u", _executor()]
        for flag, value in (
            ("monitor", request.monitor_address),
            ("engine", self.engine_address),
            ("project", request.project),
            ("root_directory", request.info.root_directory),
            ("stack", request.stack),
            ("pwd", request.pwd),
            ("dry_run", str(request.dryRun).lower()),
            ("parallel", str(request.parallel)),
            ("tracing", self.tracing),
            ("organization", request.organization),
        ):
            if value:
                args += [f"--{flag}", value]
        args.append(request.info.entry_point or request.program or ".")
        args += list(request.args)
        env = dict(os.environ)
        env[ENVIRONMENT_VARIABLE] = json.dumps(config)
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        try:
            child = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL)
        except OSError as exc:
            return language_pb2.RunResponse(error=f"problem executing program (could not run language executor): {exc}")
        with self._lock:
            self._children.add(child)
        code = child.wait()
        with self._lock:
            self._children.discard(child)
        if code == 0:
            return language_pb2.RunResponse()
        if code == EXIT_AFTER_USER_MESSAGE:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"program exited with non-zero exit code: {code}")

    def Cancel(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        with self._lock:
            for child in self._children:
                child.send_signal(signal.SIGINT)
        return empty_pb2.Empty()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pulumi-language-python")
    parser.add_argument("--tracing")
    parser.add_argument("engine_address", nargs="?")
    args, _ = parser.parse_known_args(argv)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[
            ("grpc.max_receive_message_length", 400 * 1024 * 1024),
            ("grpc.max_send_message_length", 400 * 1024 * 1024),
        ],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageHost(args.engine_address, args.tracing), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
