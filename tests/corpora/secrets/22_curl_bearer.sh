---
kinds: bearer_token
---
#!/usr/bin/env bash
set -euo pipefail

# Quick smoke test against staging
curl -sS -X POST https://staging.api.acme.dev/v1/jobs \
  -H 'Content-Type: application/json' \
  -H 'Authorization: Bearer {{opaque_token}}' \
  -d '{"type": "reindex", "priority": "low"}'
