"""Checks run after the vector search: a close neighbour is served only if these agree.

Embeddings see "Is port 6379 open?" and "Is port 6379 closed?" as near-identical (cosine
~0.98); the answers are opposite. Each guard extracts one kind of fact that flips an answer
(numbers, units, polarity, named entities) and refuses the candidate when the two questions
disagree on it. Guards are pure functions over `Features`, registered in `GUARDS` by name.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from gateway.cache.words import edit_distance
from gateway.cache.vocabulary import (ANTONYMS, MULTIWORD_OPERATORS, NEGATIONS, NUMBER_WORDS,
                                      ONE_AS_PRONOUN_AFTER, OPERATORS, SCALE_WORDS, UNIT_GROUPS)

# Words kept whole: contractions ("isn't"), identifiers ("redis.conf", "k8s", "ERR_42").
_TOKEN = re.compile(
    r"\"[^\"]+\"|“[^”]+”|`[^`]+`|(?<!\w)'[^'\s][^']*'(?!\w)"  # quoted strings and code
    r"|\d+(?:[.,]\d+)*"  # numbers, versions, 1,000
    r"|[A-Za-z_][\w\-./@]*(?:['’][a-z]+)?"  # words, identifiers, contractions
    r"|[^\sA-Za-z\d]"  # any other single symbol (+, %, $, ?)
)

_UNITS = {alias: unit for unit, aliases in UNIT_GROUPS.items() for alias in aliases}


def _pole_table() -> dict[tuple[str, ...], tuple[str, str]]:
    """phrase tokens -> (concept, "+" | "-")."""
    table = {}
    for concept, (positive, negative) in ANTONYMS.items():
        table.update({tuple(phrase.split()): (concept, "+") for phrase in positive})
        table.update({tuple(phrase.split()): (concept, "-") for phrase in negative})
    return table


_POLES = _pole_table()
_MAX_PHRASE = max(len(p) for p in _POLES)

# Entities
_SENTENCE_END = {".", "?", "!", ":", ";", "\n"}
_CAMEL_OR_CODE = re.compile(r"[a-z][A-Z]|[_./@]|\d")


@dataclass(slots=True, frozen=True)
class Features:
    text: str  # case-folded, whitespace collapsed
    numbers: tuple[str, ...]  # numbers and arithmetic operators, in order
    units: tuple[tuple, tuple]  # (number-bound units, other units); see _units
    negated: bool  # odd number of negations
    poles: frozenset[tuple[str, str]]  # (concept, "+"|"-")
    entities: tuple[str, ...]  # case-folded, in order of appearance
    roles: tuple[tuple[str, str | None], ...] = ()  # (entity, the preposition before it, if any)
    unit_roles: tuple[tuple[str, str | None], ...] = ()  # (unit with no number, its preposition), sorted


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _number_value(token: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", token):
        token = token.replace(",", "")
    return token


def _numbers(words: list[str]) -> tuple[str, ...]:
    """Numbers (digits or words) and the operators between them, in order."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w[0].isdigit():
            value = _number_value(w)
            nxt = words[i + 1] if i + 1 < len(words) else ""
            if nxt in SCALE_WORDS and value.isdigit():  # "1 million" is "one million"
                value = str(int(value) * SCALE_WORDS[nxt])
                i += 1
            out.append(value)
        elif w in NUMBER_WORDS or (w in SCALE_WORDS and out and out[-1].isdigit()):
            if w == "one" and _pronoun_one(words, i):
                i += 1
                continue
            total, current = 0, 0
            while i < len(words) and (words[i] in NUMBER_WORDS or words[i] in SCALE_WORDS or words[i] == "and"):
                word = words[i]
                if word in NUMBER_WORDS:
                    current += NUMBER_WORDS[word]
                elif word in SCALE_WORDS:
                    current = max(current, 1) * SCALE_WORDS[word]
                    if SCALE_WORDS[word] >= 1000:
                        total, current = total + current, 0
                i += 1
            out.append(str(total + current))
            continue
        elif w in SCALE_WORDS:
            out.append(str(SCALE_WORDS[w]))
        elif w in _POWERS:  # "x squared" is x^2 and "5 cubed" 5^3, as written with digits
            if i > 0 and _is_number(words[i - 1]):
                out.append("^")
            out.append(_POWERS[w])
        else:
            for phrase, op in MULTIWORD_OPERATORS.items():
                if tuple(words[i:i + len(phrase)]) == phrase:
                    out.append(op)
                    i += len(phrase)
                    break
            else:
                # An operator only counts between numbers ("over" and "x" are words elsewhere).
                op = OPERATORS.get(w)
                nxt = words[i + 1] if i + 1 < len(words) else ""
                near_number = out and (nxt[:1].isdigit() or nxt in NUMBER_WORDS or op == "%")
                if op and near_number and i > 0 and (words[i - 1][:1].isdigit() or words[i - 1] in NUMBER_WORDS):
                    out.append(op)
                i += 1
            continue  # past the phrase or the word, not one further ("12 multiplied by 17": the 17 counts)
        i += 1
    return tuple(out)


