"""Aligning two questions' content words: each word must find its equivalent on the other side.

A word matches when the stems are equal, when both sit in one synonym group (lexicon.SYNONYM_GROUPS),
when one is a typo of the other (a short edit distance, and at least one of them not a dictionary word:
"mouse" and "moose" are both words, so neither is a typo), or when the embedder finds the two words
near-synonyms (WordVectors). What is left unmatched is a substitution (a word on each side: "dog" for
"cat", "time" for "space", "python" for "java") or an addition (one side only: "in reverse"). Either
refuses the hit, except an addition the embedder finds close to a word of the other side ("capital
city" for "capital"). A closed-class word (a time, a period) left unmatched always refuses.
"""
from __future__ import annotations

from dataclasses import dataclass

from gateway.cache.lexicon import STOPWORDS, SYNONYM_GROUPS
from gateway.cache.word_vectors import WordVectors
from gateway.cache.wordnet import WordNet, shared
from gateway.cache.words import Word, content_words, edit_distance, sides, stem, tokens

# stem -> the stems of its synonyms ("differs" and "difference" meet through "differ").
_SYNONYMS: dict[str, frozenset[str]] = {}
for _group in SYNONYM_GROUPS:
    _stems = frozenset(stem(w) for w in _group)
    for _s in _stems:
        _SYNONYMS[_s] = _SYNONYMS.get(_s, frozenset()) | _stems
# Written apart ("non-toxic", "anti-inflammatory"), a negating prefix is a word of its own.
_NEGATING_WORDS = frozenset({"non", "anti", "un", "dis", "counter"})
# A word with one of these in front is its opposite, never its typo ("hashable" / "unhashable").
_NEGATING_PREFIXES = ("un", "non", "in", "im", "il", "ir", "dis", "a")


@dataclass(slots=True, frozen=True)
class AlignmentConfig:
    # Chosen on the dev split (benchmarks/semantic_cache_eval.py): see README, "semantic cache".
    substitution_similarity: float = 0.80  # a word for another: near-synonyms only
    addition_similarity: float = 0.55  # a word on one side only: close to some word of the other
    typo_min_length: int = 4  # shorter words are never typos of each other
    # More unmatched words than this refuse at once, before any word is embedded: such pairs are
    # never served on the dev split anyway, and embedding their words is the verifier's slow path.
    max_unmatched: int = 3
    # WordNet (wordnet.py) adds synonyms the lists and the embedder miss ("clothing" / "wear") and vetoes
    # near words of one kind ("crocodile" / "alligator", "deep" / "shallow"). False: lists and vectors only.
    wordnet: bool = True
    # Words one side adds that no word of the other side is close to, tolerated when they are of these
    # parts of speech (WordNet's most frequent use) and no more than `free_additions` of them: restating
    # the question adds verbs ("State the Pythagorean theorem", "What would you recommend as"), while
    # what narrows it adds nouns, adjectives and manner adverbs ("gluten-free bread", "for beginners",
    # "lose weight safely"); hedges ("usually", "fully") are function words already (lexicon.STOPWORDS).
    free_addition_pos: tuple[str, ...] = ("verb",)
    free_additions: int = 1
    # True: a word substitutes for another when the embedder finds them near, even if WordNet knows both
    # and keeps them apart (the verifier before WordNet). Dev: 1 paraphrase more served, at the risk of
    # attribute swaps the embedder finds close.
    vectors_over_wordnet: bool = False

    def __post_init__(self) -> None:
        for name in ("substitution_similarity", "addition_similarity"):
            value = getattr(self, name)
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [-1, 1], got {value}")
        if self.typo_min_length < 1:
            raise ValueError(f"typo_min_length must be >= 1, got {self.typo_min_length}")
        if self.max_unmatched < 0:
            raise ValueError(f"max_unmatched must be >= 0, got {self.max_unmatched}")


