"""Capture quality at the source: junk captures never reach the consent queue, and are counted.

With ``hygiene.filter_captures`` on, or a user's standing hygiene rule for junk, a captured turn
whose every message is junk (``policy/hygiene_rules.py`` ``junk_capture``: acknowledgements,
boilerplate, tool noise, fragments) is dropped before the policy gate stores it as pending. The
text is not kept; only a count per user and reason (``capture_filter_counts``), which
``GET /api/v1/hygiene`` reports.
"""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ...db.models import CaptureFilterCount, HygieneRule, User, utcnow
from ...policy.hygiene_rules import junk_capture

#: The write channels the filter looks at: what capture brings in unasked.
FILTERED_CHANNELS = frozenset({"capture"})


class CaptureFilter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def check(self, session: Session, user_pk: uuid.UUID, text: str, channel: str) -> str | None:
        """The reason to drop this write (and count it), or None to let it through."""
        if channel not in FILTERED_CHANNELS:
            return None
        if not self.enabled and not self._rule_says_so(session, user_pk):
            return None
        reason = junk_capture(text)
        if reason is not None:
            row = session.get(CaptureFilterCount, (user_pk, reason))
            if row is None:
                session.add(CaptureFilterCount(user_id=user_pk, reason=reason, count=1, last_at=utcnow()))
            else:
                row.count += 1
                row.last_at = utcnow()
        return reason

    @staticmethod
    def _rule_says_so(session: Session, user_pk: uuid.UUID) -> bool:
        return (
            session.scalar(
                select(HygieneRule.id).where(HygieneRule.user_id == user_pk, HygieneRule.kind == "junk")
            )
            is not None
        )

    @staticmethod
    def counts(session: Session, user_id: str | None) -> dict[str, int]:
        """Filtered captures by reason: one user's, or everyone's (None)."""
        query = select(CaptureFilterCount.reason, func.sum(CaptureFilterCount.count)).group_by(
            CaptureFilterCount.reason
        )
        if user_id is not None:
            query = query.join(User, CaptureFilterCount.user_id == User.id).where(User.user_id == user_id)
        return {reason: int(total or 0) for reason, total in session.execute(query)}
