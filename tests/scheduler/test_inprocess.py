"""The scheduler app in-process (FastAPI's TestClient) with an injected clock that stands still
until a test moves it: every time it answers must follow that clock, not the machine's. Also the
settings the service starts with: the environment, the flags over it, and one clear line when a
value is wrong. The real server is proven by the subprocess tests (test_service.py and others)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from greenops.common.clock import parse_time, stamp
from greenops.intensity import ProfileSource
from greenops.reservations import ReservationStore
from greenops.scheduler.__main__ import parse_args, settings_from
from greenops.scheduler.api import create_app
from greenops.scheduler.dashboard import mount_dashboard
from greenops.scheduler.settings import load_settings
from greenops.scheduler.state import get_clock, get_source

# Years away from any machine's clock: a service that read the wall clock would refuse these
# deadlines (more than 366 days ahead) or answer from the wrong hour.
NOW = datetime(2031, 3, 4, 5, 0, tzinfo=UTC)
TOKEN = "in-process-token"  # the bootstrap admin's
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SHORT_ADMIN_TOKEN = "the admin token must be at least 16 characters (e.g. openssl rand -hex 32)"
SETTINGS_VARIABLES = (
    "GREENOPS_CARBON_SOURCE",
    "GREENOPS_CAPACITY_VCPU",
    "GREENOPS_SCHEDULER_DATABASE",
    "GREENOPS_SCHEDULER_RATE_LIMIT",
    "GREENOPS_SCHEDULER_ADMIN_TOKEN",
    "GREENOPS_SCHEDULER_TOKEN",
    "GREENOPS_SCHEDULER_PRINCIPALS",
    "GREENOPS_SCHEDULER_KUBECONFIG",
    "GREENOPS_SCHEDULER_POLICY_CONFIG",
    "ELECTRICITYMAPS_TOKEN",
)


class SteppingClock:
    """A clock that stands still until the test moves it (the platform's clocks are callables)."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, by: timedelta) -> None:
        self.now += by


def body(**over) -> dict:
    # One zone and a deadline exactly one run after NOW: the only possible start is NOW itself.
    b = {
        "eligible_regions": ["FR"],
        "deadline": stamp(NOW + timedelta(hours=2)),
        "duration": 2,
        "cpu": 8,
        "memory": 16,
    }
    b.update(over)
    return b


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock(NOW)


@pytest.fixture
def store(tmp_path) -> Iterator[ReservationStore]:
    s = ReservationStore(f"sqlite:///{tmp_path / 'reservations.db'}")
    yield s
    s.close()


@pytest.fixture
def app(clock, store):
    return create_app(ProfileSource(), capacity_vcpu=8, clock=clock, store=store, admin_tokens=[TOKEN])


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app) as c:  # entered, so the app's lifespan runs as under uvicorn
        c.headers.update(AUTH)  # the platform's admin: every tenant and path
        yield c


# --- health -----------------------------------------------------------------------------------


def test_health_and_readiness_describe_the_source(client):
    live, ready = client.get("/healthz"), client.get("/readyz")
    assert live.status_code == ready.status_code == 200
    assert live.json() == {"status": "ok", "source": "profiles", "zones": len(ProfileSource().zones())}
    assert ready.json()["status"] == "ready" and ready.json()["zones"] > 0


def test_readiness_fails_while_the_source_has_no_zones(app, client):
    class Empty(ProfileSource):
        def zones(self) -> frozenset[str]:
            return frozenset()

    empty = Empty()
    app.dependency_overrides[get_source] = lambda: empty
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json() == {"detail": "carbon source has no zones"}
    assert client.get("/healthz").json()["zones"] == 0  # alive all the same


# --- deciding against the injected clock -------------------------------------------------------


def test_the_answer_starts_at_the_injected_now(client):
    r = client.post("/scheduling", json=body())
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["scheduling_location"] == "FR"
    assert out["scheduling_time"] == out["searched_from"] == stamp(NOW)
    assert out["baseline"] == "run now, mean over the eligible zones"


def test_a_wider_window_starts_within_it_and_the_clock_is_read_per_request(client, clock):
    wide = body(eligible_regions=["FR", "DE"], deadline=stamp(NOW + timedelta(hours=12)), cpu=1)
    first = client.post("/scheduling", json=wide).json()
    start = parse_time(first["scheduling_time"])
    assert first["searched_from"] == stamp(NOW) and NOW <= start <= NOW + timedelta(hours=10)
    clock.advance(timedelta(hours=3))
    later = client.post("/scheduling", json=wide).json()
    assert later["searched_from"] == stamp(NOW + timedelta(hours=3))
    assert parse_time(later["scheduling_time"]) >= NOW + timedelta(hours=3)
    clock.advance(timedelta(hours=9))  # now the deadline is past
    r = client.post("/scheduling", json=wide)
    assert r.status_code == 422 and r.json()["detail"].startswith("deadline:")


