"""When a failed request must put hosts back before it answers (service/putback.py), and
what its answer then says: pure logic, no agents."""

from __future__ import annotations

from vnet.controller.agents.changes import AgentError, ConfirmError
from vnet.controller.service.putback import Call, describe, left_changed

HOSTS = ("h1", "h2", "h3")


def refused() -> AgentError:
    return AgentError("h3", "edit refused", "operation-failed")


def unconfirmed(kept: tuple[str, ...], pending: tuple[str, ...]) -> ConfirmError:
    err = ConfirmError("h3", "no answer")
    err.kept, err.pending = kept, pending
    return err


def test_a_refusal_the_transaction_backed_out_leaves_nothing_to_put_back() -> None:
    assert not left_changed([Call(HOSTS, refused())])
    # a modify whose later step failed and whose undo worked
    assert not left_changed([Call(HOSTS, None), Call(HOSTS, refused()), Call(HOSTS, None)])


def test_hosts_that_confirmed_or_did_not_answer_are_put_back() -> None:
    assert left_changed([Call(HOSTS, unconfirmed(("h1", "h2"), ("h3",)))])
    gone = refused()
    gone.pending = ("h3",)  # sent the commit, then answered nothing
    assert left_changed([Call(HOSTS, gone)])
    # an earlier step confirmed, a later one failed, and so did its undo
    assert left_changed([Call(HOSTS, None), Call(HOSTS, refused()), Call(HOSTS, refused())])


def test_the_answer_names_what_stays_where_and_until_when() -> None:
    text = describe(["h1", "h2"], ["h3"], {}, 0.0)
    assert text.startswith("hosts h1, h2 put back as the database says; host h3 did not answer")
    assert "by 00:00:00 UTC" in text and "when it starts again if it died" in text
    assert describe(["h1"], [], {"h2": AgentError("h2", "down")}, None) == (
        "host h1 put back as the database says; host h2 could not be put back now (host h2:"
        " down); the controller reconciles it when it answers again"
    )
