"""Imported first by the forkserver of a multiprocess run (``toolchoice run --workers N``), so every step
process forked from it is as quiet as an in-process run: no beta/preview warnings (the CLI filters them too)
and no per-step DEBUG lines from Dagster's console log; our own output says what failed and why."""

import logging
import warnings

warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")
logging.getLogger("dagster").setLevel(logging.ERROR)
