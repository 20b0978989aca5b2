"""running totals of what is held per link direction

Revision ID: 0006_scale
Revises: 0005_reroute

The index ix_connection_live_ends on the live connections' (tenant, a, b); and
`link.held_forward_bps` and `link.held_reverse_bps`: what the reservations not yet released
hold per direction, kept by db.ledger in the same transaction as the rows, so that planning
reads one row per link instead of summing every live reservation. Filled here from the rows.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_scale"
down_revision: str | Sequence[str] | None = "0005_reroute"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = "state != 'released'"
COLUMNS = (("held_forward_bps", True), ("held_reverse_bps", False))


def upgrade() -> None:
    with op.batch_alter_table("link") as batch_op:
        for column, _ in COLUMNS:
            batch_op.add_column(
                sa.Column(column, sa.BigInteger(), nullable=False, server_default="0")
            )
    # the live connections between two end hosts: a new connection's flow check reads these
    # instead of every connection the tenant ever had
    op.create_index(
        "ix_connection_live_ends",
        "connection",
        ["tenant_id", "a", "b"],
        sqlite_where=sa.text(LIVE),
        postgresql_where=sa.text(LIVE),
    )
    for column, forward in COLUMNS:
        op.execute(
            sa.text(
                f"UPDATE link SET {column} = (SELECT COALESCE(SUM(r.bps), 0) FROM reservation r"
                " WHERE r.link_id = link.id AND r.forward = :forward AND r.released IS NULL)"
            ).bindparams(forward=forward)
        )


def downgrade() -> None:
    op.drop_index("ix_connection_live_ends", table_name="connection")
    with op.batch_alter_table("link") as batch_op:
        for column, _ in COLUMNS:
            batch_op.drop_column(column)
