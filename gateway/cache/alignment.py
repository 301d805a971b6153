"""Aligning two questions' content words: each word must find its equivalent on the other side.

A word matches when the stems or roots are equal ("differ" / "different"), when both sit in one synonym
group (lexicon.SYNONYM_GROUPS) or share a synset among their first senses in WordNet (wordnet.py), when
one is a typo of the other (a short edit distance, and at least one of them not a dictionary word: "mouse"
and "moose" are both words, so neither is a typo), or, for words WordNet lacks, when the embedder finds
the two near-synonyms (WordVectors). What is left unmatched is a substitution (a word on each side: "dog"
for "cat", "time" for "space") or an addition (one side only: "in reverse"). Either refuses the hit,
except an addition the embedder finds close to a word of the other side ("capital city" for "capital") or
one restating verb ("Where is it located?"). A closed-class word (a time, a degree) or a negating prefix
left unmatched always refuses; so does an order that trades roles (order.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from gateway.cache.lexicon import STOPWORDS, SYNONYM_GROUPS
from gateway.cache.order import order_changed
from gateway.cache.word_vectors import WordVectors
from gateway.cache.wordnet import WordNet, shared
from gateway.cache.words import Word, content_words, edit_distance, stem, tokens

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
        return self.judge(query, candidate)[0]

    def judge(self, query: str, candidate: str) -> tuple[str | None, bool]:
        """(refusal() of the pair, whether accepting it took the embedder's word vectors: a word matched only
        by the embedder's nearness, which the caller may want backed by the questions' own cosine)."""
        a, b = content_words(query), content_words(candidate)
        left_a = [w for w in a if not any(self._same(w, x) for x in b) and not self._noise(w, a, b)]
        left_b = [w for w in b if not any(self._same(w, x) for x in a) and not self._noise(w, b, a)]
        left_a = _how_long(query, left_a, left_b)
        left_b = _how_long(candidate, left_b, left_a)
        left_a, left_b = self._real_word_typos(a, b, left_a, left_b)
        for w in left_a + left_b:
            if w.surface in _NEGATING_WORDS or _opposite(w.surface, [x.surface for x in (b if w in left_a else a)]):
                return "negation", False
        if not any(w.closed_class == "time" for w in a + b if w.surface not in _PRESENT):
            # "What should I do now?" asks what "What should I do?" does: the present is the default.
            left_a = [w for w in left_a if w.surface not in _PRESENT]
            left_b = [w for w in left_b if w.surface not in _PRESENT]
        for w in left_a + left_b:
            if w.closed_class:
                return w.closed_class, False
        if _temporal_traded(query, candidate):
            return "time", False
        if _stance_traded(query, candidate):
            return "polarity", False
        if bool(left_a) != bool(left_b) and len(left_a + left_b) <= self.config.free_additions \
                and all(self._light(w, tokens(query if left_a else candidate)) for w in left_a + left_b):
            left_a, left_b = [], []
        if len(left_a) + len(left_b) > self.config.max_unmatched:
            return (f"substitution:{(left_a or left_b)[0].surface}" if left_a and left_b else
                    f"addition:{(left_a or left_b)[0].surface}"), False
        by_vectors = bool(left_a or left_b)
        if by_vectors:
            reason = self._by_vectors(a, b, left_a, left_b)
            if reason:
                return reason, True
        usual_pos = self.wordnet.usual_pos if self.wordnet is not None else None
        if order_changed(query, candidate, usual_pos):
            return "order", by_vectors
        return None, by_vectors

    def closed_class_traded(self, query: str, candidate: str) -> bool:
        """Each side has a time or period the other lacks ("paid weekly" / "paid twice a month")."""
        a, b = content_words(query), content_words(candidate)
        left_a = [w for w in a if w.closed_class and not any(self._same(w, x) for x in b)]
        left_b = [w for w in b if w.closed_class and not any(self._same(w, x) for x in a)]
        return bool(left_a and left_b)

    def one_noun_traded(self, query: str, candidate: str) -> bool:
        """Each side has exactly one content word the other lacks, both nouns (or names WordNet lacks) or
        both adjectives, and the rest is the same: the minimal edit of a hard negative ("My cat has fleas." / "My
        rabbit has fleas.", "a singles match" / "a doubles match"). A traded verb is how scenes get
        reworded ("I'm writing" / "I'm working on")."""
        left_a, left_b = self._unmatched(query, candidate)
        if len(left_a) != 1 or len(left_b) != 1:
            return False
        if self.wordnet is None:
            return True
        ta, tb = tokens(query), tokens(candidate)

        def pos(w: Word, toks: list[str]) -> str:
            if w.position > 0 and toks[w.position - 1] in _DETERMINERS:
                return "noun"  # "a doubles match": a noun or a noun's modifier, whatever its usual use
            return self.wordnet.usual_pos(w.surface) or "noun"  # a name WordNet lacks: a noun

        kinds = {pos(left_a[0], ta), pos(left_b[0], tb)}
        return kinds in ({"noun"}, {"adj"})  # "female" / "girl": a rewording

    def kind_traded(self, query: str, candidate: str) -> bool:
        """A word of one side is traded for another thing of the same kind on the other (WordNet kin or
        opposites: "whole wheat flour" / "rye flour"), whatever else was reworded."""
        left_a, left_b = self._unmatched(query, candidate)
        return any(self._one_kind(x.surface, y.surface) for x in left_a for y in left_b)

    def _unmatched(self, query: str, candidate: str) -> tuple[list[Word], list[Word]]:
        """Each side's content words with no equivalent on the other (no noise allowance)."""
        a, b = content_words(query), content_words(candidate)
        return [w for w in a if not any(self._same(w, x) for x in b)], \
            [w for w in b if not any(self._same(w, x) for x in a)]

    def prepare(self, text: str) -> None:
        """Embed the text's content words now (the table keeps them for later lookups)."""
        self.vectors.vectors([w.surface for w in content_words(text)])

    def _same(self, x: Word, y: Word) -> bool:
        if x.stem == y.stem or x.surface == y.surface or y.stem in _SYNONYMS.get(x.stem, ()):
            return True
        if self._typo(x.surface, y.surface) or _derived(x.surface, y.surface):
            return True
        return self.wordnet is not None and not (x.closed_class or y.closed_class) \
            and not (x.surface.isdigit() or y.surface.isdigit()) \
            and (self.wordnet.synonyms(x.surface, y.surface) or self.wordnet.derived(x.surface, y.surface))

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

    def _real_word_typos(self, a: tuple[Word, ...], b: tuple[Word, ...], left_a: list[Word],
                         left_b: list[Word]) -> tuple[list[Word], list[Word]]:
        """The two sides without the dictionary words one edit apart ("sting" / "string", "loose" / "lose"),
        when a side also has a word no dictionary knows: a question typed with typos has its real-word
        typos too. Asked with care ("mouse" / "moose"), the two words are two things."""
        if not left_a or not left_b or not (self._noisy(a) or self._noisy(b)):
            return left_a, left_b
        for x in list(left_a):
            y = next((y for y in left_b if self._one_slip(x, y)), None)
            if y is not None:
                left_a.remove(x)
                left_b.remove(y)
        return left_a, left_b

    def _noisy(self, words: tuple[Word, ...]) -> bool:
        return any(len(w.surface) >= self.config.typo_min_length and w.surface.isalpha()
                   and not self.vectors.known(w.surface) and not (self.wordnet and self.wordnet.known(w.surface))
                   for w in words)

    def _one_slip(self, x: Word, y: Word) -> bool:
        return not (x.closed_class or y.closed_class) and self._typo(x.surface, y.surface, real_words=True)

    def _typo(self, x: str, y: str, real_words: bool = False) -> bool:
        """One edit apart (two in long words), and not both dictionary words unless `real_words` (then one
        edit only)."""
        shortest = min(len(x), len(y))
        if shortest == 3 and len(x) == len(y) and sorted(x) == sorted(y) and x != y \
                and not (self.vectors.known(x) and self.vectors.known(y)) and edit_distance(x, y, 1) <= 1:
            return True  # two neighbours swapped in a short word ("fxi" / "fix")
        if shortest < self.config.typo_min_length or x.isdigit() or y.isdigit() or _opposite(x, [y]):
            return False
        if real_words:
            return edit_distance(x, y, 1) <= 1
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
# When something happens relative to another: "before" / "after" / "during pregnancy" are three questions.
# "during" alone may be "in" ("damaged during shipping"), so only a trade or an added ordering refuses.
_TEMPORAL = frozenset({"before", "after", "during", "until", "since", "while"})
_ORDERING = frozenset({"before", "after", "until", "since"})


def _temporal_traded(query: str, candidate: str) -> bool:
    ta = sorted(t for t in tokens(query) if t in _TEMPORAL)
    tb = sorted(t for t in tokens(candidate) if t in _TEMPORAL)
    if ta == tb:
        return False
    return bool(ta and tb) or bool(_ORDERING & set(ta + tb))


def _stance_traded(query: str, candidate: str) -> bool:
    """"for" on one side where the other says "against": "the arguments for / against a four-day week"."""
    ta, tb = tokens(query), tokens(candidate)
    against = ta.count("against") - tb.count("against")
    return against != 0 and (tb.count("for") - ta.count("for")) * against > 0


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


_PREPOSITIONS = frozenset("for in on at by with without from of into about".split())
_DETERMINERS = frozenset("a an the my your his her our their its this that these those".split())
