"""The HTTP layer: the control API (``OrchestrationAPI``) and the webhook server.

Importing this package imports starlette and uvicorn; ``import tether`` never does.
``__all__`` is the public API; the other names imported here are for tether's other packages.
"""

from .._public import published
from ._api import DEFAULT_PORT as DEFAULT_PORT
from ._api import OrchestrationAPI as OrchestrationAPI
from ._errors import APIConfigError as APIConfigError
from ._errors import APIError as APIError
from ._server import AppServer as AppServer
from ._webhooks import SIGNATURE_HEADER as SIGNATURE_HEADER
from ._webhooks import TIMESTAMP_HEADER as TIMESTAMP_HEADER
from ._webhooks import WebhookServer as WebhookServer
from ._webhooks import sign_webhook as sign_webhook
from ._webhooks import webhook_headers as webhook_headers

__all__ = [
    "DEFAULT_PORT",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "APIConfigError",
    "APIError",
    "OrchestrationAPI",
    "WebhookServer",
    "sign_webhook",
    "webhook_headers",
]

published(globals())
