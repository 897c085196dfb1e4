#!/usr/bin/env bash
# Usage: TOKEN=... ./api.sh /v1/memories
set -euo pipefail
: "${TOKEN:?export TOKEN first}"
BASE="${BASE:-http://127.0.0.1:8765}"

curl -fsS "$BASE$1" -H "Authorization: Bearer $TOKEN" -H "Accept: application/json"
curl -fsS -u "$API_USER:$API_PASSWORD" "$BASE/admin/health"
curl -fsS "$BASE/api/v1/memories/?user_id=$USER&page=1&size=50" \
  -H "Authorization: Bearer ${CCMEM_TOKEN}"
