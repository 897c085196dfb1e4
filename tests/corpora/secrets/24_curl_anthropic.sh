---
kinds: anthropic_api_key
---
curl https://api.anthropic.com/v1/messages \
     --header "x-api-key: {{anthropic_api_key}}" \
     --header "anthropic-version: 2023-06-01" \
     --header "content-type: application/json" \
     --data '{"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "Hello, world"}]}'
