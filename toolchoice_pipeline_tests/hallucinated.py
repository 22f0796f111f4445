"""Variants of the real-producer fixtures in which the agent called a tool that was not on offer.

Each builder copies a recorded file and renames one tool in the agent's *calls* only (the call, its result's
reference to it, the tool span's ``gen_ai.tool.name``), never in the tool definitions the trace records: the
agent then chose a name outside its own catalog, as a hallucinating model does. Claude Code and Codex
sessions get the answer their agent really gives to such a call (Claude Code's ``<tool_use_error>Error: No
such tool available: X</tool_use_error>``, Codex's ``unsupported call: X``), or, with ``answered=False``
for OpenTelemetry, the application's own result is kept (a plain OpenAI client runs whatever it is asked).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_DEFINITION_KEYS = ("parameters", "description", "parameters_json_schema", "input_schema", "inputSchema")
_CALL_NAME_KEY = re.compile(r"^gen_ai\.(?:prompt|completion)\.\d+\.tool_calls\.\d+\.name$|^gen_ai\.tool\.name$")


def _is_call(value: dict[str, Any]) -> bool:
    if any(key in value for key in _DEFINITION_KEYS):
        return False
    return "arguments" in value or value.get("type") in ("tool_call", "tool_call_response") or "tool_call_id" in value


def _rename(value: Any, old: str, new: str, ids: set[str]) -> Any:
    """``value`` (decoded JSON) with every call to ``old`` renamed ``new`` (their call ids added to ``ids``);
    JSON held in strings is decoded too."""
    if isinstance(value, dict):
        out = {key: _rename(item, old, new, ids) for key, item in value.items()}
        if out.get("name") == old and _is_call(out):
            out["name"] = new
            ids.add(str(out.get("id")))
        pairs = (out.get("kvlistValue") or {}).get("values")  # an OTLP AnyValue map: [{"key", "value"}]
        if isinstance(pairs, list) and all(isinstance(p, dict) for p in pairs):
            plain = {p.get("key"): (p.get("value") or {}).get("stringValue", True) for p in pairs}
            if plain.get("name") == old and _is_call(plain):
                ids.add(str(plain.get("id")))
                for pair in pairs:
                    if pair.get("key") == "name":
                        pair["value"] = {"stringValue": new}
        key = out.get("key")
        if isinstance(key, str) and _CALL_NAME_KEY.match(key) and out.get("value") == {"stringValue": old}:
            out["value"] = {"stringValue": new}
        if isinstance(out.get("name"), str) and re.search(rf"\b(?:execute_tool|running tool:?) {old}\b", out["name"]):
            out["name"] = out["name"].replace(old, new)  # a tool span's name
        return out
    if isinstance(value, list):
        return [_rename(item, old, new, ids) for item in value]
    if isinstance(value, str) and old in value and value.lstrip().startswith(("[", "{")):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return json.dumps(_rename(decoded, old, new, ids), ensure_ascii=False)
    return value


def _answer(value: Any, ids: set[str], answer: str) -> Any:
    """``value`` with the recorded result of every call in ``ids`` replaced by ``answer`` (GenAI parts form)."""
    if isinstance(value, dict):
        out = {key: _answer(item, ids, answer) for key, item in value.items()}
        if out.get("type") == "tool_call_response" and str(out.get("id")) in ids:
            key = next((k for k in ("response", "result", "content", "output") if k in out), "response")
            out[key] = answer
        return out
    if isinstance(value, list):
        return [_answer(item, ids, answer) for item in value]
    if isinstance(value, str) and any(i in value for i in ids) and value.lstrip().startswith(("[", "{")):
        try:
            return json.dumps(_answer(json.loads(value), ids, answer), ensure_ascii=False)
        except ValueError:
            return value
    return value


def otel_variant(
    source_dir: Path,
    target_dir: Path,
    old: str = "restart_service",
    new: str = "restart_pod",
    answer: str | None = None,
) -> list[Path]:
    """Every ``*.jsonl`` export of ``source_dir`` copied to ``target_dir`` with the calls to ``old`` renamed;
    with ``answer``, the application's result of those calls replaced by it (GenAI parts form only)."""
    target_dir.mkdir(parents=True, exist_ok=True)
    ids: set[str] = set()
    documents = {
        path.name: [_rename(json.loads(line), old, new, ids) for line in path.read_text().splitlines() if line]
        for path in sorted(source_dir.glob("*.jsonl"))
    }
    written = []
    for name, lines in documents.items():
        if answer is not None:
            lines = [_answer(line, ids, answer) for line in lines]
        out = target_dir / name
        out.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        written.append(out)
    return written


def claude_code_variant(source: Path, target: Path, old: str, new: str) -> Path:
    """A Claude Code session whose first ``tool_use`` of ``old`` is a call to ``new``, refused as Claude Code does."""
    call_id = None
    lines = []
    for line in source.read_text().splitlines():
        record = json.loads(line)
        content = (record.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if call_id is None and block.get("type") == "tool_use" and block.get("name") == old:
                block["name"], call_id = new, block.get("id")
            elif call_id is not None and block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                block["content"] = f"<tool_use_error>Error: No such tool available: {new}</tool_use_error>"
                block["is_error"] = True
                record["toolUseResult"] = f"Error: No such tool available: {new}"
        lines.append(json.dumps(record, ensure_ascii=False))
    assert call_id is not None, f"no {old} call in {source}"
    target.write_text("\n".join(lines) + "\n")
    return target


def codex_variant(source: Path, target: Path, old: str, new: str) -> Path:
    """A Codex rollout whose first ``function_call`` of ``old`` calls ``new``, answered ``unsupported call``."""
    call_id = None
    lines = []
    for line in source.read_text().splitlines():
        record = json.loads(line)
        item = record.get("payload") if isinstance(record.get("payload"), dict) else {}
        if call_id is None and item.get("type") == "function_call" and item.get("name") == old:
            item["name"], call_id = new, item.get("call_id")
        elif call_id is not None and item.get("type") == "function_call_output" and item.get("call_id") == call_id:
            item["output"] = f"unsupported call: {new}"
        lines.append(json.dumps(record, ensure_ascii=False))
    assert call_id is not None, f"no {old} call in {source}"
    target.write_text("\n".join(lines) + "\n")
    return target