# "one at 18% and one at 25%", "merge them into one": "one" stands for a thing named elsewhere.
_ONE_AS_PRONOUN_BEFORE = frozenset({"at", "with", "that", "who", "which", "", ".", ",", "?", "!", ";", ":"})


_POWERS = {"squared": "2", "cubed": "3"}
_SUPERSCRIPTS = {"²": " squared", "³": " cubed"}


def _pronoun_one(words: list[str], i: int) -> bool:
    """"one" for a thing named elsewhere, not a count: after a determiner ("which one"), or two words after one
    ("the broken one"), or before a preposition or a clause's end ("one at 18%", "into one"); never the end of
    a sum ("two plus one")."""
    before = words[i - 1] if i > 0 else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    if before in ONE_AS_PRONOUN_AFTER:
        return True
    if before in OPERATORS or _is_number(before) or before in ("by", "power"):
        return False
    return after in _ONE_AS_PRONOUN_BEFORE or (i > 1 and words[i - 2] in ONE_AS_PRONOUN_AFTER and before.isalpha())


def _is_number(word: str) -> bool:
    return word[:1].isdigit() or word in NUMBER_WORDS


def _spelt(word: str) -> str:
    """A number word as its digits ("three" -> "3"), so "three weeks" and "3 weeks" agree."""
    return str(NUMBER_WORDS[word]) if word in NUMBER_WORDS else word


def _units(words: list[str]) -> tuple[tuple, tuple]:
    """(units bound to a number, in order; the other units).

    "Convert 5 miles to km" and "What is 5 miles in km?" both give ((5, mile),) + {km}:
    what is measured is the unit next to the number, so word order elsewhere may vary.
    With no number to anchor them, the order of the units is what tells the direction.
    """
    bound: list[tuple[str, str]] = []
    free: list[str] = []
    for i, w in enumerate(words):
        unit = _UNITS.get(w) or (_UNITS.get(w.split("-")[0]) if "-" in w else None)  # "month-old"
        if unit is None:
            continue
        before = words[i - 1] if i > 0 else ""
        if before == "-" and i > 1 and _is_number(words[i - 2]):
            before = words[i - 2]  # "2-month-old" is tokenised 2, -, month-old
        if w == "second" and before == "the":
            continue  # an ordinal: "the second world war"
        after = words[i + 1] if i + 1 < len(words) else ""
        if _is_number(before):
            bound.append((_spelt(before), unit))
        elif w in ("$", "€", "£", "¥") and _is_number(after):
            bound.append((_spelt(after), unit))
        else:
            free.append(unit)
    return tuple(bound), tuple(sorted(free) if bound else free)


def _unit_roles(words: list[str]) -> tuple[tuple[str, str | None], ...]:
    """Each unit with no number next to it and the preposition at most 3 words before it: "how many cups
    are in a gallon" and "in a gallon, how many cups" both give (cup, None), (gallon, "in")."""
    out = []
    for i, w in enumerate(words):
        unit = _UNITS.get(w)
        if unit is None or (i > 0 and _is_number(words[i - 1])):
            continue
        before = words[max(0, i - 3):i]
        out.append((unit, next((p for p in reversed(before) if p in _PREPOSITIONS), None)))
    return tuple(sorted(out, key=lambda r: (r[0], r[1] or "")))


def _negated(words: list[str]) -> bool:
    count = sum(1 for w in words if w in NEGATIONS or w.endswith(("n't", "n’t")))
    return count % 2 == 1


