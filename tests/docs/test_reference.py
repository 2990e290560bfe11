"""The generated reference pages (scripts/docs_reference.py) match the code they document."""

from __future__ import annotations

import html
import importlib.util
import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

REPO = Path(__file__).resolve().parents[2]


def _load_generator():
    # scripts/ is no package: the generator is loaded from its file, once
    if "docs_reference" not in sys.modules:
        spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["docs_reference"] = module
        spec.loader.exec_module(module)
    return sys.modules["docs_reference"]


docs_reference = _load_generator()


@pytest.fixture(scope="module")
def pages() -> dict[Path, str]:
    return docs_reference.render()


def test_committed_pages_are_current(pages):
    for path, text in pages.items():
        committed = REPO / path
        assert committed.is_file(), f"{path} is missing: run make docs-reference"
        assert committed.read_text() == text, f"{path} is stale: run make docs-reference"


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    for info in model.model_fields.values():
        nested = docs_reference._nested_model(info.annotation)
        if nested is not None:
            _models(nested[0], seen)


def test_every_alias_of_the_stack_config_is_documented(pages):
    from components.platform_config import PlatformConfig
    from greenops.stack.stack_config import KEYS, StackConfig

    text = html.unescape(pages[docs_reference.CONFIGURATION])  # cells write [ ] _ * | as entities
    for key in KEYS:
        assert f"`greenops:{key}`" in text, key
    models: set[type[BaseModel]] = set()
    _models(StackConfig, models)
    _models(PlatformConfig, models)
    missing = [
        f"{model.__name__}.{name} ({info.alias or name})"
        for model in models
        for name, info in model.model_fields.items()
        # a row's key (<code>...</code>) or a section's heading (`...`), after the path it is under
        if not any(f"{sep}{info.alias or name}{end}" in text for sep in ".:" for end in ("</code>", "`"))
    ]
    assert not missing, f"not in {docs_reference.CONFIGURATION}: {missing}"


def test_every_secret_the_program_reads_is_documented(pages):
    text = pages[docs_reference.CONFIGURATION]
    for key in ("schedulerAdminToken", "metricsToken", "opaToken", "schedulerToken", "mlflowDbPassword"):
        assert f"<code>greenops:{key}</code>" in text, key


def test_every_subcommand_is_documented(pages):
    from greenops.cli import build_parser

    text = pages[docs_reference.CLI]
    parser = build_parser()
    commands = [sub.prog for sub, _ in docs_reference._subcommands(parser)]
    assert {"greenops render", "greenops token issue", "greenops reconcile"} <= set(commands)
    for prog in commands:
        assert f"### `{prog}`" in text, prog
    for script in docs_reference._scripts():
        assert f"## `{script}`" in text, script


def test_no_machine_path_in_the_pages(pages):
    for path, text in pages.items():
        assert str(REPO) not in text, path
        assert str(REPO.parent) not in text, path


class _Inner(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    dry_run: bool = Field(default=False, description="plan only")


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    retry_count: int = Field(default=3, ge=1, le=9, description="how many times")
    mode: Literal["a", "b"] = "a"
    inner: _Inner = Field(default_factory=lambda: _Inner(dry_run=True))


def test_a_new_field_shows_up_so_the_check_can_fail():
    """A field added to a model changes the rendered table: the staleness check sees it."""
    before = docs_reference.model_table(_Section, "greenops:fake")

    class Grown(_Section):
        extra_field: str = Field(default="x", max_length=5, examples=["abc"], description="new")

    after = docs_reference.model_table(Grown, "greenops:fake")
    assert "extraField" not in before
    row = next(line for line in after.splitlines() if "<code>greenops:fake.extraField</code>" in line)
    assert "at most 5 long" in row and "<code>&quot;abc&quot;</code>" not in row and '"abc"' in row
    assert "≥ 1; ≤ 9" in after and "how many times" in after
    assert 'one of <code>"a"</code>, <code>"b"</code>' in after
    # a nested model's fields under its key, with the default its factory builds
    inner = next(line for line in after.splitlines() if "greenops:fake.inner.dryRun" in line)
    assert "<code>true</code> when <code>greenops:fake.inner</code> is not set" in inner


def test_check_names_a_stale_page(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(docs_reference, "ROOT", tmp_path)
    monkeypatch.setattr(docs_reference, "render", lambda: {Path("docs/reference/x.md"): "new\n"})
    (tmp_path / "docs/reference").mkdir(parents=True)
    (tmp_path / "docs/reference/x.md").write_text("old\n")
    assert docs_reference.main(["--check"]) == 1
    assert "docs/reference/x.md is stale: run make docs-reference" in capsys.readouterr().err
    assert docs_reference.main([]) == 0
    assert docs_reference.main(["--check"]) == 0