def test_overriding_get_clock_reaches_scheduling_and_reservations(app, client):
    moved = NOW + timedelta(days=5)
    app.dependency_overrides[get_clock] = lambda: SteppingClock(moved)
    r = client.put("/reservations/dev/etl", json=body(deadline=stamp(moved + timedelta(hours=2))))
    assert r.status_code == 200 and r.json()["scheduling_time"] == stamp(moved)
    # the reservations router reads the same dependency: the release is stamped at the moved time
    released = client.delete("/reservations/dev/etl")
    assert released.status_code == 200 and parse_time(released.json()["updated_at"]) == moved
    app.dependency_overrides.clear()
    back = client.post("/scheduling", json=body()).json()  # the slot at NOW was never taken
    assert back["scheduling_time"] == stamp(NOW)


# --- the reservation record ----------------------------------------------------------------------


def test_a_put_replayed_gets_the_same_answer_and_books_once(client, store):
    first = client.put("/reservations/team/etl", json=body())
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    again = client.put("/reservations/team/etl", json=body(req_timeout=3))  # a retry may change its timeout
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert [row["key"] for row in store.list(now=NOW)] == ["team/etl"]
    booked = client.get("/reservations/team/etl").json()
    assert booked["revision"] == 1 and parse_time(booked["created_at"]) == NOW
    # capacity 8 vCPUs and 8 asked: the one slot is held once, so another key finds no room
    other = client.put("/reservations/team/other", json=body())
    assert other.status_code == 409 and other.json()["detail"].startswith("eligible_regions:")


# --- authentication and validation ---------------------------------------------------------------


def test_without_the_token_it_is_401_and_the_probes_stay_open(clock, store):
    with TestClient(mount_dashboard(create_app(ProfileSource(), clock=clock, admin_tokens=[TOKEN], store=store))) as c:
        refused = c.post("/scheduling", json=body())
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert refused.json() == {
            "detail": "unauthenticated: a bearer token is required: send Authorization: Bearer <token> "
            "(greenops token issue)"
        }
        # the credential guards every router but the probes, invalid bodies included: auth comes first
        for path in (
            "/reservations",
            "/reservations/some/key",
            "/dashboard",
            "/dashboard/api/placements",
            "/credentials",
        ):
            assert c.get(path).status_code == 401, path
        assert c.post("/scheduling", json={"cpu": "x"}).status_code == 401
        assert c.put("/reservations/k", json=body()).status_code == 401
        assert c.delete("/reservations/k").status_code == 401
        assert c.get("/healthz").status_code == c.get("/readyz").status_code == 200
        ok = c.post("/scheduling", json=body(), headers=AUTH)
        assert ok.status_code == 200 and ok.json()["scheduling_time"] == stamp(NOW)


def test_a_bad_body_is_a_422_naming_the_field(client):
    r = client.post("/scheduling", json=body(cpu="8"))  # strict: a string is not a number
    assert r.status_code == 422
    assert r.json()["detail"] == "cpu: Input should be a valid number"
    assert r.json()["errors"] == [{"loc": ["body", "cpu"], "msg": "Input should be a valid number"}]
    missing = client.post("/scheduling", json={"eligible_regions": ["FR"]}).json()["detail"]
    assert all(f"{f}: Field required" in missing for f in ("deadline", "duration", "cpu", "memory"))
    unknown = client.post("/scheduling", json=body(eligible_regions=["FR", "ATLANTIS"])).json()
    assert unknown["detail"] == "eligible_regions: unknown zone(s) ATLANTIS"
    assert unknown["errors"] == [{"loc": ["body", "eligible_regions"], "msg": "unknown zone(s) ATLANTIS"}]


# --- settings ------------------------------------------------------------------------------------


