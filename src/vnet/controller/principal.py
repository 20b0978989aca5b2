"""Who is asking: the role and tenant an API token stands for."""

from __future__ import annotations

from dataclasses import dataclass

from vnet.controller.errors import Forbidden
from vnet.model.controller_api import Role


@dataclass(frozen=True)
class Principal:
    role: Role
    tenant: str | None = None  # set for role "tenant"

    @property
    def is_provider(self) -> bool:
        return self.role == "provider"

    def may_see(self, tenant: str | None) -> bool:
        return self.is_provider or (tenant is not None and tenant == self.tenant)

    def require_tenant(self, tenant: str) -> None:
        """Forbidden unless this principal may act for `tenant`."""
        if not self.may_see(tenant):
            raise Forbidden(f"tenant {self.tenant!r} may not act on tenant {tenant!r}")

    def require_provider(self) -> None:
        if not self.is_provider:
            raise Forbidden("only a provider administrator may do this")


PROVIDER = Principal("provider")
