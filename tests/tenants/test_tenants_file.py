"""The tenants file: what loads, and every mistake named with its line and what is wrong."""

from __future__ import annotations

import hashlib

import pytest

from pioneer_grpc.config import ConfigError, load_config
from pioneer_grpc.tenants import DEFAULT_TENANT, Caller, RateLimit, Role, Tenants, TenantsError, parse_tenants
from pioneer_grpc.tenants.limits import RateLimits
from tests.tenants.files import ADMIN, AGENT, OTHER_AGENT, VIEWER, digest, tenants_toml, token_entry


def test_each_token_is_found_by_its_digest_and_no_other_is():
    tenants = parse_tenants(tenants_toml())
    assert tenants.caller_of(AGENT.encode()) == Caller("acme", Role.AGENT)
    assert tenants.caller_of(VIEWER.encode()) == Caller("acme", Role.VIEWER)
    assert tenants.caller_of(ADMIN.encode()) == Caller("ops", Role.ADMIN)
    assert tenants.caller_of(OTHER_AGENT.encode()) == Caller("zeta", Role.AGENT)
    assert tenants.caller_of(b"") is None
    assert tenants.caller_of(AGENT.encode() + b" ") is None
    # The digest itself is not a token.
    assert tenants.caller_of(digest(AGENT).encode()) is None
    assert tenants.tenant_names == {"acme", "ops", "zeta"}


def test_the_file_keeps_no_token_in_clear():
    tenants = parse_tenants(tenants_toml())
    held = repr(tenants)
    for token in (AGENT, VIEWER, ADMIN):
        assert token not in held
    assert all(
        entry.digest == hashlib.sha256(e.encode()).digest()
        for entry, e in zip(tenants.entries, (AGENT, VIEWER, ADMIN), strict=False)
    )


def test_upper_case_hex_is_the_same_digest():
    tenants = parse_tenants(token_entry(AGENT, "acme", "agent").replace(digest(AGENT), digest(AGENT).upper()))
    assert tenants.caller_of(AGENT.encode()) == Caller("acme", Role.AGENT)


def test_the_single_token_is_the_default_tenant_s_agent():
    tenants = Tenants.single_token("s3cret")
    assert tenants.caller_of(b"s3cret") == Caller(DEFAULT_TENANT, Role.AGENT)
    assert tenants.caller_of(b"other") is None


def test_limits_load_with_a_default_burst():
    text = tenants_toml(
        limits="[tenant.acme]\nrequests_per_second = 2.5\n\n"
        "[tenant.zeta]\nrequests_per_second = 50\nburst = 100\n"
    )
    tenants = parse_tenants(text)
    assert tenants.limits == {"acme": RateLimit(2.5, 3), "zeta": RateLimit(50.0, 100)}


def _problems(text: str) -> str:
    with pytest.raises(TenantsError) as err:
        parse_tenants(text, "tenants.toml")
    return str(err.value)


def test_every_mistake_is_named_with_its_line_at_once():
    good = token_entry(AGENT, "acme", "agent")  # lines 1-4
    text = (
        good
        + '[[token]]\nsha256 = "abc123"\ntenant = "acme"\nrole = "agent"\n\n'  # line 6: short digest
        + token_entry(VIEWER, "acme", "reader")  # line 11: unknown role
        + token_entry(AGENT, "zeta", "viewer")  # line 16: duplicate digest
        + f'[[token]]\nsha256 = "{digest("x")}"\nrole = "agent"\nrol = "x"\n\n'  # line 21: no tenant
        + f'[[token]]\nsha256 = "{digest("y")}"\ntenant = "no spaces allowed"\nrole = "admin"\n\n'  # line 26
        + f'[[token]]\nsha256 = "{"g" * 64}"\ntenant = "acme"\nrole = "agent"\n\n'  # line 31: not hex
    )
    message = _problems(text)
    assert message.startswith("tenants.toml has 7 problem(s):")
    lines = message.splitlines()[1:]
    assert lines[0].strip() == (
        "line 6: [[token]] 2: sha256 must be 64 hexadecimal characters (the sha256 of the token, "
        "not the token), got 'abc123'"
    )
    assert lines[1].strip() == "line 11: [[token]] 3: unknown role 'reader' (roles: agent, viewer, admin)"
    assert lines[2].strip() == (
        "line 16: [[token]] 4: the same sha256 as line 1: [[token]] 1 (a token has one tenant and one role)"
    )
    assert lines[3].strip() == "line 21: [[token]] 5: unknown key 'rol' (expected sha256, tenant, role)"
    assert lines[4].strip() == "line 21: [[token]] 5: tenant is missing"
    assert lines[5].strip().startswith("line 26: [[token]] 6: tenant must be 1-64 letters")
    assert lines[6].strip().startswith("line 31: [[token]] 7: sha256 must be 64 hexadecimal characters")


