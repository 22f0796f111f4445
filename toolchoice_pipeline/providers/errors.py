"""The error our in-process providers raise: LiteLLM's ``CustomLLMError``, imported on the error path only.

A ``local/`` or ``replay/`` model raises the same error whether it was called through LiteLLM (its custom handler)
or directly (:mod:`.direct`); importing LiteLLM only when one is raised keeps a run of these models from
importing it at all (issue 27).
"""

from __future__ import annotations


def provider_error(status_code: int, message: str) -> Exception:
    """``litellm.llms.custom_llm.CustomLLMError(status_code, message)``: LiteLLM maps it by ``status_code``
    (404 to ``NotFoundError``, 422 to ``UnprocessableEntityError``, 400 to ``BadRequestError``...)."""
    from litellm.llms.custom_llm import CustomLLMError

    return CustomLLMError(status_code=status_code, message=message)
