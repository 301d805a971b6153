"""Stored Responses API answers (previous_response_id, GET/DELETE /v1/responses/{id}).

Revision ID: 0004_responses
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where tenants are made), as 0003 is: `upgrade heads` runs every branch.
revision = "0004_responses"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out (as gateway.db.types.UTCDateTime renders) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "stored_responses",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("response", sa.LargeBinary(), nullable=False),
        sa.Column("context", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE",
                                name="fk_stored_responses_tenant_id_tenants"),
        sa.PrimaryKeyConstraint("id", name="pk_stored_responses"),
    )
    op.create_index("ix_stored_responses_tenant_created", "stored_responses", ["tenant_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_stored_responses_tenant_created", table_name="stored_responses")
    op.drop_table("stored_responses")
