"""Fault check: team invitations that outlive what they were for. Prints JSON.

    .venv/bin/python -m bench.faults.invitations [--rounds 5]

Starts a server (127.0.0.1, stopped by PID at the end) and, each round in a new team, replays
what an outside audit did with invitations, through REST with each user's own token:

- a second code to a user who holds one: the first is used (it must not work), the user joins
  with the second, is removed, and tries both again (neither may work);
- an owner's open codes (one for ``member``, one for ``owner``) after that owner is removed;
- another owner's codes after that owner is demoted to ``member``;
- a code revoked by its id and one revoked by the invited user's id;
- a member (not an owner) listing or revoking invitations.

``rejoined_after_removal``, ``codes_alive_after_issuer_removed``, ``codes_alive_after_demotion``,
``revoked_codes_accepted``, ``stale_codes_accepted`` and ``non_owner_reads_or_revokes`` must be 0.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.support.server import MemoryServer

TEAMS = "/api/v1/teams"


class User:
    def __init__(self, server: MemoryServer, name: str) -> None:
        self.id = f"{name}-{uuid.uuid4().hex[:6]}"
        self.client = httpx.Client(
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {server.make_token(self.id)}"},
            timeout=30,
        )

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.request(method, path, **kwargs)

    def invite(self, team: str, user: User, role: str = "member") -> str | None:
        answer = self.call("POST", f"{TEAMS}/{team}/invitations", json={"user_id": user.id, "role": role})
        return answer.json()["code"] if answer.status_code == 201 else None

    def accept(self, code: str | None) -> bool:
        return bool(code) and self.call("POST", f"{TEAMS}/invitations/accept", json={"code": code}).is_success


def one_round(server: MemoryServer) -> dict[str, int]:
    owner, second_owner, member, dave, erin, fay = (
        User(server, name) for name in ("owner", "owner2", "member", "dave", "erin", "fay")
    )
    counts = dict.fromkeys(
        (
            "rejoined_after_removal",
            "codes_alive_after_issuer_removed",
            "codes_alive_after_demotion",
            "revoked_codes_accepted",
            "stale_codes_accepted",
            "non_owner_reads_or_revokes",
        ),
        0,
    )
    team = f"fault-{uuid.uuid4().hex[:8]}"
    assert owner.call("POST", TEAMS, json={"name": team}).status_code == 201
    members = f"{TEAMS}/{team}/members"
    for user, role in ((second_owner, "owner"), (member, "member")):
        assert user.accept(owner.invite(team, user, role))

    # Two codes to one user: the first is stale at once; after a removal neither works.
    first = owner.invite(team, dave)
    second = owner.invite(team, dave, "owner")
    counts["stale_codes_accepted"] += dave.accept(first)
    assert dave.accept(second)
    assert owner.call("DELETE", f"{members}/{dave.id}").status_code == 204
    counts["rejoined_after_removal"] += dave.accept(first) + dave.accept(second)

    # The second owner's open codes, then that owner removed: the codes die with the role.
    codes = [second_owner.invite(team, erin), second_owner.invite(team, fay, "owner")]
    assert owner.call("DELETE", f"{members}/{second_owner.id}").status_code == 204
    counts["codes_alive_after_issuer_removed"] += erin.accept(codes[0]) + fay.accept(codes[1])

    # An owner demoted to member: its codes stop working too.
    assert second_owner.accept(owner.invite(team, second_owner, "owner"))
    codes = [second_owner.invite(team, erin), second_owner.invite(team, fay, "owner")]
    demoted = owner.call("PUT", f"{members}/{second_owner.id}", json={"role": "member"})
    assert demoted.is_success, demoted.text
    counts["codes_alive_after_demotion"] += erin.accept(codes[0]) + fay.accept(codes[1])

    # Revoked by id and by the invited user's id.
    invitations = f"{TEAMS}/{team}/invitations"
    by_id, by_user = owner.invite(team, erin), owner.invite(team, fay)
    listed = owner.call("GET", invitations).json()["invitations"]
    erin_invitation = next(i["id"] for i in listed if i["invitee"] == erin.id)
    assert owner.call("DELETE", f"{invitations}/{erin_invitation}").is_success
    assert owner.call("DELETE", f"{invitations}/{fay.id}").is_success
    counts["revoked_codes_accepted"] += erin.accept(by_id) + fay.accept(by_user)

    # Only owners list or revoke.
    owner.invite(team, dave)
    counts["non_owner_reads_or_revokes"] += member.call("GET", invitations).is_success
    counts["non_owner_reads_or_revokes"] += member.call("DELETE", f"{invitations}/{dave.id}").is_success
    for user in (owner, second_owner, member, dave, erin, fay):
        user.client.close()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    totals: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="fault-invitations-") as work, MemoryServer(Path(work)) as server:
        for _ in range(args.rounds):
            for key, value in one_round(server).items():
                totals[key] = totals.get(key, 0) + value
    print(json.dumps({"rounds": args.rounds, **totals}, indent=2))


if __name__ == "__main__":
    main()
