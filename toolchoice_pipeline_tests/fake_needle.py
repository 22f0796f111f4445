"""A stand-in for the Needle package (module ``needle``), written as a real package on disk for the needle
provider's fast tests: the same public surface the provider uses (``Needle(tools=, system=, weights=,
generation=, auto_date=)``, ``complete``, ``reset``, ``close``, ``_weight_generation``, ``needle.agent.fetch``),
a deterministic engine, and records of what it was given.

The engine calls the tool whose name the text holds (case-insensitive), filling the first property of its
parameters with the text's last word; a text that is a JSON list (tool results) or names no tool gets no call.
Making a ``Needle`` sleeps ``BIND_DELAY`` seconds; each ``complete`` sleeps ``DELAY`` seconds and counts how many run at once (``MAX_ACTIVE``).
"""

from __future__ import annotations

import sys
from pathlib import Path

WEIGHTS_TAG = (0x05E12A84).to_bytes(4, "little")  # a Needle 3 .cact archive starts with this tag

_INIT = """
import json, os, threading, time

TELEMETRY_AT_IMPORT = os.environ.get("NEEDLE_TELEMETRY")
DELAY = 0.0
BIND_DELAY = 0.0  # seconds each Needle takes to make (binding its tool list)
CREATED = []      # (system, tool names, weights, auto_date) of every Needle made
TURNS = []        # (system, text) of every complete()
ACTIVE = 0
MAX_ACTIVE = 0
_count = threading.Lock()


def _weight_generation(path):
    with open(path, "rb") as handle:
        tag = handle.read(4)
    if tag != bytes.fromhex("842ae105"):
        raise RuntimeError(f"{path} has unknown .cact format tag")
    return 3


class Needle:
    def __init__(self, tools=None, system=None, weights=None, generation=None, auto_date=True, stateless=False):
        self.tools = [t.get("function", t) for t in tools or []]
        self.system = system or ""
        self.history = []
        time.sleep(BIND_DELAY)
        CREATED.append((self.system, [t["name"] for t in self.tools], weights, auto_date))

    def reset(self):
        self.history = []

    def close(self):
        pass

    def complete(self, text="", max_new_tokens=512):
        global ACTIVE, MAX_ACTIVE
        with _count:
            ACTIVE += 1
            MAX_ACTIVE = max(MAX_ACTIVE, ACTIVE)
        try:
            time.sleep(DELAY)
            TURNS.append((self.system, text))
            self.history.append(text)
            if text.startswith("["):
                return {"type": "respond", "function_calls": [], "reasoning": "results seen", "confidence": 0.5}
            named = [t for t in self.tools if t["name"].lower() in text.lower()]
            if not named:
                return {"type": "call", "function_calls": [], "suppressed_calls": [{"name": "x"}],
                        "reasoning": "no tool fits", "confidence": 0.125}
            tool = named[0]
            properties = list((tool.get("parameters") or {}).get("properties") or {})
            arguments = {properties[0]: text.split()[-1]} if properties else {}
            return {"type": "call", "function_calls": [{"name": tool["name"], "arguments": arguments}],
                    "reasoning": "named", "confidence": 0.75}
        finally:
            with _count:
                ACTIVE -= 1
"""

_FETCH = """
import os

def _lib_name():
    return "libneedle.so"

def base_weights(generation=2):
    return {2: "needle2.cact", 3: "needle3.cact"}[int(generation)]

def cache_dir(generation=2):
    return os.path.join(os.environ["FAKE_NEEDLE_CACHE"], f"v{int(generation)}")
"""


def install(root: Path, monkeypatch, *, weights: bool = True, engine: bool = True):
    """Write the stand-in under ``root`` and make ``import needle`` load it (for this test only); returns the
    imported module. ``weights`` / ``engine``: whether the bundled ``needle3.cact`` / ``libneedle3.so`` exist."""
    package = root / "needle"
    (package / "agent").mkdir(parents=True)
    (package / "__init__.py").write_text(_INIT)
    (package / "agent" / "__init__.py").write_text("")
    (package / "agent" / "fetch.py").write_text(_FETCH)
    if weights:
        (package / "needle3.cact").write_bytes(WEIGHTS_TAG + b"\0" * 60)
    if engine:
        (package / "libneedle3.so").write_bytes(b"\x7fELF")
    monkeypatch.setenv("FAKE_NEEDLE_CACHE", str(root / "cache"))
    monkeypatch.delenv("NEEDLE3_LIB_PATH", raising=False)
    for name in [n for n in sys.modules if n == "needle" or n.startswith("needle.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(root))
    return package
