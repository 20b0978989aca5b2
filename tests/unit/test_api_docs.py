"""The /docs pages of vnet's HTTP servers work offline: Swagger UI from their own copy
(vnet.tools.api_docs), never from a CDN. The controller's: test_controller_api.py."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from vnet.agent.datastore import Datastore
from vnet.agent.restconf.app import create_app
from vnet.model.agent_config import AgentConfig, User
from vnet.tools import api_docs


def test_the_agents_docs_page_loads_only_what_the_agent_serves(tmp_path: Path) -> None:
    config = AgentConfig(state_dir=tmp_path, users=[User(name="admin", password="x")])
    with TestClient(create_app(Datastore(config, apply_to_kernel=False), config)) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "/openapi.json" in page.text
        assets = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.text)
        assert sorted(a.rpartition("/")[2] for a in assets) == sorted(api_docs.FILES), assets
        for asset in assets:
            assert asset.startswith(api_docs.ASSETS_URL + "/"), asset
            got = client.get(asset)
            assert got.status_code == 200 and got.content, asset
