"""Route overrides (alias -> weights, fallbacks) and the append-only route audit log.

Revision ID: 0002
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out (as gateway.db.types.UTCDateTime renders) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "route_overrides",
        sa.Column("alias", sa.String(200), nullable=False),
        sa.Column("weights", sa.JSON(), nullable=False),
        sa.Column("fallbacks", sa.JSON(), nullable=False),
        sa.Column("stable", sa.String(200), nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_by", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("alias", name=op.f("pk_route_overrides")),
    )
    op.create_table(
        "route_audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", UTC_DATETIME, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("alias", sa.String(200), nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_route_audit")),
    )
    op.create_index(op.f("ix_route_audit_at"), "route_audit", ["at"])
    op.create_index(op.f("ix_route_audit_alias"), "route_audit", ["alias"])


def downgrade() -> None:
    op.drop_index(op.f("ix_route_audit_alias"), table_name="route_audit")
    op.drop_index(op.f("ix_route_audit_at"), table_name="route_audit")
    op.drop_table("route_audit")
    op.drop_table("route_overrides")
