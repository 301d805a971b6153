"""Persisted semantic-cache entries (re-indexed into FAISS at start-up).

Revision ID: 0003
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out (as gateway.db.types.UTCDateTime renders) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "semantic_cache_entries",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("exact_key", sa.String(64), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("expires_at", UTC_DATETIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_semantic_cache_entries")),
    )
    op.create_index("ix_semantic_cache_entries_tenant_id", "semantic_cache_entries", ["tenant_id"])


def downgrade() -> None:
    op.drop_index("ix_semantic_cache_entries_tenant_id", table_name="semantic_cache_entries")
    op.drop_table("semantic_cache_entries")
