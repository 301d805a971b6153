"""Webhook secrets encrypted at rest: webhooks.secret becomes Text (a Fernet token is longer than the secret),
with secret_sealed (existing rows: False, still plaintext) and secret_hint (the last 4 characters the API shows).

The migration cannot know the gateway's secret key, so it seals nothing: every gateway seals the plaintext rows it
finds (and sets their hint) at start-up, before it serves (gateway.alerts.sealing), and signs with both forms.

Revision ID: 0017_webhook_secret_sealed
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# A branch off 0001, as every component's is: `upgrade heads` runs them all. It alters 0010_webhooks' table, so it
# depends on that branch without being on it.
revision = "0017_webhook_secret_sealed"
down_revision = "0001"
branch_labels = None
depends_on = "0010_webhooks"


def upgrade() -> None:
    with op.batch_alter_table("webhooks") as batch:
        batch.alter_column("secret", type_=sa.Text(), existing_type=sa.String(200), existing_nullable=False)
        batch.add_column(sa.Column("secret_sealed", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("secret_hint", sa.String(16), nullable=False, server_default=""))


def downgrade() -> None:
    # Sealed secrets cannot come back down as plaintext without the key: refuse rather than lose them.
    conn = op.get_bind()
    sealed = conn.execute(sa.text("SELECT count(*) FROM webhooks WHERE secret_sealed")).scalar_one()
    if sealed:
        raise RuntimeError(f"{sealed} webhook secret(s) are sealed; delete those webhooks (or re-create them after "
                           "the downgrade) before going below 0017_webhook_secret_sealed")
    with op.batch_alter_table("webhooks") as batch:
        batch.drop_column("secret_hint")
        batch.drop_column("secret_sealed")
        batch.alter_column("secret", type_=sa.String(200), existing_type=sa.Text(), existing_nullable=False)