@pytest.fixture
def env(monkeypatch):
    """A clean environment for the settings, set per test."""
    for name in SETTINGS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_settings_defaults_and_the_environment(env):
    defaults = load_settings()
    assert (defaults.source, defaults.capacity_vcpu, defaults.database) == ("profiles", 512.0, None)
    assert defaults.requests_per_principal() == "600/minute" and defaults.bootstrap_admin_token() is None
    # GREENOPS_SCHEDULER_TOKEN is a client's credential now: the service never reads it as its own
    env.setenv("GREENOPS_SCHEDULER_TOKEN", "a-clients-credential")
    assert load_settings().bootstrap_admin_token() is None
    env.setenv("GREENOPS_CARBON_SOURCE", "traces:ci-exports")
    env.setenv("GREENOPS_CAPACITY_VCPU", "64")
    env.setenv("GREENOPS_SCHEDULER_DATABASE", "sqlite:///record.db")
    env.setenv("GREENOPS_SCHEDULER_RATE_LIMIT", "none")
    env.setenv("GREENOPS_SCHEDULER_ADMIN_TOKEN", TOKEN)
    env.setenv("ELECTRICITYMAPS_TOKEN", "em-token")
    s = load_settings()
    assert (s.source, s.capacity_vcpu, s.database) == ("traces:ci-exports", 64.0, "sqlite:///record.db")
    assert s.requests_per_principal() is None and s.bootstrap_admin_token() == TOKEN
    assert s.electricitymaps_api_token() == "em-token"
    assert TOKEN not in repr(s)  # a secret never reaches a log line by way of the settings


def test_settings_ignore_names_that_are_not_theirs(env):
    # Kubernetes puts GREENOPS_SCHEDULER_PORT=tcp://... in every pod beside the Service of that name
    env.setenv("GREENOPS_SCHEDULER_PORT", "tcp://10.0.0.7:8080")
    env.setenv("GREENOPS_SCHEDULER_SERVICE_HOST", "10.0.0.7")
    env.setenv("GREENOPS_SCHEDULER_SOURCE", "oip:http://elsewhere")  # the source's name is GREENOPS_CARBON_SOURCE
    env.setenv("GREENOPS_SCHEDULER_DATABASE", "")  # empty has always meant the default file
    s = load_settings()
    assert s.source == "profiles" and s.database is None


def test_flags_override_the_environment(env, tmp_path):
    env.setenv("GREENOPS_CAPACITY_VCPU", "64")
    env.setenv("GREENOPS_SCHEDULER_RATE_LIMIT", "not-a-limit")  # overridden, so never judged
    env.setenv("GREENOPS_SCHEDULER_ADMIN_TOKEN", "from-the-environment")
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    argv = ["--capacity-vcpu", "32", "--rate-limit", "5/second", "--admin-token-file", str(token_file)]
    s = settings_from(parse_args(argv))
    assert s.capacity_vcpu == 32.0 and s.requests_per_principal() == "5/second"
    assert s.bootstrap_admin_token() == TOKEN
    assert settings_from(parse_args(["--rate-limit", "none"])).capacity_vcpu == 64.0  # unflagged: the env's


@pytest.mark.parametrize(
    "variables,argv,message",
    [
        (
            {"GREENOPS_CAPACITY_VCPU": "p4ssw0rd"},
            [],
            "GREENOPS_CAPACITY_VCPU: Input should be a valid number, unable to parse string as a number",
        ),
        ({"GREENOPS_CAPACITY_VCPU": "64"}, ["--capacity-vcpu", "0"], "--capacity-vcpu: Input should be greater than 0"),
        ({}, ["--rate-limit", "lots"], "--rate-limit: expected a count per period, e.g. 600/minute, or none"),
        (
            {"GREENOPS_SCHEDULER_ADMIN_TOKEN": ""},
            [],
            "GREENOPS_SCHEDULER_ADMIN_TOKEN: " + SHORT_ADMIN_TOKEN,
        ),
        (
            {"GREENOPS_SCHEDULER_ADMIN_TOKEN": "p4ssw0rd"},
            [],
            "GREENOPS_SCHEDULER_ADMIN_TOKEN: " + SHORT_ADMIN_TOKEN,
        ),
        (
            {"GREENOPS_CARBON_SOURCE": "nowhere"},
            [],
            "GREENOPS_CARBON_SOURCE: expected profiles, traces:DIR, oip:URL or electricitymaps",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(env, variables, argv, message):
    for name, value in variables.items():
        env.setenv(name, value)
    with pytest.raises(SystemExit) as stopped:
        settings_from(parse_args(argv))
    assert str(stopped.value.code) == f"scheduler: invalid setting: {message}"
    assert "p4ssw0rd" not in str(stopped.value.code)  # the value itself is never echoed


def test_the_real_process_stops_on_a_bad_setting_with_one_line_and_no_traceback(tmp_path):
    variables = {**os.environ, "GREENOPS_SCHEDULER_RATE_LIMIT": "lots", "XDG_STATE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "greenops.scheduler"],
        env=variables,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "scheduler: invalid setting: GREENOPS_SCHEDULER_RATE_LIMIT: "
        "expected a count per period, e.g. 600/minute, or none"
    ]
    assert not (tmp_path / "greenops").exists()  # stopped before it opened a reservation record
