"""Schemathesis, the maintained OpenAPI fuzzer, against both served OpenAPI documents through
the real processes (issue 22): the controller of a lab made from examples/controller.yaml
(its /openapi.json, with the provider's token) and a `vnet agent` in a namespace of its own
(its RESTCONF document, HTTPS with the agent's self-signed certificate, HTTP Basic).

Each run is the `schemathesis run` command inside the server's namespace, with a fixed seed
and a bounded time (MAX_TIME seconds of generation; about a minute and a half in all), and
must end without a failure:

- no server error (not_a_server_error), and no request that violates the document accepted
  (negative_data_rejection), on both;
- answers as documented: status codes, content types, bodies against their schemas;
- on the controller also positive_data_acceptance: a request the document calls valid is not
  refused as invalid (a 404 for an unknown name or a 409 for the state is no refusal).
  RESTCONF's document does not yet state every rule of the YANG module's typedefs and
  the model's cross-checks (a leafref to a missing network is a 400), so that check is not
  asked of it.

tests/integration/schemathesis_hooks.py tells schemathesis what the address formats mean and
sends negative cases as JSON only (XML has no types to violate)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vnet.lab.access import controller_access
from vnet.tools import processes

from .agent_support import AgentUnderTest, running_agent
from .conftest import ROOT, Labs, vnet

SEED = 22
MAX_TIME = 45  # seconds of generation per document; the run adds its start and end
SCHEMATHESIS = str(Path(sys.executable).parent / "schemathesis")
ANSWERS = "response_schema_conformance,content_type_conformance,status_code_conformance"
REFUSALS = "not_a_server_error,negative_data_rejection"


def schemathesis(namespace: str, url: str, checks: str, *options: str) -> tuple[str, float]:
    """Run `schemathesis run` on the document at `url` from `namespace`; (its report, its
    seconds). Fails the test with the report's end if schemathesis found anything."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    argv = [
        *("env", f"PYTHONPATH={path}", "SCHEMATHESIS_HOOKS=tests.integration.schemathesis_hooks"),
        *(SCHEMATHESIS, "run", url, "--checks", checks, "--seed", str(SEED)),
        *("--max-time", str(MAX_TIME), "--request-timeout", "20", "--workers", "1", "--no-color"),
        *options,
    ]
    started = time.monotonic()
    done = processes.run(namespace, argv, timeout=MAX_TIME + 120)
    seconds = time.monotonic() - started
    report = done.stdout + done.stderr
    assert done.returncode == 0, f"schemathesis exited {done.returncode}:\n{report[-20000:]}"
    assert " 0 failures" in report or "no issues found" in report.lower() or "passed" in report
    return report, seconds


@pytest.fixture(scope="module")
def controller_lab(module_labs: Labs) -> Iterator[str]:
    name, path = module_labs.file("controller.yaml")
    vnet("lab", "up", str(path), timeout=180)
    yield name


def test_the_controllers_document_holds_against_schemathesis(controller_lab: str) -> None:
    access = controller_access(controller_lab)
    token = Path(access.token_file).read_text().strip()
    assert access.certificate is not None  # the lab's controller serves HTTPS
    report, seconds = schemathesis(
        access.namespace,
        f"{access.url}/openapi.json",
        f"{REFUSALS},positive_data_acceptance,{ANSWERS}",
        *("-H", f"Authorization: Bearer {token}", "--tls-verify", access.certificate),
    )
    print(f"schemathesis on the controller: {seconds:.0f} s\n{report[-1500:]}")
    assert seconds < MAX_TIME + 60


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    with running_agent(tmp_path_factory.mktemp("conformance")) as running:
        yield running


def test_the_restconf_document_holds_against_schemathesis(agent: AgentUnderTest) -> None:
    report, seconds = schemathesis(
        agent.namespace,
        f"https://{agent.address}:{agent.restconf_port}/openapi.json",
        f"{REFUSALS},{ANSWERS}",
        *("--tls-verify", "false", "--auth", f"{agent.user}:{agent.password}"),
    )
    print(f"schemathesis on RESTCONF: {seconds:.0f} s\n{report[-1500:]}")
    assert seconds < MAX_TIME + 60
