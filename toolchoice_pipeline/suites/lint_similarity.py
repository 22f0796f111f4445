"""How alike two tools look to a reader: their descriptions (TF-IDF cosine) and their names (edit distance and
word parts). Used by the catalog lint (:mod:`.lint`); pure, no I/O.

Descriptions: each tool is the bag of its description's words, split at CamelCase/snake_case/dots, lower-cased,
English stop words dropped and Snowball-stemmed (``snowballstemmer``). Parameters are left out: their
descriptions repeat across tools of a kind ("Path of the file to ...") and are often longer than the tool's own
description, so two tools with the same description but different parameters would score below unrelated
pairs (docs/lint.md gives the figures); a tool's parameters are checked on their own. Words are weighted by TF-IDF with scikit-learn's default formulas
(``sublinear_tf``: ``1 + ln(count)``; smoothed IDF: ``ln((1 + n) / (1 + df)) + 1``, the document frequency ``df``
counted over the corpus the :class:`DescriptionSpace` is built on, normally every distinct tool of a suite) and
the vectors are L2-normalised, so the similarity of two tools is the cosine of their vectors, in [0, 1].

Why this measure: a reader (a person, a lexical router, a language model) tells two tools apart by the words one
has and the other lacks; words every tool of the catalog uses ("file", "path") tell nothing and IDF weighs them
down, while words only two tools share pull them together. The cosine is symmetric (a pair is a pair), bounded
(one threshold serves catalogs of any size) and cheap (one matrix product per catalog).

Names: :func:`name_similarity` is the larger of the normalised Levenshtein similarity of the names with case and
separators removed (``rapidfuzz``) and 1.0 when the stemmed word parts are the same set (``read_file`` /
``ReadFile`` / ``file_read`` / ``read_files``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np
import snowballstemmer

_STEMMER = snowballstemmer.stemmer("english")
_STOP_WORDS = frozenset(
    """
a an the and or but if then else of to in on at by for with from into onto over under about as is are was were be
been being am do does did doing have has had having i me my we our you your he she it its they them their this that
these those there here what which who whom whose where when why how all any each every some no nor not only own same
so than too very can could will would shall should may might must just also e g eg ie etc via per one
""".split()
)
_RAW_WORD = re.compile(r"[^\W_]+")
_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifier_parts(name: str) -> list[str]:
    """``"WebSearch"`` → ``["web", "search"]``; ``"read_file"``, ``"spotify.play"``, ``"HTTPClient"`` alike."""
    return [
        part.lower()
        for raw in _RAW_WORD.findall(name)
        for part in (_IDENTIFIER_PART.findall(raw) if raw.isascii() else [raw])
    ]


@lru_cache(maxsize=16384)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry meaning: identifiers split, lower-cased, stop words, single letters and
    numbers dropped (not stemmed)."""
    return [
        part
        for part in identifier_parts(text or "")
        if len(part) > 1 and not part.isdigit() and part not in _STOP_WORDS
    ]


def stemmed_words(text: str) -> list[str]:
    """:func:`content_words`, Snowball-stemmed."""
    return [_stem(word) for word in content_words(text)]


class DescriptionSpace:
    """TF-IDF vectors of tools over a corpus (see the module doc); IDF from ``corpus``, a list of word lists."""

    def __init__(self, corpus: Sequence[Sequence[str]]):
        frequency: Counter[str] = Counter()
        for words in corpus:
            frequency.update(set(words))
        n = len(corpus)
        self.idf = {word: math.log((1 + n) / (1 + df)) + 1.0 for word, df in frequency.items()}
        self._unseen_idf = math.log(1 + n) + 1.0  # a word the corpus lacks (df = 0)

    def weights(self, words: Sequence[str]) -> dict[str, float]:
        """The L2-normalised TF-IDF weights of one tool's words (empty for a tool without words)."""
        raw = {
            word: (1.0 + math.log(count)) * self.idf.get(word, self._unseen_idf)
            for word, count in Counter(words).items()
        }
        norm = math.sqrt(sum(value * value for value in raw.values()))
        return {word: value / norm for word, value in raw.items()} if norm else {}

    def similarities(
        self, tools_words: Sequence[Sequence[str]], block: int = 512
    ) -> Iterable[tuple[int, int, np.ndarray]]:
        """The cosine of every pair of the given tools, as row blocks: ``(start, stop, matrix)`` with
        ``matrix[r, c]`` the similarity of tool ``start + r`` and tool ``c``. Only words at least two of these
        tools share take part in the products (a word one tool alone has adds nothing to any pair's cosine)."""
        vectors = [self.weights(words) for words in tools_words]
        shared = Counter(word for vector in vectors for word in vector)
        columns = {word: index for index, word in enumerate(w for w, df in shared.items() if df > 1)}
        matrix = np.zeros((len(vectors), max(len(columns), 1)), dtype=np.float32)
        for row, vector in enumerate(vectors):
            for word, value in vector.items():
                column = columns.get(word)
                if column is not None:
                    matrix[row, column] = value
        for start in range(0, len(vectors), block):
            stop = min(start + block, len(vectors))
            yield start, stop, matrix[start:stop] @ matrix.T


def description_similarity(space: DescriptionSpace, first: Sequence[str], second: Sequence[str]) -> float:
    """The cosine of two tools' TF-IDF vectors in ``space`` (0 when either has no words)."""
    a, b = space.weights(first), space.weights(second)
    return sum(value * b.get(word, 0.0) for word, value in a.items())


def squashed(name: str) -> str:
    """A name without case or separators: ``Read_File`` → ``readfile``."""
    return "".join(identifier_parts(name)) or name.casefold()


def name_key(name: str) -> tuple[str, ...]:
    """The sorted stemmed word parts of a name (stop words kept)."""
    return tuple(sorted({_stem(part) for part in identifier_parts(name)}))


def name_similarity(first: str, second: str) -> float:
    """How alike two tool names read, in [0, 1] (see the module doc)."""
    from rapidfuzz.distance import Levenshtein

    if name_key(first) and name_key(first) == name_key(second):
        return 1.0
    return float(Levenshtein.normalized_similarity(squashed(first), squashed(second)))


def similar_name_pairs(names: Sequence[str], threshold: float) -> list[tuple[int, int, float]]:
    """Pairs ``(i, j, similarity)`` with ``i < j`` of ``names`` whose :func:`name_similarity` is at least
    ``threshold``; one C++ pass over all pairs (``rapidfuzz.process.cdist``) and one grouping by word parts."""
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cdist

    found: dict[tuple[int, int], float] = {}
    by_key: dict[tuple[str, ...], list[int]] = {}
    for index, name in enumerate(names):
        key = name_key(name)
        if key:
            by_key.setdefault(key, []).append(index)
    for group in by_key.values():
        for a, i in enumerate(group):
            for j in group[a + 1 :]:
                found[(i, j)] = 1.0
    keys = [squashed(name) for name in names]
    if len(keys) > 1:
        for start in range(0, len(keys), 1024):
            scores = cdist(
                keys[start : start + 1024],
                keys,
                scorer=Levenshtein.normalized_similarity,
                score_cutoff=threshold,
                dtype=np.float32,
            )
            for row, column in zip(*np.nonzero(scores), strict=True):
                i, j = start + int(row), int(column)
                if i < j:
                    found.setdefault((i, j), round(float(scores[row, column]), 4))
    return sorted((i, j, score) for (i, j), score in found.items())
