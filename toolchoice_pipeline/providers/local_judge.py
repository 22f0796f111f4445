"""The offline judge models of the ``local/...`` provider, by name (see :mod:`toolchoice_pipeline.providers.offline_judge.model`).

``local/catalog-judge``: catalog-grounded and deterministic; it reads only the judge prompt, never the expected
answer, and answers ``{"reasoning", "verdict"}`` as JSON text like an LLM judge.
"""

from __future__ import annotations

from toolchoice_pipeline.providers.local_model import LocalModel
from toolchoice_pipeline.providers.offline_judge.model import catalog_judge

MODELS: dict[str, LocalModel] = {"catalog-judge": catalog_judge}
