"""A stand-in for an Azure OpenAI resource: :class:`FakeOpenAIServer` answering at Azure's
deployment routes, ``/openai/deployments/<deployment>/chat/completions?api-version=...``.

Each chat request's deployment and API version are recorded in ``calls``; a deployment not
in ``deployments`` answers 404 ``DeploymentNotFound``, as Azure does. ``required_key`` makes
a request without that ``api-key`` header an HTTP 401.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs

from cigeval.testing.openai_server import FakeOpenAIServer

_ROUTE = re.compile(r"/openai/deployments/([^/]+)/chat/completions")


@dataclass
class FakeAzureServer(FakeOpenAIServer):
    """Azure's chat route in front of the scripted replies of :class:`FakeOpenAIServer`."""

    deployments: list[str] = field(default_factory=lambda: ["judge-deployment"])
    required_key: str | None = None
    calls: list[tuple[str, str]] = field(default_factory=list, init=False)

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``, the resource URL the Azure client takes."""
        return self.base_url.removesuffix("/v1")

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        path, _, query = handler.path.partition("?")
        route = _ROUTE.fullmatch(path)
        if route is None:
            self._send(handler, 404, {"error": {"code": "404", "message": "Resource not found"}})
            return
        deployment = route.group(1)
        version = parse_qs(query).get("api-version", [""])[0]
        with self._lock:
            self.calls.append((deployment, version))
        if self.required_key is not None and handler.headers.get("api-key") != self.required_key:
            message = "Access denied due to invalid subscription key or wrong API endpoint."
            self._send(handler, 401, {"error": {"code": "401", "message": message}})
            return
        if deployment not in self.deployments:
            message = "The API deployment for this resource does not exist."
            self._send(handler, 404, {"error": {"code": "DeploymentNotFound", "message": message}})
            return
        handler.path = "/v1/chat/completions"
        self._handle(handler)
