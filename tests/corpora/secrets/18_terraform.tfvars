---
kinds: password_assignment github_token
---
project_id     = "acme-prod-4471"
region         = "europe-west3"
db_tier        = "db-custom-2-7680"
db_password    = "{{password}}"
github_token   = "{{github_token}}"
allowed_cidrs  = ["0.0.0.0/0"]
