"""SQL metadata: models, connection and migrations."""
