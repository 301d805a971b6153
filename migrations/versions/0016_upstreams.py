"""External upstreams: live overrides of a catalogue upstream (its key encrypted at rest), and who counted a
ledger line's tokens (an upstream's reported usage, or the gateway's own count).

Revision ID: 0016_upstreams
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001 (where the usage ledger is made), as every component's is: `upgrade heads` runs every branch.
revision = "0016_upstreams"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelled out (as gateway.db.types.UTCDateTime renders) so this file never changes with the code.
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "upstream_overrides",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("base_url", sa.String(2000), nullable=True),
        sa.Column("api_key_encrypted", sa.Text(), nullable=True),
        sa.Column("timeout_s", sa.Float(), nullable=True),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_by", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_upstream_overrides")),
    )
    with op.batch_alter_table("usage_ledger") as batch:
        batch.add_column(sa.Column("metered_by", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("usage_ledger") as batch:
        batch.drop_column("metered_by")
    op.drop_table("upstream_overrides")
