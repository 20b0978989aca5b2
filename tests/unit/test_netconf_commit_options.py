"""The <commit> and <cancel-commit> parameters (RFC 6241 Sec. 8.3, 8.4) as the datastore's
keyword arguments; bad ones are refused with the element named."""

from __future__ import annotations

import pytest
from lxml import etree

from vnet.agent.netconf.commit import cancel_options, commit_options
from vnet.model.yang.errors import ErrorTag, RpcError

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"


def op(xml: str) -> etree._Element:
    return etree.fromstring(xml.replace("<commit>", f'<commit xmlns="{NC}">'))


def test_a_plain_commit_has_no_options() -> None:
    assert commit_options(etree.fromstring(f'<commit xmlns="{NC}"/>')) == {"confirmed": False}


def test_confirmed_with_timeout_and_persist() -> None:
    got = commit_options(
        op("<commit><confirmed/><confirm-timeout>60</confirm-timeout><persist>t</persist></commit>")
    )
    assert got == {"confirmed": True, "confirm_timeout": 60, "persist": "t"}


def test_unqualified_parameters_as_some_clients_send_them() -> None:
    el = etree.fromstring(f'<commit xmlns:nc="{NC}"><persist-id>t</persist-id></commit>')
    assert commit_options(el) == {"confirmed": False, "persist_id": "t"}


@pytest.mark.parametrize(
    ("xml", "element"),
    [
        ("<commit><confirmed/><confirm-timeout>soon</confirm-timeout></commit>", "confirm-timeout"),
        ("<commit><confirmed/><confirm-timeout>0</confirm-timeout></commit>", "confirm-timeout"),
        ("<commit><confirm-timeout>5</confirm-timeout></commit>", "confirm-timeout"),
        ("<commit><persist>t</persist></commit>", "persist"),
        ("<commit><confirmed/><persist/></commit>", "persist"),
        ("<commit><confirmd/></commit>", "confirmd"),
    ],
)
def test_bad_parameters_are_refused_naming_the_element(xml: str, element: str) -> None:
    with pytest.raises(RpcError) as info:
        commit_options(op(xml))
    assert info.value.tag in (ErrorTag.INVALID_VALUE, ErrorTag.UNKNOWN_ELEMENT)
    assert info.value.info["bad-element"] == element


def test_cancel_commit_takes_only_a_persist_id() -> None:
    cancel = etree.fromstring(
        f'<cancel-commit xmlns="{NC}"><persist-id>t</persist-id></cancel-commit>'
    )
    assert cancel_options(cancel) == {"persist_id": "t"}
    with pytest.raises(RpcError):
        cancel_options(
            etree.fromstring(f'<cancel-commit xmlns="{NC}"><confirmed/></cancel-commit>')
        )
