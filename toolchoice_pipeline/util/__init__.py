"""Small shared utilities: bad-input problems (``errors``), strict JSON and YAML readers that know file and line
(``json_text``, ``yaml_lines``; ``yaml_fast``: rapidyaml where it reads as PyYAML does), canonical JSON and short
hashes (``canonical``), and atomic file writes (``atomic``).

May import: the standard library and third-party packages only, never another part of the package.
"""
