"""Models: the interface the agent loop calls, an OpenAI-compatible client and a scripted fake.

Importing this package is cheap: the ``openai`` SDK is imported by the first
``OpenAIModel.complete`` call, not here. ``__all__`` is the public API; the other names imported
here are for tether's other packages (the test doubles), which import this package only.
"""

from ._base import Model as Model
from ._base import ModelReply as ModelReply
from ._base import ToolCall as ToolCall
from ._base import arguments_text as arguments_text
from ._base import last_user_text as last_user_text
from ._base import scripted_usage as scripted_usage
from ._errors import ModelConfigError as ModelConfigError
from ._errors import ModelError as ModelError
from ._errors import ModelResponseError as ModelResponseError
from ._errors import ModelUnavailableError as ModelUnavailableError
from ._openai import OpenAIModel as OpenAIModel
from ._resolve import resolve_model as resolve_model
from ._scripted import ScriptedModel as ScriptedModel

__all__ = [
    "Model",
    "ModelConfigError",
    "ModelError",
    "ModelReply",
    "ModelResponseError",
    "ModelUnavailableError",
    "OpenAIModel",
    "ScriptedModel",
    "ToolCall",
    "resolve_model",
]
