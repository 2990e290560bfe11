"""The one way the platform reads YAML its users write: workload files, stack files, the policy
settings, a kubeconfig.

A YAML document costs its reader far more than its bytes when it is hostile: 387 bytes of nested
aliases in a workload's ``name`` expand to hundreds of millions of items (1.8 GB and 5.8 s to
build one error message), a deeply nested flow sequence overflows the parser's recursion, and a
big file is read whole. This loader refuses all three before they cost anything: no anchors or
aliases (nothing a workload or a stack needs them for), at most MAX_YAML_BYTES per document and
MAX_YAML_DEPTH levels of nesting. Every refusal is a UserYamlError: one line naming the document,
the line where known, and the reason, never the document's text (which may hold a secret).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import Node

from greenops.common.errors import GreenOpsError, one_line

# A stack of 10 000 workloads written out is about 2 MB of JSON, but it belongs in many files
# (greenops:workloadsFrom reads a folder), and no stack file, policy file or kubeconfig comes near.
MAX_YAML_BYTES = 1024 * 1024
# A workload is three levels deep and a stack file five; PyYAML composes nodes recursively, so a
# few thousand levels exhaust Python's stack.
MAX_YAML_DEPTH = 32


class UserYamlError(GreenOpsError):
    """A YAML document refused or unreadable; the message names it, the line and the reason."""


class _Refused(yaml.MarkedYAMLError):
    """A document this loader does not accept, at a position in it."""


class PlainLoader(yaml.SafeLoader):
    """PyYAML's safe loader without anchors and aliases, and with a bound on nesting."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _Refused(
                problem="anchors and aliases (& and *) are not accepted: write each value out",
                problem_mark=event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _Refused(problem=f"nested deeper than {MAX_YAML_DEPTH} levels", problem_mark=event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        # A scalar the safe constructor cannot build (an int of 5000 digits, the 13th month) raises
        # a plain ValueError from int() or date(); say where it is instead.
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise _Refused(problem=f"cannot read this value ({exc})", problem_mark=node.start_mark) from None


def load_yaml_file(path: Path, label: str) -> Any:
    """The document in ``path``, named ``label`` in errors; never read past one byte over the limit."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise UserYamlError(f"{label}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    return load_yaml_text(data, label)


def load_yaml_text(text: str | bytes, label: str) -> Any:
    """The document in ``text`` (UTF-8 when bytes), named ``label`` in errors."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(data) > MAX_YAML_BYTES:
        raise UserYamlError(
            f"{label}: larger than the limit of {MAX_YAML_BYTES} bytes ({MAX_YAML_BYTES // 2**20} MiB) "
            "for one YAML document"
        )
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserYamlError(f"{label}: not UTF-8 text (byte {exc.start})") from None
    try:
        return _single_document(text)
    except _Refused as exc:
        raise UserYamlError(f"{label}: {_at(exc)}{one_line(exc.problem or '')}") from None
    except yaml.MarkedYAMLError as exc:
        raise UserYamlError(f"{label}: not readable as YAML: {_at(exc)}{one_line(_reason(exc))}") from None
    except yaml.YAMLError as exc:  # the reader's: a character YAML does not allow
        reason = getattr(exc, "reason", None) or type(exc).__name__
        position = getattr(exc, "position", None)
        where = f" (character {position})" if position is not None else ""
        raise UserYamlError(f"{label}: not readable as YAML: {one_line(str(reason))}{where}") from None


def _single_document(text: str) -> Any:
    loader = PlainLoader(text)  # its reader already refuses characters YAML does not allow
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _reason(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem and context, without the snippet of the document its str() shows."""
    problem = exc.problem or type(exc).__name__
    if not exc.context:
        return problem
    start = f" from line {exc.context_mark.line + 1}" if exc.context_mark else ""
    return f"{exc.context}{start}: {problem}"  # as PyYAML words them: "while parsing ...: expected ..."


def _at(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    return f"line {mark.line + 1}: " if mark else ""
