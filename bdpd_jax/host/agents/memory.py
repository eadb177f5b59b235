"""A govsim-architecture LLM player's memory (issue 37 item 1; docs/semantics/live/agents.md §15).

Each memory has a kind (``observation``, ``catch``, ``utterance``, ``summary``, ``limit``,
``reflection``), its text, the month it was made in, an importance from 1 to 10 (asked of
the model, or 10 for what is always shown) and the month after which it is forgotten.

Retrieval follows GovSim's ``simulation/persona/cognition/retrieve.py``: the score of a
memory is ``0.5 * recency + 3 * importance + 2 * relevance`` with recency ``0.99 ** rank``,
importance ``(score - 1) / 9`` and relevance the cosine similarity of the memory and the
focal point; memories always shown (``always``) rank above every other; the top k per focal
point are united and returned oldest first. Relevance uses the endpoint's embeddings where
it serves them; else the lexical score of :func:`lexical_similarity`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

MEMORY_KINDS: tuple[str, ...] = ("observation", "catch", "utterance", "summary", "limit", "reflection")
WEIGHTS: dict[str, float] = {"recency": 0.5, "importance": 3.0, "relevance": 2.0}  # GovSim retrieve.py
RECENCY_DECAY: float = 0.99
#: months a memory is kept after the one it was made in (GovSim keeps chats and thoughts 63
#: days, about two months; the month's observations expire with it)
KEEP_MONTHS: int = 2
MAX_MEMORIES: int = 1000  # a player's memory is bounded: the oldest that are not always shown go first
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class MemoryItem:
    """One memory: what, when, how important, until when."""

    kind: str
    text: str
    month: int
    importance: float = 5.0
    always: bool = False
    expires: int = 0  # the last month it is retrieved in
    embedding: list[float] | None = None

    def public(self) -> dict[str, Any]:
        """The memory as its record shows it (no embedding)."""
        d = asdict(self)
        d.pop("embedding")
        return d


def lexical_similarity(a: str, b: str) -> float:
    """The cosine similarity of the two texts' word counts (lower-case letters and digits),
    in [0, 1]; 0 when either has no word. The relevance score without embeddings."""
    ca, cb = Counter(_WORD.findall(a.lower())), Counter(_WORD.findall(b.lower()))
    if not ca or not cb:
        return 0.0
    dot = sum(v * cb[k] for k, v in ca.items())
    return dot / math.sqrt(sum(v * v for v in ca.values()) * sum(v * v for v in cb.values()))


def cosine(a: list[float], b: list[float]) -> float:
    """The cosine similarity of two embeddings (0 when either is zero or their sizes differ)."""
    if len(a) != len(b):
        return 0.0
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return 0.0 if na == 0 or nb == 0 else sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


class Memory:
    """One player's memories, oldest first."""

    def __init__(self) -> None:
        self.items: list[MemoryItem] = []

    def add(
        self,
        kind: str,
        text: str,
        month: int,
        importance: float = 5.0,
        *,
        always: bool = False,
        keep: int = KEEP_MONTHS,
        embedding: list[float] | None = None,
    ) -> MemoryItem:
        """Store one memory (importance clamped to [1, 10]); ValueError naming a bad kind."""
        if kind not in MEMORY_KINDS:
            raise ValueError(f"kind: one of {list(MEMORY_KINDS)}, got {kind!r}")
        score = 10.0 if always else min(max(float(importance), 1.0), 10.0)
        item = MemoryItem(kind, text, month, score, always, month + keep, embedding)
        self.items.append(item)
        if len(self.items) > MAX_MEMORIES:
            drop = next((k for k, m in enumerate(self.items) if not m.always), 0)
            del self.items[drop]
        return item

    def live(self, month: int) -> list[MemoryItem]:
        """The memories not yet forgotten in ``month``."""
        return [m for m in self.items if m.expires >= month]

    def retrieve(
        self, focal_points: list[str], month: int, top_k: int, focal_embeddings: list[list[float]] | None = None
    ) -> list[MemoryItem]:
        """The top ``top_k`` memories for each focal point, united, oldest first.
        ``focal_embeddings``: one per focal point when the memories have embeddings (then
        relevance is their cosine), else the lexical score."""
        nodes = self.live(month)
        if not nodes:
            return []
        n = len(nodes)
        recency = [RECENCY_DECAY ** (n - 1 - k) for k in range(n)]  # the newest ranks 0
        picked: set[int] = set()
        for f, focal in enumerate(focal_points):
            emb = focal_embeddings[f] if focal_embeddings is not None else None
            scores = []
            for k, m in enumerate(nodes):
                rel = cosine(emb, m.embedding) if emb is not None and m.embedding else lexical_similarity(focal, m.text)
                scores.append(
                    WEIGHTS["recency"] * recency[k]
                    + WEIGHTS["importance"] * (m.importance - 1.0) / 9.0
                    + WEIGHTS["relevance"] * rel
                )
            top = max(scores) + 1.0
            scores = [top if m.always else s for m, s in zip(nodes, scores, strict=True)]
            order = sorted(range(n), key=lambda k: (-scores[k], -k))
            picked.update(order[:top_k])
        return [nodes[k] for k in sorted(picked)]


def render_memories(items: list[MemoryItem]) -> str:
    """Memories as the prompt lists them: one line each, ``- month M: text``."""
    return "\n".join(f"- month {m.month}: {m.text}" for m in items) or "- (nothing yet)"


__all__ = [
    "KEEP_MONTHS",
    "MAX_MEMORIES",
    "MEMORY_KINDS",
    "Memory",
    "MemoryItem",
    "WEIGHTS",
    "cosine",
    "lexical_similarity",
    "render_memories",
]