class Aligner:
    def __init__(self, vectors: WordVectors, config: AlignmentConfig | None = None,
                 wordnet: WordNet | None = None) -> None:
        self.vectors = vectors
        self.config = config or AlignmentConfig()
        self.wordnet = wordnet if wordnet is not None else (shared() if self.config.wordnet else None)

    def refusal(self, query: str, candidate: str) -> str | None:
        """None when every content word of each question has its equivalent in the other; else why not."""
        a, b = content_words(query), content_words(candidate)
        left_a = [w for w in a if not any(self._same(w, x) for x in b) and not self._noise(w, a, b)]
        left_b = [w for w in b if not any(self._same(w, x) for x in a) and not self._noise(w, b, a)]
        left_a = _how_long(query, left_a, left_b)
        left_b = _how_long(candidate, left_b, left_a)
        for w in left_a + left_b:
            if w.surface in _NEGATING_WORDS or _opposite(w.surface, [x.surface for x in (b if w in left_a else a)]):
                return "negation"
        if not any(w.closed_class == "time" for w in a + b if w.surface not in _PRESENT):
            # "What should I do now?" asks what "What should I do?" does: the present is the default.
            left_a = [w for w in left_a if w.surface not in _PRESENT]
            left_b = [w for w in left_b if w.surface not in _PRESENT]
        for w in left_a + left_b:
            if w.closed_class:
                return w.closed_class
        if bool(left_a) != bool(left_b) and len(left_a + left_b) <= self.config.free_additions \
                and all(self._light(w, tokens(query if left_a else candidate)) for w in left_a + left_b):
            left_a, left_b = [], []
        if len(left_a) + len(left_b) > self.config.max_unmatched:
            return f"substitution:{(left_a or left_b)[0].surface}" if left_a and left_b else \
                f"addition:{(left_a or left_b)[0].surface}"
        if left_a or left_b:
            reason = self._by_vectors(a, b, left_a, left_b)
            if reason:
                return reason
        if _reversed(query, candidate) or _swapped(query, candidate) or _roles_traded(query, candidate) \
                or self._moved(query, candidate):
            return "order"
        return None

    def closed_class_traded(self, query: str, candidate: str) -> bool:
        """Each side has a time or period the other lacks ("paid weekly" / "paid twice a month")."""
        a, b = content_words(query), content_words(candidate)
        left_a = [w for w in a if w.closed_class and not any(self._same(w, x) for x in b)]
        left_b = [w for w in b if w.closed_class and not any(self._same(w, x) for x in a)]
        return bool(left_a and left_b)

    def one_noun_traded(self, query: str, candidate: str) -> bool:
        """Each side has exactly one content word the other lacks, both nouns (or names WordNet lacks), and
        the rest is the same: the minimal edit of a hard negative ("My cat has fleas." / "My rabbit has
        fleas."). A traded verb is how scenes get reworded ("I'm writing" / "I'm working on")."""
        a, b = content_words(query), content_words(candidate)
        left_a = [w for w in a if not any(self._same(w, x) for x in b)]
        left_b = [w for w in b if not any(self._same(w, x) for x in a)]
        if len(left_a) != 1 or len(left_b) != 1:
            return False
        return self.wordnet is None or all(self.wordnet.usual_pos(w.surface) in ("noun", None)
                                           for w in left_a + left_b)

    def kind_traded(self, query: str, candidate: str) -> bool:
        """A word of one side is traded for another thing of the same kind on the other (WordNet kin or
        opposites: "whole wheat flour" / "rye flour"), whatever else was reworded."""
        a, b = content_words(query), content_words(candidate)
        left_a = [w for w in a if not any(self._same(w, x) for x in b)]
        left_b = [w for w in b if not any(self._same(w, x) for x in a)]
        return any(self._one_kind(x.surface, y.surface) for x in left_a for y in left_b)

    def prepare(self, text: str) -> None:
        """Embed the text's content words now (the table keeps them for later lookups)."""
        self.vectors.vectors([w.surface for w in content_words(text)])

    def _same(self, x: Word, y: Word) -> bool:
        if x.stem == y.stem or x.surface == y.surface or y.stem in _SYNONYMS.get(x.stem, ()):
            return True
        if self._typo(x.surface, y.surface) or _derived(x.surface, y.surface):
            return True
        return self.wordnet is not None and not (x.closed_class or y.closed_class) \
            and not (x.surface.isdigit() or y.surface.isdigit()) and self.wordnet.synonyms(x.surface, y.surface)

    def _light(self, w: Word, toks: list[str]) -> bool:
        """An added word that restates rather than narrows: a verb by WordNet's usual use, or any word with a
        verb sense that opens the sentence as an imperative ("State the law", "can you name the ...")."""
        if self.wordnet is None or w.surface.isdigit() or w.stem in _REVERSING or w.surface in _REVERSING:
            return False  # "Should I stop taking X?" / "Should I take X?": the verb turns the question round
        if w.position > 0 and toks[w.position - 1] in _PREPOSITIONS:
            return False  # not a verb there: "learn to code for free", "pay in advance"
        if self.wordnet.usual_pos(w.surface) in self.config.free_addition_pos:
            return True
        opens = w.position == 0 or (w.position > 0 and toks[w.position - 1] == "you")
        return opens and self.wordnet.has_verb_sense(w.surface)

    def _moved(self, query: str, candidate: str) -> bool:
        """The same words with one noun moved to another place: "my neighbor's tree falls on my house" /
        "my tree falls on my neighbor's house" gives the noun another role. Paraphrases move clauses."""
        ta = [t for t in tokens(query) if t[0].isalnum()]
        tb = [t for t in tokens(candidate) if t[0].isalnum()]
        if len(ta) != len(tb) or ta == tb or sorted(ta) != sorted(tb):
            return False
        for i, word in enumerate(ta):
            rest = ta[:i] + ta[i + 1:]
            for j in range(len(tb)):
                if abs(i - j) > 1 and tb[j] == word and tb[:j] + tb[j + 1:] == rest:
                    return word not in STOPWORDS and (self.wordnet is None or
                                                      self.wordnet.usual_pos(word) in ("noun", None))
        return False

    def _known_apart(self, x: str, y: str) -> bool:
        """Two dictionary words that WordNet does not make synonyms: the embedder's nearness alone does not
        make them interchangeable ("weight" / "mass"); it still decides for words WordNet lacks (names,
        jargon, misspellings)."""
        return self.wordnet is not None and not self.config.vectors_over_wordnet and self.wordnet.known(x) \
            and self.wordnet.known(y) and not self.wordnet.synonyms(x, y)

    def _one_kind(self, x: str, y: str) -> bool:
        """Two different things of one kind, or opposites, per WordNet: never each other's substitute."""
        return self.wordnet is not None and (self.wordnet.kin(x, y) or self.wordnet.opposites(x, y))

    def _noise(self, w: Word, own: tuple[Word, ...], other: tuple[Word, ...]) -> bool:
        """A misspelt function word ("waht"), or a compound one side writes whole and the other in two
        neighbouring words ("greenhouse" / "green house")."""
        if not self.vectors.known(w.surface) and len(w.surface) >= 4 and any(
                edit_distance(w.surface, s, 1) <= 1 for s in _LONG_STOPWORDS if abs(len(s) - len(w.surface)) <= 1):
            return True
        joined_other = {x.surface + y.surface for x, y in zip(other, other[1:])}
        joined_own = {x.surface + y.surface for x, y in zip(own, own[1:]) if w in (x, y)}
        return w.surface in joined_other or bool(joined_own & {o.surface for o in other})

    def _typo(self, x: str, y: str) -> bool:
        shortest = min(len(x), len(y))
        if shortest < self.config.typo_min_length or x.isdigit() or y.isdigit() or _opposite(x, [y]):
            return False
        if self.vectors.known(x) and self.vectors.known(y):
            return False
        return edit_distance(x, y, 2) <= (1 if shortest < 8 else 2)

    def _by_vectors(self, a: tuple[Word, ...], b: tuple[Word, ...], left_a: list[Word],
                    left_b: list[Word]) -> str | None:
        # Substitutions compare the two sides' left-over words; an addition compares with the whole other side.
        needed = left_a + left_b if left_a and left_b else left_a + left_b + list(b if left_a else a)
        vectors = self.vectors.vectors([w.surface for w in needed])
        cfg = self.config

        def best(w: Word, others) -> tuple[float, Word | None]:
            scored = [(float(vectors[w.surface] @ vectors[o.surface]), o) for o in others]
            return max(scored, key=lambda s: s[0], default=(-1.0, None))

        for w, others, rest in [(w, b, left_b) for w in left_a] + [(w, a, left_a) for w in left_b]:
            score, match = best(w, rest)
            if rest and (score < cfg.substitution_similarity or self._one_kind(w.surface, match.surface)
                         or self._known_apart(w.surface, match.surface)):
                return f"substitution:{w.surface}"  # the other side has its own unmatched word
            if not rest and best(w, others)[0] < cfg.addition_similarity:
                return f"addition:{w.surface}"
        return None


