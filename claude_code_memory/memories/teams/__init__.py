"""Teams: members with roles, invitations, memories shared by an explicit share, the audit log.

A team's memories are ordinary memories owned by the team's own user row (``team.<hex>``, a
name no token is issued for), written through the policy gate like any write, so the store,
the vector filters and the search pipeline need nothing new. Membership is read on every
request (no cache): a removed member reads nothing from the next request on.
"""
