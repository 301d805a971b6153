"""The Batch API: files, batches and their finished lines; usage rows say whether they were batch work.

Revision ID: 0006_batches
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where tenants and the ledger are made), as 0003-0005 are: `upgrade heads` runs every branch.
revision = "0006_batches"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out (as gateway.db.types.UTCDateTime renders) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "batch_files",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("filename", sa.String(256), nullable=False),
        sa.Column("purpose", sa.String(32), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE",
                                name="fk_batch_files_tenant_id_tenants"),
        sa.PrimaryKeyConstraint("id", name="pk_batch_files"),
    )
    op.create_index("ix_batch_files_tenant_created", "batch_files", ["tenant_id", "created_at"])
    op.create_table(
        "batches",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("key_id", sa.String(36), nullable=False),
        sa.Column("endpoint", sa.String(64), nullable=False),
        sa.Column("input_file_id", sa.String(64), nullable=False),
        sa.Column("completion_window", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("errors", sa.LargeBinary(), nullable=True),
        sa.Column("metadata_json", sa.LargeBinary(), nullable=True),
        sa.Column("output_file_id", sa.String(64), nullable=True),
        sa.Column("error_file_id", sa.String(64), nullable=True),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("completed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("expires_at", UTC_DATETIME, nullable=False),
        *(sa.Column(name, UTC_DATETIME, nullable=True) for name in (
            "in_progress_at", "finalizing_at", "completed_at", "failed_at", "expired_at", "cancelling_at",
            "cancelled_at")),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", UTC_DATETIME, nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE",
                                name="fk_batches_tenant_id_tenants"),
        sa.PrimaryKeyConstraint("id", name="pk_batches"),
    )
    op.create_index("ix_batches_tenant_created", "batches", ["tenant_id", "created_at"])
    op.create_index("ix_batches_status", "batches", ["status"])
    op.create_table(
        "batch_lines",
        sa.Column("batch_id", sa.String(64), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("output", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["batches.id"], ondelete="CASCADE",
                                name="fk_batch_lines_batch_id_batches"),
        sa.PrimaryKeyConstraint("batch_id", "line", name="pk_batch_lines"),
    )
    # Additive, so another branch's ledger columns merge beside it.
    with op.batch_alter_table("usage_ledger") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="interactive"))


def downgrade() -> None:
    with op.batch_alter_table("usage_ledger") as batch:
        batch.drop_column("kind")
    op.drop_table("batch_lines")
    op.drop_index("ix_batches_status", table_name="batches")
    op.drop_index("ix_batches_tenant_created", table_name="batches")
    op.drop_table("batches")
    op.drop_index("ix_batch_files_tenant_created", table_name="batch_files")
    op.drop_table("batch_files")
