"""Versioned prompts: prompts, prompt_versions, prompt_labels (+ their move history), and the ledger's
prompt_version column ("name:N") so bills can group by it.

Revision ID: 0011_prompts
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where usage_ledger is made), as every component's is: `upgrade heads` runs them all.
revision = "0011_prompts"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out (as gateway.db.types renders it) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "prompts",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_prompts"),
    )
    op.create_table(
        "prompt_versions",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("messages", sa.JSON(), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["name"], ["prompts.name"], name="fk_prompt_versions_name_prompts"),
        sa.PrimaryKeyConstraint("name", "version", name="pk_prompt_versions"),
    )
    op.create_table(
        "prompt_labels",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("label", sa.String(100), nullable=False),
        sa.Column("weights", sa.JSON(), nullable=False),
        sa.Column("previous", sa.JSON(), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["name"], ["prompts.name"], name="fk_prompt_labels_name_prompts"),
        sa.PrimaryKeyConstraint("name", "label", name="pk_prompt_labels"),
    )
    op.create_table(
        "prompt_label_moves",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("label", sa.String(100), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("weights", sa.JSON(), nullable=False),
        sa.Column("previous", sa.JSON(), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_prompt_label_moves"),
    )
    op.create_index("ix_prompt_label_moves_name_label", "prompt_label_moves", ["name", "label"])
    with op.batch_alter_table("usage_ledger") as batch:
        batch.add_column(sa.Column("prompt_version", sa.String(120), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("usage_ledger") as batch:
        batch.drop_column("prompt_version")
    op.drop_index("ix_prompt_label_moves_name_label", table_name="prompt_label_moves")
    op.drop_table("prompt_label_moves")
    op.drop_table("prompt_labels")
    op.drop_table("prompt_versions")
    op.drop_table("prompts")
