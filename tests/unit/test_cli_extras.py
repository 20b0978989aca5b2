"""Which extra a command needs when a library is missing, read from the package's metadata
(pyproject.toml is the one home of the extras; the real installs are in
tests/integration/test_packages.py)."""

from __future__ import annotations

import pytest

from vnet.cli.extras import extra_for, extras_of_package, missing_extra_message


def test_the_roles_hold_their_libraries_and_the_agent_none_of_the_controllers() -> None:
    extras = extras_of_package()
    assert {"agent", "controller", "bench", "all"} <= set(extras)
    assert not extras["agent"] & {"sqlalchemy", "alembic", "psycopg", "jinja2", "matplotlib"}
    assert extras["bench"] >= extras["agent"] | extras["controller"]
    assert extras["all"] >= extras["bench"]


@pytest.mark.parametrize(
    ("module", "command", "extra"),
    [
        ("sqlalchemy.orm", "controller", "controller"),
        ("pyroute2", "agent", "agent"),
        ("ncclient", "vr", "controller"),
        ("numpy", "bench", "bench"),
        ("numpy", None, "bench"),
        ("fastapi", "agent", "agent"),  # in both roles: the command's own
        ("fastapi", "controller", "controller"),
        ("pyroute2", "lab", "all"),
        ("json", "agent", None),  # not a library of any extra: the error stays as it is
    ],
)
def test_the_extra_named_for_a_missing_module(
    module: str, command: str | None, extra: str | None
) -> None:
    assert extra_for(module, command) == extra


def test_the_message_says_what_to_install() -> None:
    err = ModuleNotFoundError("No module named 'sqlalchemy'", name="sqlalchemy")
    message = missing_extra_message(err, "controller")
    assert message == (
        "vnet controller needs the 'controller' extra (the library 'sqlalchemy' is not"
        " installed): pip install 'vnet[controller]'"
    )
