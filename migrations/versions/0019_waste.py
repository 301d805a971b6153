"""The waste report's prompt hashing: per tenant, month and prefix (system prompt or whole prompt), its tokens,
how often it came and was reused, when first and last, and a short preview.

Revision ID: 0019_waste
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where tenants is made), as every component's is: `upgrade heads` runs them all.
revision = "0019_waste"
down_revision = "0001"
branch_labels = None
depends_on = None

# The same DDL as gateway.db.types, spelled out so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "prompt_prefixes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("month", sa.String(7), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("times_seen", sa.Integer(), nullable=False),
        sa.Column("times_reused", sa.Integer(), nullable=False),
        sa.Column("first_seen", UTC_DATETIME, nullable=False),
        sa.Column("last_seen", UTC_DATETIME, nullable=False),
        sa.Column("preview", sa.String(80), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name="fk_prompt_prefixes_tenant_id_tenants"),
        sa.PrimaryKeyConstraint("id", name="pk_prompt_prefixes"),
        sa.UniqueConstraint("tenant_id", "month", "digest", name="uq_prompt_prefixes_tenant_id"),
    )


def downgrade() -> None:
    op.drop_table("prompt_prefixes")
