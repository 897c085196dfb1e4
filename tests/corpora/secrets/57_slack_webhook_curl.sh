---
kinds: slack_webhook
---
#!/bin/sh
# notify.sh — post the deploy result to #deploys
STATUS="$1"
curl -s -X POST -H 'Content-type: application/json' \
  --data "{\"text\":\"Deploy finished: ${STATUS}\"}" \
  {{slack_webhook}}