_PRESENT = frozenset({"now", "currently", "nowadays"})
# Verbs that negate, reverse or undo what follows them, even where WordNet lists no antonym.
_REVERSING = frozenset("""
skip cancel cancell remov delet undo revers stop quit avoid prevent refus fail ignor deny forget lack miss lose
exclud omit reduc limit replac disabl uninstall unsubscrib withdraw return reject
""".split())

_DURATIONS = frozenset("second seconds minute minutes hour hours day days week weeks month months year years".split())


def _how_long(text: str, own: list[Word], other: list[Word]) -> list[Word]:
    """`own` without its "long" when it asks "how long" and the other side names the duration instead
    ("How many minutes do I boil an egg?"); the duration word goes from `other` in place (a number with
    it is the guards' business)."""
    if "how long" not in " ".join(tokens(text)) or not any(w.surface in _DURATIONS for w in other):
        return own
    other[:] = [w for w in other if w.surface not in _DURATIONS]
    return [w for w in own if w.surface != "long"]


_LONG_STOPWORDS = frozenset(w for w in STOPWORDS if len(w) >= 4)
# Derivational endings: "different" / "difference" / "differ", "percent" / "percentage".
_DERIVATIONAL = ("ation", "ence", "ance", "ment", "ness", "ical", "ally", "ity", "ent", "ant", "age", "ive",
                 "al", "ic", "ly", "e")
