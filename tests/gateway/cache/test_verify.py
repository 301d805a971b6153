"""The verifier after retrieval: each hard-negative class is refused, paraphrases pass. Cases written for
these tests (not taken from the evaluation corpus)."""
import pytest

from gateway.cache.alignment import Aligner, AlignmentConfig
from gateway.cache.phrasing import plain
from gateway.cache.verify import Verifier
from gateway.cache.word_vectors import WordVectors
from gateway.cache.words import content_words, edit_distance, stem


@pytest.fixture(scope="module")
def verifier(embedder) -> Verifier:
    def similarity(a: str, b: str) -> float:
        x, y = embedder.embed([a, b])
        return float(x @ y)
    return Verifier(Aligner(WordVectors(embedder)), similarity=similarity)


@pytest.mark.parametrize("kind,stored,asked", [
    ("entity", "Is it safe for my hamster to eat carrots?", "Is it safe for my ferret to eat carrots?"),
    ("entity", "How often should I feed a goldfish?", "How often should I feed a turtle?"),
    ("attribute", "What is the boiling point of ethanol?", "What is the density of ethanol?"),
    ("attribute", "What is the memory footprint of a linked list?", "What is the lookup cost of a linked list?"),
    ("time", "Which trains run on Sunday mornings?", "Which trains run on Sunday evenings?"),
    ("time", "What was the inflation rate last quarter?", "What was the inflation rate this decade?"),
    ("number", "How many grams of sugar are in 3 cups of flour?", "How many grams of sugar are in 4 cups of flour?"),
    ("unit", "How many liters are in a gallon?", "How many cups are in a gallon?"),
    ("negation", "Which foods are gluten-free?", "Which foods are not gluten-free?"),
    ("negation", "Is this array mutable?", "Is this array immutable?"),
    ("comparative", "Which planet has the strongest gravity?", "Which planet has the weakest gravity?"),
    ("role reversal", "Is every prime an odd number?", "Is every odd number a prime?"),
    ("role reversal", "Does the tenant pay the landlord a deposit?", "Does the landlord pay the tenant a deposit?"),
    ("scope", "How do I read a file line by line in rust?", "How do I read a file line by line in golang?"),
    ("scope", "What vaccines does a puppy need?", "What vaccines does an adult dog need?"),
    ("entity", "Where can I buy a book?", "Where can I buy a notebook?"),
    ("entity", "How big does a mouse get?", "How big does a moose get?"),  # typed with care: two animals  # a word inside another is no compound
    ("role reversal", "Does my landlord owe me money?", "Do I owe my landlord money?"),  # pronoun roles
    ("role reversal", "Can a type B donor give to type AB?", "Can a type AB donor give to type B?"),
    ("comparative", "What is the most visited museum in Paris?", "What is the least visited museum in Paris?"),
    ("time", "What were the tax brackets this year?", "What were the tax brackets last year?"),  # "this" + period
    ("time", "Is Kyoto crowded in the fall?", "Is Kyoto crowded in spring?"),  # seasons where a time fits
    ("time", "What was the price of gold in 2010?", "What is the price of gold now?"),  # "now" against a time
    ("time", "What was the jobless rate last month?", "What was the jobless rate this month?"),
    ("scope", "How do I lose weight safely?", "How do I lose weight?"),  # a manner adverb narrows
    ("scope", "What's a good gaming laptop?", "What's a good laptop?"),  # so does a noun
    ("entity", "Can crocodiles swim in salt water?", "Can alligators swim in salt water?"),  # WordNet kin
    ("comparative", "How deep is the Black Sea?", "How shallow is the Black Sea?"),  # WordNet opposites
    ("negation", "Which glues are toxic to fish?", "Which glues are non-toxic to fish?"),  # a prefix apart
    ("comparative", "What's the top-rated phone of 2020?", "What's the lowest-rated phone of 2020?"),  # parts
    ("role reversal", "If my roommate's dog bites my cat, who pays the vet?",
     "If my dog bites my roommate's cat, who pays the vet?"),  # one noun moved to another owner
    ("scope", "Where can I study statistics?", "Where can I study statistics for free?"),  # no verb after "for"
    ("negation", "Should I take ibuprofen with food?", "Should I stop taking ibuprofen with food?"),  # a verb
    ("negation", "Can I claim the deposit on my taxes?", "Can I skip the deposit on my taxes?"),  # that reverses
    ("unit", "How long should I steam broccoli?", "How many calories does steamed broccoli have?"),
    ("unit", "How many minutes should I steam broccoli?", "How many hours should I steam broccoli?"),
    ("time", "Can I drink coffee during pregnancy?", "Can I drink coffee after pregnancy?"),
    ("time", "Should I stretch before a run?", "Should I stretch after a run?"),
    ("comparative", "What's the best way to travel from Rome to Naples?",
     "What's the cheapest way to travel from Rome to Naples?"),  # another "way" is another question
    ("role reversal", "How do I convert a string and an int to a list?",
     "How do I convert a list and an int to a string?"),  # listed, but the sentence directs them
    ("role reversal", "Is it rude if my boss calls me on weekends?", "Is it rude if I call my boss on weekends?"),
    ("role reversal", "Can I move from a two-year lease to a month-to-month one?",
     "Can I move from a month-to-month lease to a two-year one?"),  # hyphenated spans
    ("negation", "Should I vote for the new zoning law?", "Should I vote against the new zoning law?"),  # stance
    ("negation", "What are the pros of remote schooling?", "What are the cons of remote schooling?"),
    ("role reversal", "What do hawks prey on?", "What preys on hawks?"),  # the question word's role
    ("role reversal", "Who pays if my tenant broke my window?", "Who pays if I broke my tenant's window?"),
])
def test_hard_negatives_are_refused(verifier, kind, stored, asked):
    assert verifier.refusal(asked, stored) is not None, kind


