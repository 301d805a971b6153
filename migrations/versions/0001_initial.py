"""Tenants, API keys, prices and the usage ledger.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The same DDL as gateway.db.types, spelled out so this file never changes with the code.
MONEY = sa.Numeric(20, 10).with_variant(sa.BigInteger(), "sqlite")
UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "tenants",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("rpm", sa.Integer(), nullable=True),
        sa.Column("tpm", sa.Integer(), nullable=True),
        sa.Column("monthly_token_budget", sa.BigInteger(), nullable=True),
        sa.Column("cache_enabled", sa.Boolean(), nullable=False),
        sa.Column("cache_allow_sampling", sa.Boolean(), nullable=False),
        sa.Column("cache_threshold", sa.Float(), nullable=True),
        sa.Column("cache_ttl_s", sa.Integer(), nullable=True),
        sa.Column("cache_max_entries", sa.Integer(), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tenants"),
        sa.UniqueConstraint("name", name="uq_tenants_name"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("models", sa.JSON(), nullable=True),
        sa.Column("rpm", sa.Integer(), nullable=True),
        sa.Column("tpm", sa.Integer(), nullable=True),
        sa.Column("expires_at", UTC_DATETIME, nullable=True),
        sa.Column("revoked_at", UTC_DATETIME, nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("last_used_at", UTC_DATETIME, nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE",
                                name="fk_api_keys_tenant_id_tenants"),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    op.create_index("ix_api_keys_tenant_id", "api_keys", ["tenant_id"])
    op.create_table(
        "prices",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("input_per_million", MONEY, nullable=False),
        sa.Column("output_per_million", MONEY, nullable=False),
        sa.Column("cached_input_per_million", MONEY, nullable=False),
        sa.Column("cached_output_per_million", MONEY, nullable=False),
        sa.Column("effective_from", UTC_DATETIME, nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_prices"),
        sa.UniqueConstraint("model", "effective_from", name="uq_prices_model_effective_from"),
    )
    op.create_index("ix_prices_model", "prices", ["model"])
    op.create_table(
        "usage_ledger",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True,
                  nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(36), nullable=False),
        sa.Column("key_id", sa.String(36), nullable=True),
        sa.Column("endpoint", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("version", sa.String(200), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cached_tokens", sa.Integer(), nullable=False),
        sa.Column("cache_hit", sa.Boolean(), nullable=False),
        sa.Column("cost", MONEY, nullable=True),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("ttft_ms", sa.Float(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name="fk_usage_ledger_tenant_id_tenants"),
        sa.PrimaryKeyConstraint("id", name="pk_usage_ledger"),
        sa.UniqueConstraint("request_id", name="uq_usage_ledger_request_id"),
    )
    op.create_index("ix_usage_ledger_created_at", "usage_ledger", ["created_at"])
    op.create_index("ix_usage_ledger_tenant_created", "usage_ledger", ["tenant_id", "created_at"])


def downgrade() -> None:
    op.drop_table("usage_ledger")
    op.drop_table("prices")
    op.drop_table("api_keys")
    op.drop_table("tenants")
