"""Reserved throughput: a tenant's reservations on models, and each usage row's tokens its reservation covered.

Revision ID: 0018_reservations
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where tenants and usage_ledger are made), as the others are: `upgrade heads` runs every branch.
revision = "0018_reservations"
down_revision = "0001"
branch_labels = None
depends_on = None

MONEY = sa.Numeric(20, 10).with_variant(sa.BigInteger(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "reservations",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("output_tokens_per_s", sa.Float(), nullable=False),
        sa.Column("monthly_fee", MONEY, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE",
                                name="fk_reservations_tenant_id_tenants"),
    )
    op.create_index("ix_reservations_tenant_id", "reservations", ["tenant_id"])
    with op.batch_alter_table("usage_ledger") as batch:
        batch.add_column(sa.Column("reserved_tokens", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("usage_ledger") as batch:
        batch.drop_column("reserved_tokens")
    op.drop_index("ix_reservations_tenant_id", "reservations")
    op.drop_table("reservations")
