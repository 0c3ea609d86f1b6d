"""Where things are: the checkout this package lives in, and the cache of slow downloads
and builds outside it ($IOPIPE_CACHE, as the Makefile sets it)."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "schema"
CACHE = Path(os.environ.get("IOPIPE_CACHE", Path.home() / ".cache" / "iopipe"))
INFRA = REPO / "infra"
