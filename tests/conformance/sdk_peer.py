"""The a2a-python test peer with the SDK features a conformance run needs switched on.

tests/peers/a2a-python/server.py (owned by the fidelity suite; not edited here) builds a
replica on a2a-sdk's own ``DefaultRequestHandler`` and routes, with push notifications off
(its card says ``pushNotifications: false`` and it wires no push config store). To measure
what the real SDK answers to the push-config methods and how it delivers a push, this
wrapper loads that file unchanged and patches three of the names it imported before it runs
its ``main()``:

- ``--push``: the card's ``AgentCapabilities`` gets ``push_notifications=True``, and the
  handler gets the SDK's ``InMemoryPushNotificationConfigStore`` and
  ``BasePushNotificationSender`` (an ``httpx.AsyncClient``, no URL validator: the SDK's
  default, so a loopback receiver is reachable);
- ``--v03-compat``: the JSON-RPC routes are built with ``enable_v0_3_compat=True`` (the SDK
  default, and server.py's, is off), and the card declares a second interface, JSON-RPC
  ``protocolVersion: "0.3"`` at the same URL. The option alone leaves the card 1.0-only: the
  SDK adds the 0.3 card fields (``url``, ``protocolVersion``, ``preferredTransport``,
  ``additionalInterfaces``) only when the card declares an interface whose version is empty
  or in [0.3, 1.0) (``response_helpers.agent_card_to_dict``, ``conversions.to_compat_agent_card``),
  so a deployer who wants 0.3 clients to discover the agent declares one, as here;
- ``--require-bearer TOKEN``: the card declares an HTTP Bearer security scheme named
  ``bearer`` with a security requirement on it, and an ASGI middleware refuses ``POST /``
  without ``Authorization: Bearer TOKEN``. a2a-sdk has no authentication layer of its own
  (nothing in the package answers 401), so the refusal's body is this harness's choice:
  HTTP 401, ``WWW-Authenticate: Bearer``, a JSON-RPC error ``-32600``. It exists to show
  that the SDK clients' auth helpers send the token when a card declares a scheme.

Every other argument goes to server.py as it is (``--port --ledger --db --store ...``).

Usage: python sdk_peer.py [--push] [--v03-compat] [--require-bearer TOKEN] SERVER_PY_ARGS...
"""

import argparse
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_PY = os.path.join(HERE, "..", "peers", "a2a-python", "server.py")


def load_server_module():
    """Imports tests/peers/a2a-python/server.py as a module, without running it (and
    without writing a __pycache__ beside it: that directory is not ours)."""
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location("a2a_chaos_peer_server", SERVER_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BearerGate:
    """ASGI middleware: POST / needs ``Authorization: Bearer TOKEN``; the card stays public."""

    def __init__(self, app, token):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != self.expected:
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {"code": -32600, "message": "missing or wrong bearer token"},
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="a2a"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def patch(module, push, v03_compat, bearer):
    """Rebinds the names server.py's build() uses, so build() wires the extra features."""
    import httpx
    from a2a.server.tasks import (
        BasePushNotificationSender,
        InMemoryPushNotificationConfigStore,
    )
    from a2a.types.a2a_pb2 import (
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
    )

    if push:
        real_capabilities = module.AgentCapabilities

        def capabilities(**kwargs):
            kwargs["push_notifications"] = True
            return real_capabilities(**kwargs)

        module.AgentCapabilities = capabilities

        real_handler = module.DefaultRequestHandler

        def handler(**kwargs):
            store = InMemoryPushNotificationConfigStore()
            kwargs.setdefault("push_config_store", store)
            kwargs.setdefault(
                "push_sender",
                BasePushNotificationSender(httpx.AsyncClient(timeout=5.0), store),
            )
            return real_handler(**kwargs)

        module.DefaultRequestHandler = handler

    if bearer:
        real_card = module.AgentCard

        def card(**kwargs):
            built = real_card(**kwargs)
            built.security_schemes["bearer"].CopyFrom(
                SecurityScheme(
                    http_auth_security_scheme=HTTPAuthSecurityScheme(
                        scheme="Bearer", bearer_format="opaque"
                    )
                )
            )
            requirement = SecurityRequirement()
            requirement.schemes["bearer"].SetInParent()
            built.security_requirements.append(requirement)
            return built

        module.AgentCard = card

        real_header = module.ReplicaHeader

        def gated(app, name):
            return real_header(BearerGate(app, bearer), name)

        module.ReplicaHeader = gated

    if v03_compat:
        real_v03_card = module.AgentCard

        def v03_card(**kwargs):
            built = real_v03_card(**kwargs)
            first = built.supported_interfaces[0]
            built.supported_interfaces.append(
                module.AgentInterface(
                    url=first.url, protocol_binding="JSONRPC", protocol_version="0.3"
                )
            )
            return built

        module.AgentCard = v03_card

        real_routes = module.create_jsonrpc_routes

        def routes(handler, url, **kwargs):
            kwargs["enable_v0_3_compat"] = True
            return real_routes(handler, url, **kwargs)

        module.create_jsonrpc_routes = routes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=False)
    parser.add_argument("--push", action="store_true")
    parser.add_argument("--v03-compat", action="store_true")
    parser.add_argument("--require-bearer", metavar="TOKEN")
    ours, rest = parser.parse_known_args()
    module = load_server_module()
    patch(module, ours.push, ours.v03_compat, ours.require_bearer)
    sys.argv = [SERVER_PY] + rest
    module.main()


if __name__ == "__main__":
    main()
