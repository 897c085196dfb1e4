CREATE TABLE users (
    id            BIGSERIAL PRIMARY KEY,
    email         CITEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
    id          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash  BYTEA NOT NULL,
    scopes      TEXT[] NOT NULL DEFAULT '{read}',
    expires_at  TIMESTAMPTZ
);

-- look up a token by its hash; never store the token itself
SELECT u.id, t.scopes FROM api_tokens t JOIN users u ON u.id = t.user_id
WHERE t.token_hash = digest($1, 'sha256') AND (t.expires_at IS NULL OR t.expires_at > now());

UPDATE users SET password_hash = :password_hash WHERE id = :user_id;
