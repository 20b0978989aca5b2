"""agents of hosts added through the API

A host added through the API may come with how to reach its agent (address, port, user,
the paths of its secret files, its pinned host key): kept in `agent_access` so that the
controller reaches that agent again after a restart. Hosts whose agent the configuration
names keep it null.

Revision ID: 0007_host_agents
Revises: 0006_scale
Create Date: 2026-11-27 02:40:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0007_host_agents"
down_revision: str | Sequence[str] | None = "0006_scale"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table("host", schema=None) as batch_op:
        batch_op.add_column(sa.Column("agent_access", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table("host", schema=None) as batch_op:
        batch_op.drop_column("agent_access")
