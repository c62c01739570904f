"""Server-Sent Events of `POST /memoryChat` (docs/chat-native.md#streaming)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator


@dataclass
class StreamEvent:
    """`memory` (context built), `answer` (`data["text"]`, a piece of the answer), `reply` (the whole reply) or `error`."""

    event: str
    data: Any


def read_events(stream: BinaryIO) -> Iterator[StreamEvent]:
    """Events as they arrive: lines up to a blank line make one event (the SSE format)."""
    event, data = "message", []
    for raw in stream:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield StreamEvent(event, json.loads("\n".join(data)))
            event, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
    if data:
        yield StreamEvent(event, json.loads("\n".join(data)))
