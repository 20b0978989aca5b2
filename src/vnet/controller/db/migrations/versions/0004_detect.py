"""element_state: the operational state of each host and link

Revision ID: 0004_detect
Revises: 0003
Create Date: 2026-11-26 23:30:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0004_detect"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "element_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "up",
                "down",
                "unreachable",
                "unknown",
                name="oper_state",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.String(length=255), nullable=False),
        sa.Column("reported_by", sa.String(length=64), nullable=False),
        sa.CheckConstraint("kind IN ('host', 'link')", name=op.f("ck_element_state_kind_known")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_element_state")),
        sa.UniqueConstraint("kind", "name", name=op.f("uq_element_state_kind_name")),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table("element_state")
