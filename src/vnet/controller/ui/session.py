"""Who is looking at the console: the API token in a cookie, checked like the API checks it.

The browser logs in once with an API token (the same tokens and roles as the API: provider or
tenant administrator). The token goes into a cookie that scripts cannot read (HttpOnly), that
the browser sends only to the console (Path=/ui, where the console is mounted) and never with
a request another site starts (SameSite=Strict: a form on another site cannot make a logged-in
browser request or release a connection). Every request re-checks the token with the API's
own authenticator, so an expired or revoked token sends the browser back to the login page
with the authenticator's reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from vnet.controller.errors import Forbidden, Unauthorized
from vnet.controller.principal import Principal

COOKIE = "vnet_console"
# token -> Principal, or Unauthorized saying why (unknown, expired, revoked)
Authenticate = Callable[[str], Principal | Awaitable[Principal]]


def base_path(request: Request) -> str:
    """Where the console is mounted ("/ui"), so links and the cookie follow the mount."""
    return request.scope.get("root_path", "").rstrip("/")


async def principal_of(request: Request) -> Principal:
    """The principal of the request's cookie; Unauthorized when there is none or it is bad."""
    token = request.cookies.get(COOKIE)
    if not token:
        raise Unauthorized("not logged in: log in with an API token")
    return await principal_for(request, token)


async def principal_for(request: Request, token: str) -> Principal:
    """The principal `token` stands for, checked by the API's authenticator."""
    authenticate: Authenticate = request.app.state.authenticate
    who = authenticate(token)
    if inspect.isawaitable(who):
        who = await who
    return who


def check_same_origin(request: Request) -> None:
    """A change must come from the console's own page. SameSite=Strict already keeps the
    cookie off requests from other sites; the Origin check also covers old browsers."""
    origin = request.headers.get("origin")
    if origin is None:
        return  # not sent by browsers on same-origin form posts in every version
    own = f"{request.url.scheme}://{request.url.netloc}"
    if origin != own:
        raise Forbidden(f"a change from {origin!r} is not accepted; use the console at {own}")


def log_in(request: Request, token: str, destination: str) -> Response:
    """Redirect to `destination` with the token stored in the console's cookie."""
    response = RedirectResponse(destination, status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        path=base_path(request) or "/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def log_out(request: Request, reason: str = "") -> Response:
    """Forget the cookie and go to the login page (with why, when there is a reason)."""
    response = to_login(request, reason)
    response.delete_cookie(COOKIE, path=base_path(request) or "/")
    return response


def to_login(request: Request, reason: str = "") -> Response:
    """The login page; htmx follows HX-Redirect (it would swap a 303's page into a fragment)."""
    target = f"{base_path(request)}/login"
    if reason:
        target += "?reason=" + quote(reason)
    if request.headers.get("hx-request"):
        return Response(status_code=204, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)
