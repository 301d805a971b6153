"""Word order that changes the answer: the same words, with roles traded ("Is every square a rectangle?" /
"Is every rectangle a square?", "X than Y" / "Y than X", "can my cat give me" / "can I give my cat", "my
neighbor's tree falls on my house" / "my tree falls on my neighbor's house"). Paraphrases move clauses and
change the words around them; these checks look only for the minimal edits that trade roles.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from gateway.cache.lexicon import STOPWORDS
from gateway.cache.words import sides, stem, tokens


def order_changed(query: str, candidate: str, usual_pos: Callable[[str], str | None] | None = None) -> bool:
    """True when the two questions use the same words in an order that trades roles. `usual_pos` (a word's
    usual part of speech, WordNet's) limits the one-word move to nouns; None: any content word."""
    return _reversed(query, candidate) or _swapped(query, candidate) or _roles_traded(query, candidate) \
        or _moved(query, candidate, usual_pos) or _asker_inverted(query, candidate) \
        or _possessor_traded(query, candidate)


def _moved(query: str, candidate: str, usual_pos: Callable[[str], str | None] | None) -> bool:
    """The same words with one noun moved to another place gives the noun another role."""
    ta = [t for t in tokens(query) if t[0].isalnum()]
    tb = [t for t in tokens(candidate) if t[0].isalnum()]
    if len(ta) != len(tb) or ta == tb or sorted(ta) != sorted(tb):
        return False
    for i, word in enumerate(ta):
        rest = ta[:i] + ta[i + 1:]
        for j in range(len(tb)):
            if abs(i - j) > 1 and tb[j] == word and tb[:j] + tb[j + 1:] == rest:
                return word not in STOPWORDS and (usual_pos is None or usual_pos(word) in ("noun", None))
    return False


_LEFT_OUT = frozenset({"not", "n't", "-"})  # and hyphens: "a four-year university" is three words
_ARTICLES = frozenset({"a", "an", "the"})


def _swapped(query: str, candidate: str) -> bool:
    """The same sentence with two spans traded: "Is every square a rectangle?" / "Is every rectangle a
    square?". Only this minimal edit counts: a paraphrase that moves a clause or turns to the passive
    ("The Mona Lisa was painted by whom?") changes the words around the spans too."""
    # Negations leave the comparison ("isn't my refund" / "is my refund not" is the negation guard's
    # business), and so may articles ("a prime" / "an odd number"; but "type A" / "type O" keeps its "a").
    ta = [t for t in tokens(query) if t not in _LEFT_OUT]
    tb = [t for t in tokens(candidate) if t not in _LEFT_OUT]
    if _one_swap(ta, tb) or _one_swap([t for t in ta if t not in _ARTICLES], [t for t in tb if t not in _ARTICLES]):
        return True
    # A person's object form read as its subject form: "my parents give me" / "I give my parents"; and
    # the verb's person with it ("my manager gives me" / "I give my manager"), by stems.
    sa, sb = [_SUBJECT.get(t, t) for t in ta], [_SUBJECT.get(t, t) for t in tb]
    if sa == ta and sb == tb:
        return False
    return _one_swap(sa, sb) or _one_swap([stem(t) for t in sa], [stem(t) for t in sb])


def _one_swap(a: list[str], b: list[str]) -> bool:
    if len(a) != len(b) or a == b:
        return False
    lo = next(i for i in range(len(a)) if a[i] != b[i])
    hi = max(i for i in range(len(a)) if a[i] != b[i]) + 1
    mid_a, mid_b = a[lo:hi], b[lo:hi]
    for x in range(1, 4):
        for y in range(1, 4):
            if x + y <= len(mid_a) and mid_b == mid_a[len(mid_a) - y:] + mid_a[x:len(mid_a) - y] + mid_a[:x]:
                # Two spans either side of "and" / "or" / "but" are listed, not ranked ("weather and
                # climate"), unless the sentence orders them ("from A and B to C", "A than B", "convert").
                pivot = mid_a[x:len(mid_a) - y]
                return not (len(pivot) == 1 and pivot[0] in _COORDINATING and not _DIRECTED & set(a))
    return False


_COORDINATING = frozenset({"and", "or", "but"})
_DIRECTED = frozenset({"from", "than", "before", "after", "vs", "versus", "over", "against",
                       "rate", "exchange", "convert"})


# Subject and object forms of each person: "Can my cat give me ringworm?" / "Can I give my cat ringworm?"
_PERSONS = (("i", "me"), ("we", "us"), ("he", "him"), ("she", "her"), ("they", "them"))
_SUBJECT = {obj: subject for subject, obj in _PERSONS if obj != "her"}  # "her" is a possessive too


def _roles_traded(query: str, candidate: str) -> bool:
    """A person who is the subject on one side and only the object on the other (and the other way round)."""
    a, b = set(tokens(query)), set(tokens(candidate))
    for subject, obj in _PERSONS:
        in_a, in_b = (subject in a, obj in a), (subject in b, obj in b)
        if in_a != in_b and in_a[0] != in_b[0] and in_a[1] != in_b[1]:
            return True
    return False


def _reversed(query: str, candidate: str) -> bool:
    """Two shared words on opposite sides of the same directional word: "X than Y" / "Y than X"."""
    sides_a, sides_b = sides(query), sides(candidate)
    for marker in sides_a.keys() & sides_b.keys():
        pa, pb = sides_a[marker], sides_b[marker]
        flipped = {w for w in pa.keys() & pb.keys() if pa[w] != pb[w]}
        if any(pa[w] < 0 for w in flipped) and any(pa[w] > 0 for w in flipped):
            return True
    return False


_WH = frozenset({"what", "who", "whom", "which"})
_DO = frozenset({"do", "does", "did"})
_PASSIVE = frozenset({"by", "is", "are", "was", "were", "be", "been", "get", "gets", "got"})


def _asker_inverted(query: str, candidate: str) -> bool:
    """The question word is the object on one side and the subject on the other: "What do sharks hunt?" /
    "What hunts sharks?", "Who does Anna follow?" / "Who follows Anna?". The same content words, one side
    with "do" after the question word and the other without, the verb (and its particle) after the rest on
    the first and before it on the second.
    A passive ("What is hunted by sharks?") says who does what in other words, so it is left alone."""
    ta, tb = [t for t in tokens(query) if t[0].isalnum()], [t for t in tokens(candidate) if t[0].isalnum()]
    if not ta or not tb or ta[0] not in _WH or tb[0] != ta[0] or _PASSIVE & set(ta + tb):
        return False
    do_a, do_b = len(ta) > 1 and ta[1] in _DO, len(tb) > 1 and tb[1] in _DO
    if do_a == do_b:
        return False
    asked, told = (ta, tb) if do_a else (tb, ta)  # "what do sharks hunt" / "what hunts sharks"
    sa, sb = [stem(t) for t in asked[2:]], [stem(t) for t in told[1:]]
    return len(sa) == len(sb) >= 2 and any(sa == sb[k:] + sb[:k] for k in range(1, len(sb)))


_POSSESSIVE = re.compile(r"\b([a-z]+)'s\b")
_NOT_POSSESSORS = frozenset({"it", "that", "what", "who", "there", "here", "he", "she", "let", "where", "how",
                             "when", "why", "this", "one", "everyone", "someone", "everything", "something"})


def _possessor_traded(query: str, candidate: str) -> bool:
    """Someone who does a thing on one side owns its object on the other, where "I" took the doer's place:
    "my coworker took credit for my work" / "I took credit for my coworker's work"."""
    owners_a, owners_b = _possessors(query), _possessors(candidate)
    ta, tb = tokens(query), tokens(candidate)
    return any(o in ta for o in owners_b - owners_a) and tb.count("i") > ta.count("i") \
        or any(o in tb for o in owners_a - owners_b) and ta.count("i") > tb.count("i")


def _possessors(text: str) -> set[str]:
    return {m.group(1) for m in _POSSESSIVE.finditer(text.casefold().replace("\u2019", "'"))} - _NOT_POSSESSORS
