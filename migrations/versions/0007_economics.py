"""MaaS economics: metered engine time per ledger row, replica-minutes per version, replica-hour prices.

Revision ID: 0007_economics
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where usage_ledger is made), as 0003-0005 are: `upgrade heads` runs every branch.
revision = "0007_economics"
down_revision = "0001"
branch_labels = None
depends_on = None

# The same DDL as gateway.db.types, spelled out so this file never changes with the code.
MONEY = sa.Numeric(20, 10).with_variant(sa.BigInteger(), "sqlite")
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("usage_ledger") as batch:
        batch.add_column(sa.Column("engine_ms", sa.Float(), nullable=True))
    op.create_table(
        "version_costs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("version", sa.String(200), nullable=False),
        sa.Column("per_replica_hour", MONEY, nullable=False),
        sa.Column("hardware", sa.String(200), nullable=False),
        sa.Column("effective_from", UTC_DATETIME, nullable=False),
        sa.Column("set_by", sa.String(64), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_version_costs"),
        sa.UniqueConstraint("version", "effective_from", name="uq_version_costs_version_effective_from"),
    )
    op.create_index("ix_version_costs_version", "version_costs", ["version"])
    op.create_table(
        "replica_minutes",
        sa.Column("version", sa.String(200), nullable=False),
        sa.Column("pool", sa.String(200), nullable=False),
        sa.Column("minute", UTC_DATETIME, nullable=False),
        sa.Column("replicas", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("version", "pool", "minute", name="pk_replica_minutes"),
    )
    op.create_index("ix_replica_minutes_minute", "replica_minutes", ["minute"])


def downgrade() -> None:
    op.drop_index("ix_replica_minutes_minute", table_name="replica_minutes")
    op.drop_table("replica_minutes")
    op.drop_index("ix_version_costs_version", table_name="version_costs")
    op.drop_table("version_costs")
    with op.batch_alter_table("usage_ledger") as batch:
        batch.drop_column("engine_ms")
