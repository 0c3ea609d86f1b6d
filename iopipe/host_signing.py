"""Who may speak for a host, as schema/signing.json says: each host's key is derived from
the fleet's master secret, and its producer signs every message value with it, in a header
the stream job checks."""
import hashlib
import hmac
import json
import re
from pathlib import Path

from iopipe.paths import SCHEMA

CONTRACT = json.loads((SCHEMA / "signing.json").read_text())
HEADER = CONTRACT["header"]
KEY_TEXT = re.compile(r"[0-9a-f]{64}\n?")


def host_key(master_secret, host):
    """The key of `host`'s producer: HMAC-SHA256(master secret, label + host)."""
    return hmac.new(master_secret, (CONTRACT["host_key_label"] + host).encode(), hashlib.sha256).digest()


def signature(key, value):
    """The header value a producer holding `key` sends with the message value `value` (bytes)."""
    return f"{CONTRACT['version']}={hmac.new(key, value, hashlib.sha256).hexdigest()}"


def read_key(path):
    """A key or master secret from its file (64 lowercase hex digits), never quoted in an error."""
    text = Path(path).read_text()
    if not KEY_TEXT.fullmatch(text):
        raise ValueError(f"{path}: not 64 lowercase hex digits with at most a newline after them")
    return bytes.fromhex(text.strip())


class FleetSigner:
    """Signs for any host, holding the master secret: what tests and replays of a whole
    fleet's records do in place of each host's agent."""

    def __init__(self, master_secret):
        self.master_secret = master_secret
        self._keys = {}

    def headers(self, host, value):
        key = self._keys.get(host) or self._keys.setdefault(host, host_key(self.master_secret, host))
        return [(HEADER, signature(key, value).encode())]
