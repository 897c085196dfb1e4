"""keyword index for hybrid search

SQLite: an FTS5 table over memories.content (porter stemming), kept in step by triggers, so
every insert, edit and hard delete — whichever code path makes it — updates the index.
PostgreSQL: a GIN index on the English tsvector of the content, used by the same query shape.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

_DELETE_OLD = (
    "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content);"
)

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE memories_fts USING fts5("
            "content, content='memories', content_rowid='rowid', tokenize='porter unicode61')"
        )
        op.execute(
            "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN "
            "INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content); END"
        )
        op.execute(f"CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN {_DELETE_OLD} END")
        op.execute(
            f"CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN {_DELETE_OLD} "
            "INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content); END"
        )
        op.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    else:
        op.execute(
            "CREATE INDEX ix_memories_content_tsv ON memories USING gin (to_tsvector('english', content))"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("memories_fts_insert", "memories_fts_delete", "memories_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS memories_fts")
    else:
        op.execute("DROP INDEX IF EXISTS ix_memories_content_tsv")