@pytest.mark.parametrize("stored,asked", [
    ("How do I delete a branch in git?", "How can I remove a git branch?"),  # synonyms, word order
    ("What causes thunder?", "What triggers thunder?"),
    ("Why doesn't my laptop charge?", "why doesnt my laptop charge"),  # contraction without apostrophe
    ("Why isn't the printer working?", "Why is the printer not working?"),
    ("How do I configure my router?", "How do I configure my ruoter?"),  # a typo
    ("Could you please tell me how to boil an egg?", "how to boil an egg"),  # register
    ("How do I turn on dark mode?", "How do I enable dark mode?"),  # phrasal verb
    ("What is a greenhouse gas?", "What is a green house gas?"),  # compound
    ("From Porto, how do I get to Braga?", "How do I get to Braga from Porto?"),  # a clause moved, roles kept
    ("Why is the upload stuck at 42%?", "why is the upload stuck at 42 percent"),
    ("How do I purchase stamps online?", "How do I buy stamps online?"),
    ("What is Boyle's law?", "State Boyle's law."),  # an imperative opener restates
    ("What are the rules of chess?", "Can you state the rules of chess?"),
    ("Where is the Eiffel Tower?", "Where is the Eiffel Tower located?"),  # an added verb
    ("What is the difference between weather and climate?", "How is weather different from climate?"),
    ("How do I cancel a self-assessment return?", "How do I cancel a self assessment return?"),  # hyphen
    ("What is a hedge fund?", "wat is a hedge fund"),  # chat shorthand
    ("What percentage of the body is water?", "What percent of the body is water?"),
    ("Dear assistant, how do I descale a kettle?", "yo how do i descale a kettle"),  # frames and slang
    ("How do I clean an oven without baking soda?", "how do i clean an oven w/o baking soda"),
    ("Why do birds migrate in autumn?", "Why do birds migrate in the fall?"),
    ("Is it possible to freeze fresh pasta?", "Can I freeze fresh pasta?"),
    ("My toddler swallowed a coin. What should I do?", "My toddler swallowed a coin. What should I do now?"),
    ("Should I water succulents twice a week?", "Should I water succulents two times a week?"),
    ("How long should I steam broccoli?", "How many minutes should I steam broccoli?"),  # the duration asked
    ("When did the Second Punic War end?", "When did the second Punic War end?"),  # an ordinal, not seconds
    ("Why did the invasion of Crete fail?", "Why did invading Crete fail?"),  # a derived form
    ("Is olive oil good for frying?", "Is olive oil effective for frying?"),  # common synonyms
    ("What led to the French Revolution?", "What caused the French Revolution?"),
    ("Why does my cat keep throwing up?", "Why does my cat keep vomiting?"),
    ("How do I sort files from biggest to smallest?", "How do I sort files in descending order?"),
    ("My flight was overbooked. What are my options?", "My flight was overbooked. What can I do?"),
    ("Should I whisk the custard the whole time?", "Should I whisk the custard constantly?"),
    ("When did the Boston Tea Party take place?", "When did the Boston Tea Party happen?"),
    ("What is the role of the spleen?", "What does the spleen do?"),
    ("What's the difference between baking soda and yeast?", "What's the difference between yeast and baking soda?"),
    ("Why did my bread fail to rise?", "Why did my bread not rise?"),
    ("How do I change the name of a column in pandas?", "How do I rename a column in pandas?"),
    ("How do I add an item to a JavaScript array?", "How do I append an element to a JavaScript array?"),
    ("What goes on inside a black hole?", "What happens inside a black hole?"),
    ("How do I descale a kettle?", "What's the best way to descale a kettle?"),  # an evaluative "way to"
    ("I'd appreciate some guidance on writing a eulogy.", "how do i write a eulogy"),
    ("Any tips for potty training a puppy?", "How do I potty train a puppy?"),  # request nouns and verbs
    ("Which knife should be used for filleting fish?", "Which knife should I use to fillet fish?"),
    ("How do I get my money back for a broken kettle?", "How do I get a refund for a faulty kettle?"),  # everyday
    ("Why is my bathroom tap dripping?", "Why is my bathroom faucet leaking?"),  # synonyms
    ("Can I put my luggage in the attic?", "Can I put my baggage in the loft?"),
    ("What is the origin of the word 'robot'?", "Where does the word 'robot' come from?"),  # a question form
    ("whats up with daylight saving time", "How does daylight saving time work?"),
    ("How do I sort a list in Python?", "how do i srot a list in pyhton"),  # real-word-free typos
    ("How do I wax my skis?", "how do i wxa my skis"),  # two neighbours swapped in a short word
    ("Can I lose weight by walking?", "can i loose wieght by walking"),  # a real-word typo among typos
])
def test_paraphrases_pass(verifier, stored, asked):
    assert verifier.refusal(asked, stored) is None