def _poles(words: list[str]) -> frozenset[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    i = 0
    while i < len(words):
        for size in range(_MAX_PHRASE, 0, -1):
            pole = _POLES.get(tuple(words[i:i + size]))
            if pole:
                found.add(pole)
                i += size
                break
        else:
            i += 1
    return frozenset(found)


def _entities(tokens: list[str]) -> tuple[str, ...]:
    """Quoted strings, code-like identifiers, acronyms and capitalised words (not sentence-initial)."""
    out: list[str] = []
    sentence_start = True
    for tok in tokens:
        if tok in _SENTENCE_END:
            sentence_start = True
            continue
        first = tok[0]
        if first in "\"'`“":
            out.append(tok.strip("\"'`“”").casefold())
        elif first.isalpha() or first == "_":
            core = re.sub(r"['’][a-z]+$", "", tok).rstrip(".-/")
            is_acronym = len(core) >= 2 and core.isupper()
            is_code = bool(_CAMEL_OR_CODE.search(core[1:] if core[:1].isupper() else core))
            is_name = core[:1].isupper() and not sentence_start and core != "I"
            # Currency and unit codes (USD, GB) are the units guard's business.
            if core and core.casefold() not in _UNITS and (is_acronym or is_code or is_name):
                out.append(core.casefold())
        sentence_start = False
    return tuple(out)


# The word that says what an entity does in the question: "from X to Y", "X than Y", "during X".
_PREPOSITIONS = frozenset({"from", "to", "into", "than", "vs", "versus", "before", "after", "over", "against", "by",
                           "with", "for", "in", "on", "at", "of", "during", "under", "between", "without", "via",
                           "through", "onto", "toward", "towards", "like", "about", "near", "inside", "outside"})


def _roles(tokens: list[str], entities: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    """Each entity's first occurrence with the preposition at most 3 tokens before it (None: none)."""
    words = [t.casefold() for t in tokens]
    roles: dict[str, str | None] = {}
    for i, w in enumerate(words):
        core = re.sub(r"['’][a-z]+$", "", w).rstrip(".-/")
        if core in entities and core not in roles:
            before = words[max(0, i - 3):i]
            roles[core] = next((p for p in reversed(before) if p in _PREPOSITIONS), None)
    return tuple(roles.items())


@lru_cache(maxsize=65_536)
def features(text: str) -> Features:
    for mark, word in _SUPERSCRIPTS.items():
        text = text.replace(mark, word)
    tokens = _tokens(text)
    # A sentence's full stop sticks to its last word ("weeks."): not part of the word for numbers and units.
    words = [t.casefold()[:-1] if len(t) > 1 and t.endswith(".") and t[0].isalpha() else t.casefold() for t in tokens]
    return Features(
        text=" ".join(words),
        numbers=_numbers(words),
        units=_units(words),
        negated=_negated(words),
        poles=_poles(words),
        entities=(entities := _entities(tokens)),
        roles=_roles(tokens, entities),
        unit_roles=_unit_roles(words),
    )


# --- the guards -------------------------------------------------------------------------
Guard = Callable[[Features, Features], bool]  # True: the two questions agree on this


def numbers_agree(a: Features, b: Features) -> bool:
    """Same numbers, same operators, same order: 1+1 is not 21+1, port 6379 is not 6380."""
    return a.numbers == b.numbers


_DURATIONS = frozenset({"ms", "s", "min", "h", "day", "week", "month", "year"})


def units_agree(a: Features, b: Features) -> bool:
    """Same units bound to the same numbers: "5 miles to km" is not "5 km to miles". A duration unit with no
    number is what the other side's "how long" asks for ("How many minutes do I boil an egg?")."""
    if a.units == b.units:
        return True
    if a.units[0] == b.units[0] and a.unit_roles == b.unit_roles and a.unit_roles \
            and sorted(a.units[1]) == sorted(b.units[1]):
        return True  # the units moved, each with its preposition: the same direction
    for x, y in ((a, b), (b, a)):
        if x.units[0] == y.units[0] and not y.units[1] and x.units[1] \
                and set(x.units[1]) <= _DURATIONS and "how long" in y.text:
            return True
    return False


def negation_agrees(a: Features, b: Features) -> bool:
    """"Can I ..." and "Can't I ..." ask for opposite answers."""
    return a.negated == b.negated


def polarity_agrees(a: Features, b: Features) -> bool:
    """Where both mention a concept (open/closed, enable/disable...), they take the same pole."""
    concepts_a = {c for c, _ in a.poles}
    concepts_b = {c for c, _ in b.poles}
    for concept in concepts_a & concepts_b:
        if {p for c, p in a.poles if c == concept} != {p for c, p in b.poles if c == concept}:
            return False
    return True


def _position(entity: str, text: str) -> int:
    match = re.search(rf"(?<!\w){re.escape(entity)}(?!\w)", text)
    return match.start() if match else -1


def _misspelt_position(entity: str, other: Features) -> int:
    """Where the other question misspells the entity in lower case ("pyhton" for Python, "napolean" for
    Napoleon): one edit from 6 letters, two from 9, and never a word the other names as an entity itself
    (so "Austria" never stands for "Australia")."""
    if len(entity) < 6 or not entity.isalpha():
        return -1
    limit = 1 if len(entity) < 9 else 2
    offset = 0
    for word in other.text.split(" "):
        if word not in other.entities and word.isalpha() and abs(len(word) - len(entity)) <= limit \
                and edit_distance(word, entity, limit) <= limit:
            return offset
        offset += len(word) + 1
    return -1


def _runs(f: Features) -> list[tuple[int, list[str]]]:
    """Runs of two or more neighbouring entity words ("united kingdom", "los angeles"), with their offsets."""
    out: list[tuple[int, list[str]]] = []
    run: list[str] = []
    offset = start = 0
    for word in f.text.split(" ") + [""]:
        if word and word in f.entities:
            if not run:
                start = offset
            run.append(word)
        else:
            if len(run) >= 2:
                out.append((start, run))
            run = []
        offset += len(word) + 1
    return out


def _alias_position(entity: str, own: Features, other: Features) -> int:
    """Where `other` names `own`'s entity by its initials or spells out its acronym: "UK" / "United Kingdom",
    "LA" / "Los Angeles". -1: it does not."""
    if entity.isalpha() and 2 <= len(entity) <= 5:
        for start, run in _runs(other):
            if "".join(w[0] for w in run) == entity:
                return start
    for _, run in _runs(own):
        if entity in run:
            initials = "".join(w[0] for w in run)
            if initials in other.entities:
                return _position(initials, other.text)
    return -1


def entities_agree(a: Features, b: Features) -> bool:
    """Every entity of one appears in the other, and shared entities come in the same order, or each keeps
    the preposition it had: "From Bangkok, how do I get to Chiang Mai?" only moved a clause, while
    "Is Paris bigger than London?" / "Is London bigger than Paris?" traded the roles."""
    # A run of names that the other side writes as its initials ("United Kingdom" / "UK") counts as those.
    spelt_out = {w for x, y in ((a, b), (b, a)) for _, run in _runs(x)
                 if "".join(w[0] for w in run) in y.entities for w in run}
    entities = [e for e in dict.fromkeys(a.entities + b.entities) if e not in spelt_out]
    pos_a = [_position(e, a.text) for e in entities]
    pos_b = [_position(e, b.text) for e in entities]
    pos_a = [p if p >= 0 or e not in b.entities else _misspelt_position(e, a) for e, p in zip(entities, pos_a)]
    pos_b = [p if p >= 0 or e not in a.entities else _misspelt_position(e, b) for e, p in zip(entities, pos_b)]
    pos_a = [p if p >= 0 or e not in b.entities else _alias_position(e, b, a) for e, p in zip(entities, pos_a)]
    pos_b = [p if p >= 0 or e not in a.entities else _alias_position(e, a, b) for e, p in zip(entities, pos_b)]
    if -1 in pos_a or -1 in pos_b:
        return False
    order_a = [e for _, e in sorted(zip(pos_a, entities))]
    order_b = [e for _, e in sorted(zip(pos_b, entities))]
    if order_a == order_b:
        return True
    roles_a, roles_b = dict(a.roles), dict(b.roles)
    return roles_a == roles_b and any(roles_a.values())


def entities_present(a: Features, b: Features) -> bool:
    """Every entity of one appears in the other, in any order (earlier turns: "a Samsung Galaxy S23" and
    "a Galaxy S23 from Samsung" set the same scene), or only qualifies one that does (_qualifies)."""
    return all(_position(e, b.text) >= 0 or _alias_position(e, a, b) >= 0 or _qualifies(e, a, b)
               for e in a.entities) \
        and all(_position(e, a.text) >= 0 or _alias_position(e, b, a) >= 0 or _qualifies(e, b, a)
                for e in b.entities)


def _qualifies(entity: str, own: Features, other: Features) -> bool:
    """A name one side adds to a name both share, as a scene is retold: the maker right before its model
    ("my Honda Civic" / "my Civic"), the start of a longer shared name ("my Mac runs macOS" / "I'm on
    macOS"), or a file-type suffix ("Node.js" / "Node"). A name after the shared one ("iPhone 15 Pro")
    is another product, so it does not count."""
    shared = [e for e in own.entities if e != entity and _position(e, other.text) >= 0]
    if "." in entity and _position(entity.split(".")[0], other.text) >= 0:
        return True
    words, theirs = own.text.split(" "), other.text.split(" ")
    for i, word in enumerate(words[:-1]):
        if word == entity and words[i + 1] in shared:
            j = theirs.index(words[i + 1]) if words[i + 1] in theirs else -1
            # ... unless the other side names another maker there ("a Toyota Civic")
            return j >= 0 and (j == 0 or theirs[j - 1] not in other.entities)
    return len(entity) >= 3 and any(e.startswith(entity) and len(e) > len(entity) for e in shared)


GUARDS: dict[str, Guard] = {
    "numbers": numbers_agree,
    "units": units_agree,
    "negation": negation_agrees,
    "polarity": polarity_agrees,
    "entities": entities_agree,
}


def first_disagreement(query: str, candidate: str, guards: dict[str, Guard] = GUARDS) -> str | None:
    """The name of the first guard the pair fails, or None when every guard agrees."""
    a, b = features(query), features(candidate)
    for name, guard in guards.items():
        if not guard(a, b):
            return name
    return None
