"""API tokens: who a request comes from (issue 12, part 4).

A token is 32 random bytes (URL-safe base64, prefixed `vnet_` so a leaked one is easy to
recognise); the database keeps only its SHA-256 (ApiToken), so a copy of the database
authenticates nobody. A request proves itself with `Authorization: Bearer <token>`: the
header's token is hashed and looked up by that hash.

Why no constant-time comparison: the secret is never compared. The lookup compares hashes,
and timing that comparison tells an attacker at most how many leading hex digits of the
SHA-256 of their own guess match a stored hash; steering a guess to match more digits needs
SHA-256 preimages, so the timing leaks nothing usable (the reason `hmac.compare_digest` exists
is a comparison against the secret itself).

The API takes tokens only from that header, never from a cookie, so another site cannot make
a visitor's browser act on the API (CSRF); the web console keeps its own cookie and checks it
with `Authenticator.authenticate`.

Looked-up principals are kept for CACHE_SECONDS (a request costs no database round trip for
its token); an expiry is checked at every request, a revocation written by any controller
takes effect within CACHE_SECONDS.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from vnet.controller.db.engine import READ_ONLY
from vnet.controller.db.models import ApiToken, Tenant
from vnet.controller.errors import BadRequest, NotFound, Unauthorized
from vnet.controller.principal import Principal
from vnet.model.controller_api import Role, TokenRequest, TokenView

TOKEN_PREFIX = "vnet_"
CACHE_SECONDS = 2.0


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_token(
    session: Session, role: Role, tenant: str | None = None, expires_in: int | None = None
) -> TokenView:
    """A new token for `role` (and `tenant`), stored as its hash; the answer is the only place
    the token itself ever appears. BadRequest/NotFound name the field at fault."""
    request = TokenRequest(role=role, tenant=tenant, expires_in=expires_in)
    tenant_id = _tenant_id(session, request)
    token = new_token()
    expires = datetime.now(UTC) + timedelta(seconds=expires_in) if expires_in else None
    session.add(ApiToken(sha256=digest(token), role=role, tenant_id=tenant_id, expires=expires))
    session.flush()
    return TokenView(token=token, role=role, tenant=tenant, expires=expires)


def register_token(session: Session, token: str, role: Role = "provider") -> bool:
    """Store the hash of an existing token (the provider's, read from its file) unless the
    database has it already; True when it was added."""
    if session.scalar(select(ApiToken.id).where(ApiToken.sha256 == digest(token))) is not None:
        return False
    session.add(ApiToken(sha256=digest(token), role=role))
    session.flush()
    return True


def revoke_token(session: Session, token: str) -> bool:
    """Mark the token revoked (every controller refuses it within CACHE_SECONDS); False if
    the database does not know it or it was revoked already."""
    row = session.scalar(select(ApiToken).where(ApiToken.sha256 == digest(token)))
    if row is None or row.revoked is not None:
        return False
    row.revoked = datetime.now(UTC)
    session.flush()
    return True


def _tenant_id(session: Session, request: TokenRequest) -> int | None:
    if request.role == "provider":
        if request.tenant is not None:
            raise BadRequest(
                "a provider token belongs to no tenant; leave tenant out", field="tenant"
            )
        return None
    if not request.tenant:
        raise BadRequest("a tenant token needs the tenant it acts for", field="tenant")
    found = session.scalar(select(Tenant.id).where(Tenant.name == request.tenant))
    if found is None:
        raise NotFound(f"unknown tenant {request.tenant!r}", field="tenant", code="unknown-tenant")
    return found


@dataclass(frozen=True)
class _Known:
    principal: Principal
    expires: datetime | None
    until: float  # monotonic time this entry stops being trusted


class Authenticator:
    """Turns a request's credentials into a Principal, or Unauthorized saying why."""

    def __init__(self, sessions: sessionmaker[Session], cache_seconds: float = CACHE_SECONDS):
        self.sessions = sessions
        self.cache_seconds = cache_seconds
        self._known: dict[str, _Known] = {}

    async def principal(self, authorization: str | None) -> Principal:
        """The principal of an `Authorization: Bearer <token>` header."""
        if not authorization:
            raise Unauthorized(
                "no token: send the header 'Authorization: Bearer <token>'", field="Authorization"
            )
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized(
                "the Authorization header must be 'Bearer <token>'", field="Authorization"
            )
        return await self.authenticate(token.strip())

    async def authenticate(self, token: str) -> Principal:
        """The principal `token` stands for (the console checks its cookie with this)."""
        key = digest(token)
        known = self._known.get(key)
        if known is None or known.until < time.monotonic():
            known = await asyncio.to_thread(self._look_up, key)  # the event loop never waits
            self._known[key] = known
        if known.expires is not None and known.expires <= datetime.now(UTC):
            raise Unauthorized(
                f"the token expired at {known.expires.isoformat()}", field="Authorization"
            )
        return known.principal

    def _look_up(self, key: str) -> _Known:
        with self.sessions() as session:
            # a snapshot beside the writer: on SQLite a lookup that took the write lock
            # waited behind every write queued, and failed after the busy timeout
            session.connection(execution_options={READ_ONLY: True})
            row = session.execute(
                select(ApiToken, Tenant.name)
                .outerjoin(Tenant, Tenant.id == ApiToken.tenant_id)
                .where(ApiToken.sha256 == key)
            ).first()
        if row is None:
            raise Unauthorized("the token is not known to this controller", field="Authorization")
        token, tenant = row
        if token.revoked is not None:
            raise Unauthorized(
                f"the token was revoked at {_aware(token.revoked).isoformat()}",
                field="Authorization",
            )
        expires = _aware(token.expires) if token.expires else None
        principal = Principal(token.role, tenant)  # type: ignore[arg-type]
        return _Known(principal, expires, time.monotonic() + self.cache_seconds)


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes for what was stored in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
