"""Tokens and principals against a real SQLite database."""

from datetime import timedelta
from pathlib import Path

import pytest

from claude_code_memory.auth.identity import (
    LAST_USED_RESOLUTION,
    Identity,
    Principal,
    acting_user,
    hash_token,
)
from claude_code_memory.db.database import Database
from claude_code_memory.db.models import ApiToken
from claude_code_memory.errors import BadInput, Forbidden, NotFound, Unauthorised


@pytest.fixture
def identity(tmp_path: Path) -> Identity:
    database = Database(f"sqlite:///{tmp_path / 'm.db'}")
    database.migrate()
    database.migrate()  # migrations are idempotent
    return Identity(database, admin_token="admin-secret")


def test_token_round_trip_and_only_hash_stored(identity: Identity) -> None:
    token = identity.create_token("alice", "laptop")
    assert token.startswith("ccm_") and len(token) > 40
    assert identity.authenticate(f"Bearer {token}") == Principal(user_id="alice")
    with identity.database.session() as session:
        stored = session.query(ApiToken).one()
        assert stored.token_hash == hash_token(token)
        assert token not in (stored.token_hash, stored.prefix)


def test_use_is_recorded_at_most_once_a_minute(identity: Identity) -> None:
    token = identity.create_token("carol")
    assert identity.list_tokens("carol")[0].last_used_at is None
    identity.authenticate(f"Bearer {token}")
    first = identity.list_tokens("carol")[0].last_used_at
    assert first is not None
    identity.authenticate(f"Bearer {token}")
    assert identity.list_tokens("carol")[0].last_used_at == first  # within the resolution
    with identity.database.session() as session:
        stored = session.query(ApiToken).one()
        stored.last_used_at -= LAST_USED_RESOLUTION + timedelta(seconds=1)
    identity.authenticate(f"Bearer {token}")
    assert identity.list_tokens("carol")[0].last_used_at > first


def test_admin_and_bad_headers(identity: Identity) -> None:
    assert identity.authenticate("Bearer admin-secret").is_admin
    for header in (None, "", "Bearer", "Basic abc", "Bearer nope"):
        with pytest.raises(Unauthorised):
            identity.authenticate(header)


def test_revoke(identity: Identity) -> None:
    token = identity.create_token("bob")
    [info] = identity.list_tokens("bob")
    identity.revoke_token(info.prefix)
    with pytest.raises(Unauthorised, match="revoked"):
        identity.authenticate(f"Bearer {token}")
    assert identity.list_tokens("bob")[0].revoked
    with pytest.raises(NotFound):
        identity.revoke_token("ccm_nothing")


def test_principal_scoping_and_user_id_validation(identity: Identity) -> None:
    Principal(user_id="alice").require_user("alice")
    Principal(user_id=None, is_admin=True).require_user("anyone")
    with pytest.raises(Forbidden):
        Principal(user_id="alice").require_user("bob")
    for bad in ("", "has space", "x" * 65, "../etc", "-start"):
        with pytest.raises(BadInput):
            identity.create_token(bad)


def test_acting_user_decides_whom_a_request_acts_for() -> None:
    alice, admin = Principal(user_id="alice"), Principal(user_id=None, is_admin=True)
    assert acting_user(alice, None) == "alice"  # a user token acts for its own user by default
    assert acting_user(alice, "alice") == "alice"
    assert acting_user(admin, "bob") == "bob"
    with pytest.raises(Forbidden, match="cannot access the memories of user 'bob'"):
        acting_user(alice, "bob")
    with pytest.raises(BadInput, match="user_id is required with the admin token"):
        acting_user(admin, None)
    with pytest.raises(BadInput, match="invalid user_id"):
        acting_user(admin, "../etc")


def test_the_rest_edge_and_the_consent_queue_share_that_decision() -> None:
    """One owner: the REST dependency is the same function, and no other module words the
    admin-must-name-a-user refusal itself."""
    from claude_code_memory.api import deps

    assert deps.acting_user is acting_user
    package = Path(__file__).resolve().parent.parent / "claude_code_memory"
    wording = "user_id is required with the admin token"
    owners = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if wording in p.read_text())
    assert owners == ["auth/identity.py"]
