"""A question's content words: tokenised, contractions expanded, function words dropped, each reduced to a
lemma-ish stem so "passwords" meets "password" and "resetting" meets "reset".

No dictionary or tagger: a few suffix rules applied the same way to both sides are enough, since the
stems are only ever compared with each other.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from gateway.cache.lexicon import CLOSED_CLASSES, CONTRACTIONS, DEICTIC, DIRECTIONAL, IRREGULAR, PERIODS, STOPWORDS

# Hyphenated compounds are their parts ("best-selling" / "worst-selling" differ in "best" / "worst",
# "8-month-old" is "8 month old"); identifiers keep their dots and underscores ("redis.conf").
_WORD = re.compile(r"[a-z0-9]+(?:[_.][a-z0-9]+)*|[^\sa-z0-9]")
_CONTRACTION = re.compile(r"(can't|cannot|won't|shan't|n't|'s|'re|'ve|'ll|'d|'m)\b")


@dataclass(slots=True, frozen=True)
class Word:
    surface: str  # case-folded, as written
    stem: str
    position: int  # index among all tokens, for order checks
    closed_class: str | None  # "time", ... (lexicon.CLOSED_CLASSES), or None


def stem(word: str) -> str:
    """Plural, -ing, -ed and -ly stripped; short words left alone (their suffixes are part of them)."""
    word = IRREGULAR.get(word, word)
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[:-len(suffix)] + keep
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    elif word.endswith("ly") and len(word) > 5:
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # "stopp(ing)" -> "stop"
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]  # "change" / "chang(ing)" meet at "chang"
    return word


_STOP_STEMS = frozenset(stem(w) for w in STOPWORDS if len(w) > 3)


def _closed_class(word: str) -> str | None:
    for name, members in CLOSED_CLASSES.items():
        if word in members or stem(word) in {stem(m) for m in members}:
            return name
    return None


def tokens(text: str) -> list[str]:
    """Case-folded word and symbol tokens, contractions expanded."""
    text = _CONTRACTION.sub(lambda m: " " + CONTRACTIONS[m.group(1)] + " ", text.casefold().replace("’", "'"))
    return _WORD.findall(text)


@lru_cache(maxsize=65_536)
def content_words(text: str) -> tuple[Word, ...]:
    """The words that carry the question, in order."""
    out = []
    toks = tokens(text)
    for i, tok in enumerate(toks):
        if tok in DEICTIC and i + 1 < len(toks) and toks[i + 1] in PERIODS:
            out.append(Word(tok, stem(tok), i, "time"))  # "this year" / "last year"
            continue
        if not tok[0].isalnum() or tok in STOPWORDS or tok in DIRECTIONAL or stem(tok) in _STOP_STEMS \
                or IRREGULAR.get(tok) in STOPWORDS or (tok.endswith("ing") and tok[:-3] + "e" in STOPWORDS):
            continue
        closed = _closed_class(tok)
        if tok in _SEASON_OR_VERB and not _season(toks, i):
            closed = None  # "the fall of Rome", "a spring in the hinge"
        out.append(Word(tok, stem(tok), i, closed))
    return tuple(out)


_SEASON_OR_VERB = frozenset({"fall", "spring", "march"})
_BEFORE_A_TIME = frozenset({"in", "this", "last", "next", "every", "each", "during", "until", "since", "by",
                            "early", "late", "mid", "of"})


def _season(toks: list[str], i: int) -> bool:
    """'fall', 'spring' and 'march' name a time only where one fits: 'in (the) fall', 'last spring',
    'march 3', 'spring break'."""
    before = toks[i - 1] if i > 0 else ""
    if before == "the" and i > 1:
        before = toks[i - 2] if toks[i - 2] in _BEFORE_A_TIME else ""
    after = toks[i + 1] if i + 1 < len(toks) else ""
    return before in _BEFORE_A_TIME or after in PERIODS or after in {"break", "semester", "term"} \
        or after[:1].isdigit()


_MARKER_GROUPS = {"to": "to", "into": "to", "vs": "vs", "versus": "vs", "against": "vs"}


@lru_cache(maxsize=65_536)
def sides(text: str) -> dict[str, dict[str, int]]:
    """For each directional word (the first of its kind): content-word stem -> -1 before it, +1 after it.
    "Is X faster than Y?" puts X at -1 and Y at +1 around "than"."""
    toks = tokens(text)
    out: dict[str, dict[str, int]] = {}
    for i, tok in enumerate(toks):
        marker = _MARKER_GROUPS.get(tok, tok)
        if tok not in DIRECTIONAL or marker in out:
            continue
        out[marker] = {w.stem: (-1 if w.position < i else 1) for w in content_words(text)}
    return out


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (a swap of two neighbours is one edit), stopping past `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if prev2 is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]
