"""A tenant's scheduling plan: its priority and fair-share weight in the engines' queues.

Revision ID: 0005_scheduling
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where tenants are made), as 0003 and 0004 are: `upgrade heads` runs every branch.
revision = "0005_scheduling"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("priority", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("share_weight", sa.Float(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("share_weight")
        batch.drop_column("priority")
