"""The library before Alembic (schema version 1): info, runs, measurements, profiles, each created if missing.

Revision ID: 0001
Revises:
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _missing(name: str) -> bool:
    return name not in sa.inspect(op.get_bind()).get_table_names()


def upgrade() -> None:
    if _missing("specviz_info"):
        op.create_table(
            "specviz_info",
            sa.Column("key", sa.String(64), primary_key=True),
            sa.Column("value", sa.Text, nullable=False),
        )
    if _missing("runs"):
        op.create_table(
            "runs",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("label", sa.String(200), nullable=False),
            sa.Column("source", sa.Text, nullable=False),
            sa.Column("uploaded_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("note", sa.Text, nullable=False),
            sa.Column("schema_version", sa.Integer, nullable=False),
            sa.Column("n_rows", sa.Integer, nullable=False),
            sa.Column("dtypes", sa.Text, nullable=False),
            sa.Column("report", sa.Text, nullable=False),
            sqlite_autoincrement=True,
        )
    if _missing("measurements"):
        op.create_table(
            "measurements",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
            sa.Column("position", sa.Integer, nullable=False),
            sa.Column("file_row", sa.BigInteger),
            sa.Column("label", sa.Text),
            sa.Column("k", sa.BigInteger),
            sa.CheckConstraint("k >= 1", name="k_at_least_1"),
        )
    if _missing("profiles"):
        op.create_table(
            "profiles",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("name", sa.String(80), nullable=False, unique=True),
            sa.Column("terms", sa.Text, nullable=False),
            sa.Column("base_engine", sa.String(64), nullable=False),
            sa.Column("target", sa.Text, nullable=False),
            sa.Column("gpu", sa.Text, nullable=False),
            sa.Column("n_rows", sa.Integer, nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sqlite_autoincrement=True,
        )


def downgrade() -> None:
    for name in ("profiles", "measurements", "runs", "specviz_info"):
        op.drop_table(name)
