"""Who belongs to which team and in which role; invitations; the audit log's rows.

Roles: ``owner`` (invites, removes, reads the audit log, shares), ``member`` (shares and reads),
``reader`` (reads only). A team keeps at least one owner.

An invitation is one user's, used once. A user holds at most one open invitation to a team: a new
one replaces the open one. It stops working when it is revoked, when its user is removed from
the team, and when its issuer is no longer an owner (removed, left or demoted): at redemption
the issuer must still be an owner, so a code never grants more than its issuer holds then.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from ...auth.identity import validate_user_id
from ...config import TeamsSettings
from ...db.database import Database
from ...db.models import Team, TeamAudit, TeamInvitation, TeamMember, User
from ...errors import BadInput, Conflict, Forbidden, NotFound
from ...store.owners import Owners
from ...store.values import iso

log = logging.getLogger(__name__)

ROLES = ("owner", "member", "reader")
#: Roles that may share into the team and remove what they shared.
WRITERS = ("owner", "member")
TEAM_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
#: The app a team's memories are written through (of the team's own user).
TEAM_APP = "team"
INVITE_PREFIX = "cct_"


@dataclass(frozen=True)
class Membership:
    """One team as one member sees it."""

    team_id: uuid.UUID
    name: str
    role: str
    #: The team's own user: its id (the memories' owner) and the name the store filters by.
    owner_pk: uuid.UUID
    owner_user_id: str

    def require(self, roles: tuple[str, ...], action: str) -> None:
        if self.role not in roles:
            raise Forbidden(f"a team {self.role} cannot {action} in team {self.name!r}")


def team_name(value: object) -> str:
    if not isinstance(value, str) or not TEAM_NAME.match(value):
        raise BadInput("a team name is 1-63 characters: lower-case letters, digits and '-', not first")
    return value


def role_name(value: object) -> str:
    if value not in ROLES:
        raise BadInput(f"role must be one of {', '.join(ROLES)}, got {value!r}")
    return str(value)


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def audit(
    session: Session,
    team_id: uuid.UUID,
    actor: str,
    action: str,
    memory_id: Any = None,
    detail: str | None = None,
) -> None:
    memory_key = uuid.UUID(str(memory_id)) if memory_id is not None else None
    session.add(TeamAudit(team_id=team_id, actor=actor, action=action, memory_id=memory_key, detail=detail))


_TEAM_USER = aliased(User, name="team_user")
_MEMBERSHIPS = (
    select(Team.id, Team.name, TeamMember.role, Team.owner_user_id, _TEAM_USER.user_id)
    .join(TeamMember, TeamMember.team_id == Team.id)
    .join(_TEAM_USER, _TEAM_USER.id == Team.owner_user_id)
)


class Teams:
    def __init__(
        self, database: Database, owners: Owners, settings: TeamsSettings, clock: Callable[[], datetime]
    ) -> None:
        self.database = database
        self.owners = owners
        self.settings = settings
        self.clock = clock
        # Reads are audited off the read's path by one writer, as the access log is; the audit
        # log's listing waits for what is queued (:meth:`flush`).
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="team-audit")

    def audit_later(self, rows: list[TeamAudit]) -> None:
        """Write these audit rows in the background (a search does not wait for a write)."""
        if rows:
            self.writer.submit(self._write, rows)

    def _write(self, rows: list[TeamAudit]) -> None:
        try:
            with self.database.session() as session:
                session.add_all(rows)
        except Exception:  # noqa: BLE001 - logged: a failed audit write must not stop the writer
            log.exception("could not write %d team audit rows", len(rows))

    def flush(self) -> None:
        self.writer.submit(lambda: None).result()

    def close(self) -> None:
        self.writer.shutdown(wait=True)

    # -- reading membership (every request: no cache) -------------------------------------
    def memberships(self, user_id: str, user_pk: uuid.UUID | None = None) -> list[Membership]:
        """The user's teams, read now: one indexed query (by the user's key when the caller
        has it: a hook's recall looked it up already)."""
        validate_user_id(user_id)
        member = user_pk or select(User.id).where(User.user_id == user_id).scalar_subquery()
        with self.database.engine.connect() as connection:
            rows = connection.execute(_MEMBERSHIPS.where(TeamMember.user_id == member).order_by(Team.name))
            return [Membership(*row) for row in rows]

    def membership(self, user_id: str, name: str) -> Membership:
        """The user's membership of the team; NotFound for a team they are not in (as for one
        that does not exist: a non-member learns nothing)."""
        name = team_name(name)
        for membership in self.memberships(user_id):
            if membership.name == name:
                return membership
        raise NotFound(f"team {name!r} not found")

    # -- changing it ----------------------------------------------------------------------
    def create(self, user_id: str, name: str) -> dict[str, Any]:
        name = team_name(name)
        try:
            with self.database.session() as session:
                creator = self.owners.user(session, user_id)
                own = User(user_id=f"team.{uuid.uuid4().hex}", name=f"team {name}", metadata_={"team": name})
                session.add(own)
                session.flush()
                team = Team(name=name, owner_user_id=own.id, created_by=user_id)
                session.add(team)
                session.flush()
                session.add(TeamMember(team_id=team.id, user_id=creator.id, role="owner"))
                audit(session, team.id, user_id, "create")
        except IntegrityError as exc:
            raise Conflict(f"a team named {name!r} exists already") from exc
        return {"name": name, "role": "owner"}

    def invite(self, user_id: str, name: str, invitee: str, role: str = "member") -> dict[str, Any]:
        """An invitation code for ``invitee`` (shown once; only its digest is stored)."""
        membership = self.membership(user_id, name)
        membership.require(("owner",), "invite")
        validate_user_id(invitee)
        role = role_name(role)
        code = INVITE_PREFIX + secrets.token_urlsafe(24)
        expires = self.clock() + timedelta(days=self.settings.invitation_days)
        with self.database.session() as session:
            # Serialise invitations of this team (two at once for one user would both stay open).
            session.execute(select(Team.id).where(Team.id == membership.team_id).with_for_update())
            already = session.scalar(
                select(func.count())
                .select_from(TeamMember)
                .join(User, User.id == TeamMember.user_id)
                .where(TeamMember.team_id == membership.team_id, User.user_id == invitee)
            )
            if already:
                raise Conflict(f"{invitee!r} is in team {membership.name!r} already")
            replaced = self._drop_open(session, membership.team_id, TeamInvitation.invitee == invitee)
            session.add(
                TeamInvitation(
                    team_id=membership.team_id,
                    invitee=invitee,
                    role=role,
                    code_hash=_digest(code),
                    invited_by=user_id,
                    expires_at=expires,
                )
            )
            detail = f"{invitee} as {role}" + (" (replaces the open one)" if replaced else "")
            audit(session, membership.team_id, user_id, "invite", detail=detail)
        return {
            "team": membership.name,
            "invitee": invitee,
            "role": role,
            "code": code,
            "expires_at": iso(expires),
        }

    def accept(self, user_id: str, code: str) -> dict[str, Any]:
        """The invited user joins with the code; anyone else, an old or a used code: NotFound."""
        validate_user_id(user_id)
        if not isinstance(code, str) or not code.startswith(INVITE_PREFIX):
            raise BadInput("an invitation code starts with 'cct_'")
        with self.database.session() as session:
            invitation = session.scalar(
                select(TeamInvitation).where(TeamInvitation.code_hash == _digest(code))
            )
            if (
                invitation is None
                or invitation.invitee != user_id
                or invitation.accepted_at is not None
                or invitation.expires_at < self.clock()
                or self._role_of(session, invitation.team_id, invitation.invited_by) != "owner"
            ):
                raise NotFound("no open invitation with this code for this user")
            user = self.owners.user(session, user_id)
            invitation.accepted_at = self.clock()
            team = session.get(Team, invitation.team_id)
            assert team is not None  # the foreign key cascades
            # Any other open code for this user (two issued at once) goes with this one's use.
            self._drop_open(
                session, team.id, TeamInvitation.invitee == user_id, TeamInvitation.id != invitation.id
            )
            existing = session.scalar(
                select(TeamMember).where(TeamMember.team_id == team.id, TeamMember.user_id == user.id)
            )
            if existing is None:
                session.add(TeamMember(team_id=team.id, user_id=user.id, role=invitation.role))
            audit(session, team.id, user_id, "join", detail=invitation.role)
            return {"team": team.name, "role": invitation.role}

    def members(self, user_id: str, name: str) -> list[dict[str, Any]]:
        membership = self.membership(user_id, name)
        with self.database.session() as session:
            rows = session.execute(
                select(User.user_id, TeamMember.role, TeamMember.added_at)
                .join(User, User.id == TeamMember.user_id)
                .where(TeamMember.team_id == membership.team_id)
                .order_by(TeamMember.added_at, User.user_id)
            )
            return [{"user_id": uid, "role": role, "added_at": iso(added)} for uid, role, added in rows]

    def set_role(self, user_id: str, name: str, member: str, role: str) -> dict[str, Any]:
        membership = self.membership(user_id, name)
        membership.require(("owner",), "change roles")
        role = role_name(role)
        with self.database.session() as session:
            row = self._member_row(session, membership, member)
            if row.role == "owner" and role != "owner":
                self._keep_an_owner(session, membership)
                self._drop_open(session, membership.team_id, TeamInvitation.invited_by == member)
            row.role = role
            audit(session, membership.team_id, user_id, "role", detail=f"{member} as {role}")
        return {"user_id": member, "role": role}

    def remove(self, user_id: str, name: str, member: str) -> None:
        """An owner removes a member, or a member leaves (``member`` is themselves). Effective
        at once: every read checks membership."""
        membership = self.membership(user_id, name)
        if member != user_id:
            membership.require(("owner",), "remove members")
        with self.database.session() as session:
            row = self._member_row(session, membership, member)
            if row.role == "owner":
                self._keep_an_owner(session, membership)
            session.execute(delete(TeamMember).where(TeamMember.id == row.id))
            # Their open codes die with them: those they hold, and those they issued.
            self._drop_open(
                session,
                membership.team_id,
                (TeamInvitation.invitee == member) | (TeamInvitation.invited_by == member),
            )
            audit(
                session,
                membership.team_id,
                user_id,
                "leave" if member == user_id else "remove",
                detail=member,
            )

    # -- open invitations -----------------------------------------------------------------
    def invitations(self, user_id: str, name: str) -> list[dict[str, Any]]:
        """The team's open invitations (not used, not expired), oldest first (owners)."""
        membership = self.membership(user_id, name)
        membership.require(("owner",), "list invitations")
        with self.database.session() as session:
            rows = session.scalars(
                select(TeamInvitation)
                .where(*self._open(membership.team_id))
                .order_by(TeamInvitation.created_at, TeamInvitation.invitee)
            )
            return [
                {
                    "id": str(row.id),
                    "invitee": row.invitee,
                    "role": row.role,
                    "invited_by": row.invited_by,
                    "created_at": iso(row.created_at),
                    "expires_at": iso(row.expires_at),
                }
                for row in rows
            ]

    def revoke(self, user_id: str, name: str, invitation: str) -> dict[str, Any]:
        """Revoke an open invitation, named by its id or by its invitee's user id (owners)."""
        membership = self.membership(user_id, name)
        membership.require(("owner",), "revoke invitations")
        if not isinstance(invitation, str) or not invitation:
            raise BadInput("name the invitation by its id or by the invited user's id")
        try:
            which = TeamInvitation.id == uuid.UUID(invitation)
        except ValueError:
            which = TeamInvitation.invitee == validate_user_id(invitation)
        with self.database.session() as session:
            row = session.scalar(select(TeamInvitation).where(which, *self._open(membership.team_id)))
            if row is None:
                raise NotFound(f"no open invitation {invitation!r} in team {membership.name!r}")
            session.delete(row)
            audit(session, membership.team_id, user_id, "revoke", detail=f"{row.invitee} as {row.role}")
            return {"team": membership.name, "invitee": row.invitee, "role": row.role, "revoked": True}

    def _open(self, team_id: uuid.UUID) -> tuple[Any, ...]:
        return (
            TeamInvitation.team_id == team_id,
            TeamInvitation.accepted_at.is_(None),
            TeamInvitation.expires_at >= self.clock(),
        )

    @staticmethod
    def _drop_open(session: Session, team_id: uuid.UUID, *which: Any) -> int:
        """Delete the team's unused invitations that match ``which``; how many there were."""
        result = session.execute(
            delete(TeamInvitation).where(
                TeamInvitation.team_id == team_id, TeamInvitation.accepted_at.is_(None), *which
            )
        )
        return int(getattr(result, "rowcount", 0) or 0)

    @staticmethod
    def _role_of(session: Session, team_id: uuid.UUID, user_id: str) -> str | None:
        """``user_id``'s role in the team now (None: not in it)."""
        return session.scalar(
            select(TeamMember.role)
            .join(User, User.id == TeamMember.user_id)
            .where(TeamMember.team_id == team_id, User.user_id == user_id)
        )

    def _member_row(self, session: Session, membership: Membership, member: str) -> TeamMember:
        validate_user_id(member)
        row = session.scalar(
            select(TeamMember)
            .join(User, User.id == TeamMember.user_id)
            .where(TeamMember.team_id == membership.team_id, User.user_id == member)
        )
        if row is None:
            raise NotFound(f"{member!r} is not in team {membership.name!r}")
        return row

    @staticmethod
    def _keep_an_owner(session: Session, membership: Membership) -> None:
        owners = session.scalar(
            select(func.count())
            .select_from(TeamMember)
            .where(TeamMember.team_id == membership.team_id, TeamMember.role == "owner")
        )
        if (owners or 0) <= 1:
            raise Conflict(f"team {membership.name!r} needs another owner first (it keeps at least one)")

    def audit_log(self, user_id: str, name: str, limit: int = 200) -> list[dict[str, Any]]:
        membership = self.membership(user_id, name)
        membership.require(("owner",), "read the audit log")
        self.flush()
        if not 1 <= limit <= 10_000:
            raise BadInput("limit must be from 1 to 10000")
        with self.database.session() as session:
            rows = session.scalars(
                select(TeamAudit)
                .where(TeamAudit.team_id == membership.team_id)
                .order_by(TeamAudit.at.desc(), TeamAudit.id)
                .limit(limit)
            )
            return [
                {
                    "at": iso(row.at),
                    "actor": row.actor,
                    "action": row.action,
                    "memory_id": str(row.memory_id) if row.memory_id else None,
                    "detail": row.detail,
                }
                for row in rows
            ]