_MIN_ROOT = 6  # "gener(al)" / "gener(ation)" are not one word


def _root(word: str) -> str:
    for suffix in _DERIVATIONAL:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_ROOT:
            return word[:-len(suffix)]
    return word


def _derived(x: str, y: str) -> bool:
    """One word derived from the other, or both from one root of at least six letters."""
    if x.isdigit() or y.isdigit() or _opposite(x, [y]):
        return False
    rx, ry = _root(x), _root(y)
    return len(rx) >= _MIN_ROOT and rx == ry


def opposite_words(query: str, candidate: str) -> bool:
    """A content word of one is a content word of the other with a negating prefix ("sorted" / "unsorted")."""
    b = [w.surface for w in content_words(candidate)]
    return any(_opposite(w.surface, b) for w in content_words(query))


def _opposite(word: str, others: list[str]) -> bool:
    """`word` is one of `others` with a negating prefix, or the other way round."""
    for other in others:
        longer, shorter = (word, other) if len(word) > len(other) else (other, word)
        if any(longer == p + shorter for p in _NEGATING_PREFIXES) and len(shorter) >= 4:
            return True
    return False


_NEGATIONS = frozenset({"not", "n't"})
_PREPOSITIONS = frozenset("for in on at by with without from of into about".split())
_ARTICLES = frozenset({"a", "an", "the"})


def _swapped(query: str, candidate: str) -> bool:
    """The same sentence with two spans traded: "Is every square a rectangle?" / "Is every rectangle a
    square?". Only this minimal edit counts: a paraphrase that moves a clause or turns to the passive
    ("The Mona Lisa was painted by whom?") changes the words around the spans too."""
    # Negations leave the comparison ("isn't my refund" / "is my refund not" is the negation guard's
    # business), and so may articles ("a prime" / "an odd number"; but "type A" / "type O" keeps its "a").
    ta = [t for t in tokens(query) if t not in _NEGATIONS]
    tb = [t for t in tokens(candidate) if t not in _NEGATIONS]
    return _one_swap(ta, tb) or _one_swap([t for t in ta if t not in _ARTICLES], [t for t in tb if t not in _ARTICLES])


def _one_swap(a: list[str], b: list[str]) -> bool:
    if len(a) != len(b) or a == b:
        return False
    lo = next(i for i in range(len(a)) if a[i] != b[i])
    hi = max(i for i in range(len(a)) if a[i] != b[i]) + 1
    mid_a, mid_b = a[lo:hi], b[lo:hi]
    for x in range(1, 4):
        for y in range(1, 4):
            if x + y <= len(mid_a) and mid_b == mid_a[len(mid_a) - y:] + mid_a[x:len(mid_a) - y] + mid_a[:x]:
                return True
    return False


# Subject and object forms of each person: "Can my cat give me ringworm?" / "Can I give my cat ringworm?"
_PERSONS = (("i", "me"), ("we", "us"), ("he", "him"), ("she", "her"), ("they", "them"))


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
