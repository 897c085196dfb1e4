"""The policy applied before every write: redaction now; consent, caps and retention to come."""
