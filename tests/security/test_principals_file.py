"""The scheduler's declared principals file is operator input: read with the project's YAML rules
(bounded size, no aliases, the line of an error), and refused by field, never with a traceback."""

from __future__ import annotations

import pytest

from greenops.common.errors import GreenOpsError
from greenops.common.user_yaml import MAX_YAML_BYTES
from greenops.identity.principals import load_principals


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("principals:\n - &p {name: a, role: read, paths: [api]}\n - *p\n", "anchors and aliases"),
        ("principals: [\n", "not readable as YAML"),
        ("principals:\n - {name: a, role: read}\n", "principals[0].paths: Field required"),
        ("principals:\n - {name: a, role: owner, paths: [api], tokenSha256: " + "0" * 64 + "}\n", "principals[0].role"),
    ],
)
def test_a_bad_file_is_refused_naming_where(tmp_path, text, expected):
    path = tmp_path / "principals.yaml"
    path.write_text(text)
    with pytest.raises(GreenOpsError) as info:
        load_principals(path)
    assert expected in str(info.value) and str(path) in str(info.value)


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "principals.yaml"
    path.write_bytes(b"#" * (MAX_YAML_BYTES + 10))
    with pytest.raises(GreenOpsError, match="larger than the limit"):
        load_principals(path)
