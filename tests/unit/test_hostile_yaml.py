"""Every YAML document the platform reads from its users (workload files, stack files, policy
settings, a kubeconfig) goes through one loader that refuses what makes a few bytes expensive:
anchors and aliases (the "billion laughs"), documents above a size limit and nesting too deep for
the parser. Each refusal is one line naming the file, the line where known, and the reason, and
never quotes the document."""

from __future__ import annotations

import time

import pytest

from greenops.common.errors import GreenOpsError
from greenops.common.user_yaml import MAX_YAML_BYTES, UserYamlError, load_yaml_file, load_yaml_text

# 387 bytes of nested aliases in `name` (the audit's file): each level holds nine of the one before
BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]",
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]",
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]",
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]",
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]",
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]",
        "name: [*h,*h,*h,*h,*h,*h,*h,*h,*h]",
    ]
)


def test_a_plain_document_loads():
    assert load_yaml_text("name: a\ncpu: 2\nmemory: 4.5\ndeadline: 2027-01-01T00:00:00Z\n", "w.yaml")["cpu"] == 2


@pytest.mark.parametrize(
    "text, line",
    [
        ("name: &n x\nother: *n\n", 1),
        ("a: 1\nb: &n [1, 2]\n", 2),
        ("a: 1\nb: 2\nc: *undefined\n", 3),
        (BOMB, 1),
    ],
)
def test_anchors_and_aliases_are_refused_naming_the_file_and_line(text, line):
    t = time.perf_counter()
    with pytest.raises(UserYamlError) as info:
        load_yaml_text(text, "workloads/team.yaml")
    assert time.perf_counter() - t < 1
    msg = str(info.value)
    assert msg.startswith(f"workloads/team.yaml: line {line}: anchors and aliases")
    assert "\n" not in msg and len(msg) < 200


def test_a_document_above_the_size_limit_is_refused_saying_the_limit(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"# " + b"x" * MAX_YAML_BYTES + b"\n")
    with pytest.raises(UserYamlError) as info:
        load_yaml_file(path, "big.yaml")
    assert str(info.value) == (
        f"big.yaml: larger than the limit of {MAX_YAML_BYTES} bytes (1 MiB) for one YAML document"
    )
    with pytest.raises(UserYamlError, match=f"limit of {MAX_YAML_BYTES} bytes"):
        load_yaml_text("x" * (MAX_YAML_BYTES + 1), "inline")


@pytest.mark.parametrize("text", ["[" * 100_000, "a:\n" + "".join(f"{' ' * i}- \n" for i in range(1, 500))])
def test_nesting_too_deep_is_refused_not_a_recursion_error(text):
    with pytest.raises(UserYamlError, match=r"^deep\.yaml: line \d+: nested deeper than \d+ levels"):
        load_yaml_text(text, "deep.yaml")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("cpu: " + "9" * 5000 + "\n", r"^v\.yaml: line 1: cannot read this value \(.*digits"),
        ("deadline: 2027-13-45\n", r"^v\.yaml: line 1: cannot read this value \(month must be in 1\.\.12\)$"),
        ("a: !!python/object:os.system x\n", r"^v\.yaml: not readable as YAML: line 1: could not determine a"),
    ],
)
def test_values_that_cannot_be_built_are_named_by_line(text, reason):
    with pytest.raises(UserYamlError, match=reason):
        load_yaml_text(text, "v.yaml")


def test_syntax_errors_name_the_line_and_never_quote_the_document():
    secret = "password: hunter2-very-secret"
    with pytest.raises(UserYamlError) as info:
        load_yaml_text(f"{secret}\nworkloads: [unclosed\n", "broken.yaml")
    msg = str(info.value)
    assert msg.startswith("broken.yaml: not readable as YAML: line ")
    assert "hunter2" not in msg and "unclosed" not in msg and "\n" not in msg


def test_bytes_that_are_not_utf8_are_refused_by_position():
    with pytest.raises(UserYamlError, match=r"^b\.yaml: not UTF-8 text \(byte 6\)$"):
        load_yaml_text(b"name: \xff\xfe", "b.yaml")


def test_the_loader_errors_are_the_platform_s_errors():
    assert issubclass(UserYamlError, GreenOpsError)


def test_policy_settings_are_read_with_the_same_loader(tmp_path):
    from greenops.policies.settings import load_policy_settings

    path = tmp_path / "policy.yaml"
    path.write_text("default_providers: &p [azure]\ntenant_vcpu_quota: {}\nextra: *p\n")
    with pytest.raises(GreenOpsError, match=r"^policy config .*policy\.yaml: line 1: anchors and aliases"):
        load_policy_settings(path)
    path.write_text("default_providers: [azure]\nsecret_setting: hunter2\n")
    with pytest.raises(GreenOpsError) as info:
        load_policy_settings(path)
    assert str(info.value).endswith("is invalid: secret_setting: Extra inputs are not permitted")


def test_a_kubeconfig_is_read_with_the_same_loader_and_never_quoted():
    from greenops.placing.observe import ClusterObserver, ClusterUnavailable

    kubeconfig = "users:\n- name: u\n  user: &u {token: hunter2-token}\nother: *u\n"
    with pytest.raises(ClusterUnavailable) as info:
        ClusterObserver(kubeconfig)
    msg = str(info.value)
    assert "greenops:kubeconfig: line 3: anchors and aliases" in msg and "hunter2" not in msg
    with pytest.raises(ClusterUnavailable) as info:
        ClusterObserver("users: [{token: hunter2-token\n")
    assert "hunter2" not in str(info.value) and "\n" not in str(info.value)
