"""The guards: each fact that flips an answer, read by its library, vetoes a pair whose sides disagree on it;
a word missing on one side is left to the judge. Cases written for these tests."""
import pytest

from gateway.cache.guards import facts, first_disagreement, misspelt_only, shared_lexicon


@pytest.fixture(scope="module")
def lexicon():
    lexicon = shared_lexicon()
    lexicon.load()
    return lexicon


@pytest.mark.parametrize("guard,a,b", [
    ("numbers", "What is 2+3?", "What is 2+4?"),
    ("numbers", "How many calories are in two eggs?", "How many calories are in 3 eggs?"),  # words and digits
    ("numbers", "Who won the cup in 1998?", "Who won the cup in 2002?"),
    ("units", "How many cups are in a gallon?", "How many liters are in a gallon?"),
    ("units", "Convert 5 miles to yards", "Convert 5 miles to meters"),
    ("negation", "Which foods are gluten-free?", "Which foods are not gluten-free?"),
    ("negation", "Why does my laptop charge?", "why doesnt my laptop charge"),
    ("antonyms", "Is port 6379 open?", "Is port 6379 closed?"),
    ("antonyms", "How do I increase my heart rate?", "How do I decrease my heart rate?"),
    ("antonyms", "What's the best phone of 2020?", "What's the worst phone of 2020?"),
    ("entities", "How do I install Docker on Ubuntu?", "How do I install Docker on Fedora?"),
    ("entities", "Who painted the ceiling of the Sistine Chapel?", "Who painted the ceiling of the Scrovegni Chapel?"),
    ("roles", "How do I migrate from MySQL to PostgreSQL?", "How do I migrate from PostgreSQL to MySQL?"),
    ("roles", "Can I use butter instead of oil?", "Can I use oil instead of butter?"),
])
def test_a_disagreement_is_vetoed_by_its_guard(lexicon, guard, a, b):
    assert first_disagreement(a, b, lexicon) == guard
    assert first_disagreement(b, a, lexicon) == guard


@pytest.mark.parametrize("a,b", [
    ("How many teaspoons are in a tablespoon?", "How many teaspoons make up one tablespoon?"),  # "one" is "a"
    ("Should I water succulents two times a week?", "Should I water succulents 2 times a week?"),
    ("Why isn't the printer working?", "Why is the printer not working?"),
    ("Is it over 30 degrees in Rome?", "is it over thirty degrees in rome"),  # lower case, number words
    ("Do I need a visa for the US?", "Do I need a visa for the United States?"),  # initials
    ("How do I sort a list in Python?", "how do i sort a list in pyhton"),  # a misspelt name
    ("How long should I steam broccoli?", "How many minutes should I steam broccoli?"),  # a unit on one side
    ("From Porto, how do I get to Braga?", "How do I get to Braga from Porto?"),  # a clause moved, not traded
])
def test_rewordings_pass_every_guard(lexicon, a, b):
    assert first_disagreement(a, b, lexicon) is None
    assert first_disagreement(b, a, lexicon) is None


def test_facts(lexicon):
    f = facts("Is it 5 km from the Eiffel Tower to the Louvre? I don't know", lexicon)
    assert f.numbers == {"5": 1} and f.units == {"kilometer"} and f.negations == 1
    assert f.entities == {"eiffel", "tower", "louvre"} and "et" in f.acronyms
    assert facts("The second president, once", lexicon).numbers == {"2": 1}  # English only: "once" is no 11
    assert facts("Where are my bags?", lexicon).units == frozenset()  # words pint knows that are not units here


@pytest.mark.parametrize("a,b", [
    ("How do I handle exceptions in Java?", "how do i handle exeptions in java"),
    ("What is the recommended dosage of ibuprofen?", "whats the recomended dosage of ibuprofen"),
    ("Can I water succulents every day?", "can i water succulents everyday"),  # the same letters, joined
])
def test_misspellings_only(a, b):
    assert misspelt_only(a, b) and misspelt_only(b, a)


@pytest.mark.parametrize("a,b", [
    ("How do I add a column in a dataframe?", "How do I drop a column in a dataframe?"),
    ("Does my son need a bigger helmet?", "Does my son need a smaller helmet?"),
    ("How do I cook frozen peas?", "How do I reheat frozen peas?"),
    ("How do I handle exceptions in Java?", "How do I handle exceptions in Java quickly?"),  # a word added
])
def test_a_traded_or_added_word_is_not_a_misspelling(a, b):
    assert not misspelt_only(a, b) and not misspelt_only(b, a)
