"""Which history the report judges completed runs by: Electricity Maps' when its token is
configured, else the traces; a folder named explicitly must exist, the default one may be absent."""

from __future__ import annotations

import pytest

from greenops.cli import build_parser
from greenops.common.errors import GreenOpsError
from greenops.insight import carbon_history
from greenops.insight.carbon_history import ElectricityMapsHistory, NoHistory, history_source
from greenops.intensity import TraceSource


def test_the_scheduler_token_variable_selects_electricity_maps(monkeypatch, tmp_path):
    monkeypatch.setenv("ELECTRICITYMAPS_TOKEN", "t")
    assert isinstance(history_source(tmp_path), ElectricityMapsHistory)
    monkeypatch.delenv("ELECTRICITYMAPS_TOKEN")
    assert isinstance(history_source(token="t"), ElectricityMapsHistory)


def test_a_missing_traces_folder_named_explicitly_is_refused(monkeypatch, tmp_path):
    monkeypatch.delenv("ELECTRICITYMAPS_TOKEN", raising=False)
    with pytest.raises(GreenOpsError, match=f"--traces {tmp_path / 'none'}: no such folder"):
        history_source(tmp_path / "none")
    (tmp_path / "empty").mkdir()
    with pytest.raises(GreenOpsError, match="no Electricity Maps CSV files"):
        history_source(tmp_path / "empty")


def test_without_the_default_traces_each_row_will_say_so(monkeypatch, tmp_path):
    monkeypatch.delenv("ELECTRICITYMAPS_TOKEN", raising=False)
    monkeypatch.setattr(carbon_history, "DEFAULT_TRACES", tmp_path / "absent")
    source = history_source()
    assert isinstance(source, NoHistory)
    assert f"no traces at {tmp_path / 'absent'}" in source.describe()


def test_a_folder_of_exports_is_read_as_traces(monkeypatch, tmp_path):
    monkeypatch.delenv("ELECTRICITYMAPS_TOKEN", raising=False)
    (tmp_path / "DE.csv").write_text(
        "Datetime (UTC),Zone Id,Carbon Intensity gCO₂eq/kWh (LCA)\n"
        "2023-03-15 00:00:00,DE,300\n2023-03-15 01:00:00,DE,200\n",
        encoding="utf-8",
    )
    source = history_source(tmp_path)
    assert isinstance(source, TraceSource) and source.zones() == {"DE"}


def test_the_report_command_takes_a_traces_folder():
    args = build_parser().parse_args(["report", "--stack", "dev", "--traces", "exports"])
    assert args.traces == "exports"
