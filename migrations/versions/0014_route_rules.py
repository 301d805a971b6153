"""Routing rules on an alias (route_rules) and a tenant's plan, which rules may match on.

Revision ID: 0014_route_rules
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where tenants are made), as every component's is: `upgrade heads` runs every branch.
revision = "0014_route_rules"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out (as gateway.db.types.UTCDateTime renders) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "route_rules",
        sa.Column("alias", sa.String(200), nullable=False),
        sa.Column("rules", sa.JSON(), nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_by", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("alias", name=op.f("pk_route_rules")),
    )
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("plan", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("plan")
    op.drop_table("route_rules")
