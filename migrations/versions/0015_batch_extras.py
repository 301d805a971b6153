"""Batch API completeness: a batch's token usage, file expiry, and a tenant's file storage quota.

Revision ID: 0015_batch_extras
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001, as every component's is: `upgrade heads` runs every branch. It alters tables made in
# 0006_batches, so it depends on that branch without being on it.
revision = "0015_batch_extras"
down_revision = "0001"
branch_labels = None
depends_on = "0006_batches"

# Spelled out (as gateway.db.types.UTCDateTime renders) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)
USAGE = ("input_tokens", "cached_tokens", "output_tokens")


def upgrade() -> None:
    with op.batch_alter_table("batches") as batch:
        for name in USAGE:
            batch.add_column(sa.Column(name, sa.BigInteger(), nullable=False, server_default="0"))
    with op.batch_alter_table("batch_files") as batch:
        batch.add_column(sa.Column("expires_at", UTC_DATETIME, nullable=True))
    op.create_index("ix_batch_files_expires_at", "batch_files", ["expires_at"])
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("files_max_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("files_max_bytes")
    op.drop_index("ix_batch_files_expires_at", table_name="batch_files")
    with op.batch_alter_table("batch_files") as batch:
        batch.drop_column("expires_at")
    with op.batch_alter_table("batches") as batch:
        for name in USAGE:
            batch.drop_column(name)
