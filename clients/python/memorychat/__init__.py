"""memorychat: conversation memory for question-answering chatbots. Standard library only (Python 3.11)."""

from .client import Memorychat
from .errors import FieldError, MemorychatError
from .sse import StreamEvent
from .tokens import sign_jwt

__all__ = ["Memorychat", "MemorychatError", "FieldError", "StreamEvent", "sign_jwt"]
__version__ = "0.1.0"
