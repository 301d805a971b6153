"""Tenant-owned prompts: prompts.tenant_id (NULL: shared by every tenant, as before).

Revision ID: 0016_prompt_owner
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001, as every component's is: `upgrade heads` runs them all. It alters 0011_prompts' table
# and points at 0001's tenants, so it depends on that branch without being on it.
revision = "0016_prompt_owner"
down_revision = "0001"
branch_labels = None
depends_on = "0011_prompts"


def upgrade() -> None:
    with op.batch_alter_table("prompts") as batch:
        batch.add_column(sa.Column("tenant_id", sa.String(36), nullable=True))
        batch.create_foreign_key("fk_prompts_tenant_id_tenants", "tenants", ["tenant_id"], ["id"])
        batch.create_index("ix_prompts_tenant_id", ["tenant_id"])


def downgrade() -> None:
    with op.batch_alter_table("prompts") as batch:
        batch.drop_index("ix_prompts_tenant_id")
        batch.drop_constraint("fk_prompts_tenant_id_tenants", type_="foreignkey")
        batch.drop_column("tenant_id")
