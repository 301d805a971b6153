"""MaaS plans: per-tenant and per-key output caps, volume tiers on prices, and each request's clamp.

Revision ID: 0016_plans
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where these four tables are made), as 0005 is: `upgrade heads` runs every branch.
revision = "0016_plans"
down_revision = "0001"
branch_labels = None
depends_on = None

CAPS = ("max_output_tokens", "default_max_tokens")


def upgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        for name in CAPS:
            batch.add_column(sa.Column(name, sa.Integer(), nullable=True))
        batch.add_column(sa.Column("output_cap_mode", sa.String(8), nullable=False, server_default="reject"))
    with op.batch_alter_table("api_keys") as batch:
        for name in CAPS:
            batch.add_column(sa.Column(name, sa.Integer(), nullable=True))
    with op.batch_alter_table("prices") as batch:
        batch.add_column(sa.Column("tiers", sa.JSON(), nullable=True))
    with op.batch_alter_table("usage_ledger") as batch:
        batch.add_column(sa.Column("max_tokens_asked", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("max_tokens_cap", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("usage_ledger") as batch:
        batch.drop_column("max_tokens_cap")
        batch.drop_column("max_tokens_asked")
    with op.batch_alter_table("prices") as batch:
        batch.drop_column("tiers")
    with op.batch_alter_table("api_keys") as batch:
        for name in CAPS:
            batch.drop_column(name)
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("output_cap_mode")
        for name in CAPS:
            batch.drop_column(name)
