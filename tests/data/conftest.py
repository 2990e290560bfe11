"""The derivation package lives in scripts/ (a tool, not part of the installed greenops package):
put it on the import path the way running scripts/derive_data.py does."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))