@pytest.mark.parametrize("stored,asked,ok", [
    ("I'm cooking a lamb curry.", "I'm cooking a vegetable soup.", False),
    ("Let's talk about Jupiter.", "Let's talk about Saturn.", False),
    ("My dataset is sorted.", "My dataset is unsorted.", False),
    ("I get paid monthly.", "I get paid every week.", False),  # a period traded
    ("I'm baking bread with whole wheat flour.", "I'm baking bread with rye flour.", False),  # WordNet kin
    ("My hamster has mites.", "My parrot has mites.", False),  # one noun traded, the rest the same
    ("I'm entering a doubles badminton tournament.", "I'm entering a singles badminton tournament.", False),
    ("I have a 3-month-old son.", "I have a 3-year-old son.", False),
    ("My 3-month-old son has a cough.", "My son is 3 months old and has a cough.", True),
    ("I'm writing a mystery novel.", "I'm working on a mystery novel.", True),  # a verb traded rewords
    ("I have a Dell XPS 13 laptop.", "My laptop is an XPS 13 from Dell.", True),
    ("My 2019 Toyota Corolla rattles at idle.", "My 2019 Corolla rattles when idling.", True),  # the maker
    ("My Flask.py app serves JSON.", "My Flask app serves JSON.", True),
    ("I drive a Toyota Corolla.", "I drive a Honda Corolla.", False),  # another maker
    ("My iPhone 15 Pro overheats.", "My iPhone 15 overheats.", False),  # a name after: another model
    ("I own the house I live in.", "I rent the house I live in.", False),  # an owner is not a tenant
])
def test_earlier_turns_must_set_the_same_scene(verifier, stored, asked, ok):
    assert (verifier.context_refusal(asked, stored) is None) is ok


