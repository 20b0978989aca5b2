"""removed hosts and links; degraded connections

A host or link removed through the API keeps its row (its reservations' history refers to
it, and the hosts' order numbers their underlay addresses): `removed` says when it left
the inventory. A connection that could not be moved off a failed link or host is
`degraded`.

Revision ID: 0005_reroute
Revises: 0004_detect
Create Date: 2026-11-26 23:05:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0005_reroute"
down_revision: str | Sequence[str] | None = "0004_detect"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BEFORE = ("requested", "established", "modifying", "released")
AFTER = (*BEFORE, "degraded")


def _state(values: tuple[str, ...]) -> sa.Enum:
    return sa.Enum(*values, name="state", native_enum=False, create_constraint=True, length=16)


def upgrade() -> None:
    """Upgrade schema."""
    for table in ("host", "link"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("removed", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("connection", schema=None) as batch_op:
        batch_op.alter_column(
            "state", existing_type=_state(BEFORE), type_=_state(AFTER), existing_nullable=False
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("connection", schema=None) as batch_op:
        batch_op.alter_column(
            "state", existing_type=_state(AFTER), type_=_state(BEFORE), existing_nullable=False
        )
    for table in ("link", "host"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("removed")
