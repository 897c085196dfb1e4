---
kinds: basic_auth
---
# Jenkins: trigger the nightly job by hand
curl -X POST -u deploy:{{url_password}} https://ci.acme.internal/job/nightly/build?delay=0sec

# the same request as the CI plugin sends it
curl -X POST https://ci.acme.internal/job/nightly/build \
  -H "Authorization: Basic {{basic_auth}}"
