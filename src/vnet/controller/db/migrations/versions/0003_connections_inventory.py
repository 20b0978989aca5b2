"""per-direction ledger, connection names and numbers, history, inventory specs

Reservations gain their link direction; connections name two end hosts and carry their name,
number (the agents' piece id), shape and where they run; connection_event holds their
history; end_host, topology_settings and the `spec` columns let the inventory rebuild the
loaded Topology exactly. The new NOT NULL columns have no default: before this revision
nothing wrote connections or reservations (the service arrives with it).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 07:23:27.377245

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "topology_settings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_topology_settings_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_topology_settings")),
    )
    op.create_table(
        "connection_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("connection_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.String(length=1024), nullable=False),
        sa.ForeignKeyConstraint(
            ["connection_id"],
            ["connection.id"],
            name=op.f("fk_connection_event_connection_id_connection"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connection_event")),
    )
    with op.batch_alter_table("connection_event", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_connection_event_connection_id_at"),
            ["connection_id", "at"],
            unique=False,
        )

    op.create_table(
        "end_host",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("network_id", sa.Integer(), nullable=False),
        sa.Column("host_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["host_id"], ["host.id"], name=op.f("fk_end_host_host_id_host")),
        sa.ForeignKeyConstraint(
            ["network_id"],
            ["virtual_network.id"],
            name=op.f("fk_end_host_network_id_virtual_network"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_end_host_tenant_id_tenant")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_end_host")),
        sa.UniqueConstraint("name", name=op.f("uq_end_host_name")),
    )
    _alter()


def _alter() -> None:
    with op.batch_alter_table("connection", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name", sa.String(length=32), nullable=False))
        batch_op.add_column(sa.Column("number", sa.Integer(), nullable=False))
        batch_op.add_column(sa.Column("a", sa.String(length=64), nullable=False))
        batch_op.add_column(sa.Column("b", sa.String(length=64), nullable=False))
        batch_op.add_column(sa.Column("bidirectional", sa.Boolean(), nullable=False))
        batch_op.add_column(sa.Column("packet_size", sa.Integer(), nullable=False))
        batch_op.add_column(sa.Column("hops", sa.JSON(), nullable=False))
        batch_op.add_column(sa.Column("segments", sa.JSON(), nullable=False))
        batch_op.create_check_constraint(
            op.f("ck_connection_number_range"), "number >= 1 AND number <= 4095"
        )
        batch_op.create_check_constraint(
            op.f("ck_connection_packet_size_positive"), "packet_size > 0"
        )
        batch_op.create_index(
            "uq_connection_live_name",
            ["tenant_id", "name"],
            unique=True,
            sqlite_where=sa.text("state != 'released'"),
            postgresql_where=sa.text("state != 'released'"),
        )
        batch_op.create_index(
            "uq_connection_live_number",
            ["number"],
            unique=True,
            sqlite_where=sa.text("state != 'released'"),
            postgresql_where=sa.text("state != 'released'"),
        )
        batch_op.drop_constraint(
            batch_op.f("fk_connection_src_vr_id_virtual_router"), type_="foreignkey"
        )
        batch_op.drop_constraint(
            batch_op.f("fk_connection_dst_vr_id_virtual_router"), type_="foreignkey"
        )
        batch_op.drop_column("dst_prefix")
        batch_op.drop_column("dst_vr_id")
        batch_op.drop_column("src_prefix")
        batch_op.drop_column("src_vr_id")

    with op.batch_alter_table("link", schema=None) as batch_op:
        batch_op.add_column(sa.Column("spec", sa.JSON(), nullable=True))

    with op.batch_alter_table("reservation", schema=None) as batch_op:
        batch_op.add_column(sa.Column("forward", sa.Boolean(), nullable=False))
        batch_op.drop_constraint(
            batch_op.f("uq_reservation_connection_id_link_id_generation"), type_="unique"
        )
        batch_op.create_unique_constraint(
            batch_op.f("uq_reservation_connection_id_link_id_generation_forward"),
            ["connection_id", "link_id", "generation", "forward"],
        )

    with op.batch_alter_table("tenant", schema=None) as batch_op:
        batch_op.add_column(sa.Column("spec", sa.JSON(), nullable=True))

    with op.batch_alter_table("virtual_network", schema=None) as batch_op:
        batch_op.add_column(sa.Column("spec", sa.JSON(), nullable=True))
        batch_op.drop_constraint(batch_op.f("uq_virtual_network_tenant_id_name"), type_="unique")
        batch_op.create_unique_constraint(batch_op.f("uq_virtual_network_name"), ["name"])

    with op.batch_alter_table("virtual_router", schema=None) as batch_op:
        batch_op.add_column(sa.Column("spec", sa.JSON(), nullable=True))
        batch_op.alter_column("tenant_id", existing_type=sa.INTEGER(), nullable=True)
        batch_op.drop_constraint(batch_op.f("uq_virtual_router_tenant_id_name"), type_="unique")
        batch_op.create_unique_constraint(batch_op.f("uq_virtual_router_name"), ["name"])


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("virtual_router", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_virtual_router_name"), type_="unique")
        batch_op.create_unique_constraint(
            batch_op.f("uq_virtual_router_tenant_id_name"), ["tenant_id", "name"]
        )
        batch_op.alter_column("tenant_id", existing_type=sa.INTEGER(), nullable=False)
        batch_op.drop_column("spec")

    with op.batch_alter_table("virtual_network", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_virtual_network_name"), type_="unique")
        batch_op.create_unique_constraint(
            batch_op.f("uq_virtual_network_tenant_id_name"), ["tenant_id", "name"]
        )
        batch_op.drop_column("spec")

    with op.batch_alter_table("tenant", schema=None) as batch_op:
        batch_op.drop_column("spec")

    with op.batch_alter_table("reservation", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("uq_reservation_connection_id_link_id_generation_forward"), type_="unique"
        )
        batch_op.create_unique_constraint(
            batch_op.f("uq_reservation_connection_id_link_id_generation"),
            ["connection_id", "link_id", "generation"],
        )
        batch_op.drop_column("forward")

    with op.batch_alter_table("link", schema=None) as batch_op:
        batch_op.drop_column("spec")

    _alter_back()


def _alter_back() -> None:
    with op.batch_alter_table("connection", schema=None) as batch_op:
        batch_op.add_column(sa.Column("src_vr_id", sa.INTEGER(), nullable=False))
        batch_op.add_column(sa.Column("src_prefix", sa.VARCHAR(length=64), nullable=True))
        batch_op.add_column(sa.Column("dst_vr_id", sa.INTEGER(), nullable=False))
        batch_op.add_column(sa.Column("dst_prefix", sa.VARCHAR(length=64), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_connection_dst_vr_id_virtual_router"),
            "virtual_router",
            ["dst_vr_id"],
            ["id"],
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_connection_src_vr_id_virtual_router"),
            "virtual_router",
            ["src_vr_id"],
            ["id"],
        )
        batch_op.drop_constraint(op.f("ck_connection_packet_size_positive"), type_="check")
        batch_op.drop_constraint(op.f("ck_connection_number_range"), type_="check")
        batch_op.drop_index(
            "uq_connection_live_number",
            sqlite_where=sa.text("state != 'released'"),
            postgresql_where=sa.text("state != 'released'"),
        )
        batch_op.drop_index(
            "uq_connection_live_name",
            sqlite_where=sa.text("state != 'released'"),
            postgresql_where=sa.text("state != 'released'"),
        )
        batch_op.drop_column("segments")
        batch_op.drop_column("hops")
        batch_op.drop_column("packet_size")
        batch_op.drop_column("bidirectional")
        batch_op.drop_column("b")
        batch_op.drop_column("a")
        batch_op.drop_column("number")
        batch_op.drop_column("name")

    op.drop_table("end_host")
    with op.batch_alter_table("connection_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_connection_event_connection_id_at"))

    op.drop_table("connection_event")
    op.drop_table("topology_settings")