def test_a_token_in_clear_where_its_digest_belongs_is_refused_without_echoing_it():
    long_token = "sk-live-" + "q" * 40
    message = _problems(f'[[token]]\nsha256 = "{long_token}"\ntenant = "acme"\nrole = "agent"\n')
    assert "got 48 characters" in message
    assert long_token not in message


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ("[tenant.acme]\nburst = 3\n", "line 21: [tenant.acme]: requests_per_second is missing"),
        ("[tenant.acme]\nrequests_per_second = 0\n", "requests_per_second must be a number above 0, got 0"),
        ("[tenant.acme]\nrequests_per_second = 5\nburst = 0\n", "burst must be a whole number of at least 1"),
        (
            "[tenant.acme]\nrequests_per_second = 5\nburst = 1.5\n",
            "burst must be a whole number of at least 1",
        ),
        ("[tenant.acme]\nrequests_per_second = 5\nrps = 1\n", "unknown key 'rps'"),
        ("[tenant.nobody]\nrequests_per_second = 5\n", "[tenant.nobody]: no [[token]] names this tenant"),
    ],
)
def test_bad_limits_are_named(limits, expected):
    assert expected in _problems(tenants_toml(limits=limits))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "names no token"),
        ("[[token]\n", "is not valid TOML"),
        ('token = "x"\n', "'token' must be an array of tables"),
        ("tokens = []\n", "unknown top-level key 'tokens'"),
    ],
)
def test_files_that_are_not_tenants_files(text, expected):
    assert expected in _problems(text)


def test_buckets_count_calls_and_a_reload_keeps_an_unchanged_bucket():
    now = [100.0]
    rates = RateLimits(lambda: now[0])
    rates.configure({"acme": RateLimit(2.0, 2)})
    assert [rates.take("acme")[0] for _ in range(3)][:2] == [0.0, 0.0]
    now[0] += 0.25  # half a token back
    wait, limit = rates.take("acme")
    assert (wait, limit) == (0.25, RateLimit(2.0, 2))
    rates.configure({"acme": RateLimit(2.0, 2), "zeta": RateLimit(1.0, 1)})
    assert rates.take("acme")[0] > 0  # same limit: the same, empty bucket
    rates.configure({"acme": RateLimit(2.0, 5)})
    assert rates.take("acme")[0] == 0.0  # a new limit starts full
    assert rates.take("zeta") == (0.0, None)  # no limit any more


def test_token_and_tenants_together_are_refused_at_start(tmp_path):
    path = tmp_path / "tenants.toml"
    path.write_text(tenants_toml())
    with pytest.raises(ConfigError, match="--token and --tenants"):
        load_config({"token": "s3cret", "tenants_file": str(path)})
    assert load_config({"tenants_file": str(path)}).tenants_file == path


def test_a_bad_tenants_file_stops_the_start_with_its_problems(tmp_path):
    path = tmp_path / "tenants.toml"
    path.write_text(token_entry(AGENT, "acme", "owner"))
    with pytest.raises(ConfigError, match="line 1: \\[\\[token\\]\\] 1: unknown role 'owner'"):
        load_config({"tenants_file": str(path)})
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config({"tenants_file": str(tmp_path / "missing.toml")})
