"""Owners of runs and profiles ("" before this revision: admin only), the trash, and the audit trail.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("created_by", sa.Text, nullable=False, server_default=""))
        batch.add_column(sa.Column("trashed_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("trashed_by", sa.Text, nullable=True))
    with op.batch_alter_table("profiles") as batch:
        batch.add_column(sa.Column("created_by", sa.Text, nullable=False, server_default=""))
    op.create_index("ix_runs_trashed_at", "runs", ["trashed_at"])
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("who", sa.Text, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("runs", sa.Text, nullable=False),
        sa.Column("page", sa.Text, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("audit")
    op.drop_index("ix_runs_trashed_at", "runs")
    with op.batch_alter_table("profiles") as batch:
        batch.drop_column("created_by")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("trashed_by")
        batch.drop_column("trashed_at")
        batch.drop_column("created_by")
