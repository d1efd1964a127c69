"""Which titles a new title is compared with: its blocking keys. Pure.

A title is scored only against earlier titles that share a pair of its longest words, its first
or last words, or the first or last characters of its words run together; blocks of common
words stop growing (``BLOCK_LIMIT``), which keeps the cost per title flat as an index grows.
The in-memory index (``canonical``) and the store's (``paper_index``) block alike.
"""

from __future__ import annotations

from itertools import combinations

from lyra_crawl.papers.titles import MIN_CONTAINED_WORDS, STOPWORDS

__all__ = ["BLOCK_LIMIT", "block_keys", "title_block_keys"]

# Pairs of a title's longest words are its blocking keys: long words are rare, and a near
# duplicate keeps at least two of its four longest words after a typo or a changed word.
_BLOCK_WORDS = 4
# Its first and last content words find the same title with a subtitle added or dropped.
_EDGE_WORDS = 3
# A block this full is made of common words; it stops growing so that no title is compared with
# an ever larger share of the index. Titles sharing only such blocks are then not compared.
BLOCK_LIMIT = 32
# Characters of the run-together content words that key a title's joined blocks.
_JOINED_KEY_LENGTH = 16


def title_block_keys(normalized_title: str) -> tuple[list[str], list[str]]:
    """The blocking keys of a normalised title as text, its word keys and its edge keys (the
    index's own blocking, for a store's index of stored titles): a title is scored against the
    titles sharing a word key, and those similar to it (``title_links.similar_titles``) may be
    linked with it; the titles sharing an edge key may be linked whatever their score."""
    word_keys, edge_keys = block_keys(tuple(normalized_title.split()))
    return [" ".join(key) for key in word_keys], [" ".join(key) for key in edge_keys]


def block_keys(words: tuple[str, ...]) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Keys of a title's word blocks (near duplicates) and edge blocks (subtitle variants)."""
    content = [w for w in words if w not in STOPWORDS] or list(words)
    longest = sorted(sorted(set(content)), key=len, reverse=True)[:_BLOCK_WORDS]
    word_keys: list[tuple[str, ...]] = list(combinations(sorted(longest), 2))
    # Two-word titles lose their only pair to one typo, so they also block on single words.
    if len(longest) <= 2:
        word_keys.extend((word,) for word in longest)
    # The content words run together find the same title with words run together or split.
    joined = "".join(content)
    edge_keys = [("<", joined[:_JOINED_KEY_LENGTH]), (">", joined[-_JOINED_KEY_LENGTH:])]
    if len(content) >= MIN_CONTAINED_WORDS:
        edge_keys += [("^", *content[:_EDGE_WORDS]), ("$", *content[-_EDGE_WORDS:])]
    return word_keys, edge_keys
