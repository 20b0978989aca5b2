"""RESTCONF (RFC 8040) front-end: a FastAPI app served by uvicorn inside the
agent's event loop, editing the one datastore like every other front-end.

- paths.py: /restconf/data/... resource identifiers -> schema steps
- codec.py: JSON (RFC 7951) and XML bodies in and out, media types
- resource.py: GET/POST/PUT/PATCH/DELETE as pure functions on a tree
- txn.py: read-modify-commit against the datastore
- tls.py: the self-signed certificate kept in the state directory
- openapi.py: the OpenAPI description of the data resources
- app.py: HTTP: routing, authentication, errors; frontend.py: start/close
"""