def test_a_pair_matched_on_word_vectors_alone_needs_the_vector_floor(embedder):
    verifier = Verifier(Aligner(WordVectors(embedder)), vector_floor=0.75)
    stored, asked = "Who painted The Starry Night?", "The Starry Night was painted by which artist?"
    assert verifier.aligner.judge(asked, stored) == (None, True)  # "artist" is near "painted": the embedder's
    assert verifier.refusal(asked, stored, score=0.70) == "align:vectors"
    assert verifier.refusal(asked, stored, score=0.80) is None and verifier.refusal(asked, stored) is None
    words = ("How can I remove a git branch?", "How do I delete a branch in git?")  # synonyms, WordNet's
    assert verifier.aligner.judge(*words) == (None, False) and verifier.refusal(*words, score=0.61) is None


def test_guards_alone_without_an_aligner():
    bare = Verifier(None)
    assert bare.refusal("Can dogs eat grapes?", "Can cats eat grapes?") is None  # the class the guards miss
    assert bare.refusal("What is 2+3?", "What is 2+4?") == "numbers"


def test_phrasing_drops_courtesy_and_spells_out_shorthand():
    assert plain("If you don't mind, how do u reset it?") == "how do you reset it?"
    assert plain("Hello! Could you please explain DNS?") == "DNS?"
    assert plain("why cant i log in") == "why can't i log in"
    assert plain("whats the deal with daylight saving time?") == "how does daylight saving time work?"
    assert plain("What makes a rainbow happen?") == "what causes a rainbow?"
    assert plain("Where'd the word 'robot' come from?") == "what is the origin of the word 'robot'?"


def test_content_words_and_stems():
    assert [w.stem for w in content_words("What's the best way to reset passwords?")] == ["best", "reset", "password"]
    assert stem("changing") == stem("change") and stem("boxes") == stem("box")
    assert edit_distance("recieve", "receive", 2) == 1 and edit_distance("abc", "xyz", 1) == 2
    assert content_words("What happened yesterday?")[-1].closed_class == "time"


def test_alignment_config_is_validated():
    with pytest.raises(ValueError):
        AlignmentConfig(substitution_similarity=2.0)
    with pytest.raises(ValueError):
        AlignmentConfig(typo_min_length=0)


class _NearVectors:
    """Every two words at cosine 0.9: what the embedder says of 'jogging' / 'running' and the like."""

    def known(self, word: str) -> bool:
        return True

    def vectors(self, words):
        import numpy as np

        base = np.array([1.0, 0.0], dtype=np.float32)
        return {w: base if i % 2 == 0 else np.array([0.9, 0.43588989], dtype=np.float32)
                for i, w in enumerate(dict.fromkeys(words))}


def test_the_embedder_alone_does_not_make_two_dictionary_words_one():
    stored, asked = "Is jogging bad for your knees?", "Is running bad for your knees?"
    assert Aligner(_NearVectors()).refusal(asked, stored) == "substitution:running"  # WordNet keeps them apart
    assert Aligner(_NearVectors(), AlignmentConfig(vectors_over_wordnet=True)).refusal(asked, stored) is None
    # Words WordNet lacks (names, jargon) are still the embedder's call.
    assert Aligner(_NearVectors()).refusal("How do I use pydantic?", "How do I use attrs?") is None


def test_seasons_are_times_only_where_a_time_fits():
    def times(text):
        return [w.surface for w in content_words(text) if w.closed_class == "time"]
    assert times("What caused the fall of the Mayan civilization?") == []
    assert times("How do I fix a spring in my mattress?") == []
    assert times("Why do birds migrate in the fall?") == ["fall"]
    assert times("Is Kyoto crowded in spring?") == ["spring"]


def test_the_alignment_also_reads_the_questions_mended(embedder):
    """A typo the alignment's own one-edit rule misses ("lisence": two letters traded) passes once the
    speller has mended it; a mended reading never makes a refused pair of real words pass."""
    stored, asked = "How do I renew my driver's license online?", "how do i renew my drivers lisence online"
    mend = {asked: "how do i renew my drivers license online"}
    plain_verifier = Verifier(Aligner(WordVectors(embedder)))
    mended_verifier = Verifier(Aligner(WordVectors(embedder)), mend=lambda text: mend.get(text, text))
    assert plain_verifier.refusal(asked, stored) is not None
    assert mended_verifier.refusal(asked, stored) is None
    assert mended_verifier.refusal("How do I renew my passport online?", stored) is not None
