import pytest

from gateway.cache.guards import (GUARDS, entities_agree, features, first_disagreement, negation_agrees,
                                  numbers_agree, polarity_agrees, units_agree)


def agree(guard, a: str, b: str) -> bool:
    return guard(features(a), features(b))


@pytest.mark.parametrize("a,b,ok", [
    ("What is 1+1?", "What is 21+1?", False),
    ("What is 2+3?", "What is 2+4?", False),
    ("What is 2+3?", "What is 2*3?", False),
    ("What is 2+3?", "What's 2 + 3?", True),
    ("What is twenty five plus 3?", "What is 25 + 3?", True),
    ("How many days in five weeks?", "How many days in 5 weeks?", True),
    ("Is port 6379 open?", "Is port 6380 open?", False),
    ("Upgrade from 3.11 to 3.12", "Upgrade from 3.12 to 3.11", False),
    ("Send 1,000 credits", "Send 1000 credits", True),
    ("Which one is cheaper?", "Which is cheaper?", True),
    ("Sort 1 million rows", "Sort one million rows", True),
    ("Sort 2 million rows", "Sort 2 thousand rows", False),
    ("Bake a cake to serve eight.", "Bake a cake for 8", True),  # a full stop after the number word
    ("What is 12 multiplied by 17?", "What is 12 times 17?", True),  # the number after a two-word operator
    ("What is 12 multiplied by 17?", "What is 12 multiplied by 71?", False),
    ("Two loans, one at 4% and one at 6%.", "Two loans at 4% and 6%.", True),  # "one" for a thing named
    ("Can I merge the two files into one?", "Can I merge the two files?", True),
    ("What is two plus one?", "What is two plus?", False),  # the end of a sum is a number
    ("Can I bring one bag?", "Can I bring two bags?", False),
    ("Should I send the broken one back?", "Should I return the damaged one?", True),
    ("What is one plus one?", "What is one plus two?", False),
    ("What is the derivative of x squared?", "What is the derivative of x²?", True),
    ("What is 7 squared?", "What is 7^2?", True),
    ("What is the derivative of x squared?", "What is the derivative of x cubed?", False),
])
def test_numbers(a, b, ok):
    assert agree(numbers_agree, a, b) is ok


@pytest.mark.parametrize("a,b,ok", [
    ("Convert 5 miles to km", "Convert 5 km to miles", False),
    ("Convert 5 miles to km", "What is 5 miles in km?", True),
    ("Convert miles to km", "Convert km to miles", False),
    ("How much is $100 in EUR?", "How much is 100 USD in EUR?", True),
    ("How many GB is 4096 MB?", "How many MB is 4096 GB?", False),
    ("Convert 5 kg to pounds", "Convert 5 kilograms to lbs", True),
    ("I have had a cough for three weeks.", "For 3 weeks I have had a cough", True),
    ("How many cups are in a gallon?", "In a gallon, how many cups are there?", True),  # each keeps its "in"
    ("How many cups are in a gallon?", "How many gallons are in a cup?", False),
    ("Convert cups to gallons", "To gallons, convert cups", True),
])
def test_units(a, b, ok):
    assert agree(units_agree, a, b) is ok


@pytest.mark.parametrize("a,b,ok", [
    ("Can I get a refund?", "Can't I get a refund?", False),
    ("Is shipping included?", "Is shipping not included?", False),
    ("Why can't I log in?", "Why am I unable to log in?", True),
    ("Is it free?", "Isn't it not free?", True),  # two negations cancel
])
def test_negation(a, b, ok):
    assert agree(negation_agrees, a, b) is ok


@pytest.mark.parametrize("a,b,ok", [
    ("Is port 6379 open?", "Is port 6379 closed?", False),
    ("How do I enable 2FA?", "How do I disable 2FA?", False),
    ("How do I turn on alerts?", "How do I switch off alerts?", False),
    ("How do I turn on alerts?", "How do I enable alerts?", True),
    ("Raise the limit", "Decrease the limit", False),
    ("Take it before eating?", "Take it after eating?", False),
    ("How do I log in?", "How do I log out?", False),
    ("How do I enable dark mode?", "How can dark mode be switched on?", True),
    ("Is the port open?", "What is the port?", True),  # only one side mentions the concept
    ("What are the advantages of solar panels?", "What are the drawbacks of solar panels?", False),
    ("Can my landlord enter without notice?", "Can the owner of my flat enter without notice?", True),
    ("Can a tenant paint the walls?", "Can a homeowner paint the walls?", False),
])
def test_polarity(a, b, ok):
    assert agree(polarity_agrees, a, b) is ok


@pytest.mark.parametrize("a,b,ok", [
    ("What is the capital of France?", "What is the capital of Germany?", False),
    ("What is the capital of France?", "what is the capital of france", True),  # lower-case still matches
    ("Is Paris bigger than London?", "Is London bigger than Paris?", False),
    ("Where is the redis.conf file?", "Where is the nginx.conf file?", False),
    ('What does "--force" do?', 'What does "--dry-run" do?', False),
    ("What does `max_connections` do?", "What does `max_conn` do?", False),
    ("How do I install Docker on Ubuntu?", "How can I install Docker on Ubuntu?", True),
    ("Reset my AWS key", "Reset my GCP key", False),
    ("Paris weather today?", "What is the weather in Paris today?", True),  # sentence-initial name
    ("Who was Charlemagne?", "who was charlemange", True),  # a misspelt name, in lower case
    ("Where is Austria?", "Where is Australia?", False),  # another entity is never a misspelling
    ("From Porto, how do I get to Braga?", "How do I get to Braga from Porto?", True),  # roles kept
    ("Is Porto bigger than Braga?", "Is Braga bigger than Porto?", False),  # roles traded
    ("What is the GDP of the UK?", "What is the GDP of the United Kingdom?", True),  # initials
    ("Flights from LA to Boston", "Flights from Los Angeles to Boston", True),
    ("What is the GDP of the UK?", "What is the GDP of the United States?", False),
    ("Flights from LA to NY", "Flights from New York to Los Angeles", False),  # initials, roles traded
])
def test_entities(a, b, ok):
    assert agree(entities_agree, a, b) is ok


def test_registry_names_every_guard_and_reports_the_first_failure():
    assert list(GUARDS) == ["numbers", "units", "negation", "polarity", "entities"]
    assert first_disagreement("What is 1+1?", "What is 21+1?") == "numbers"
    assert first_disagreement("What is the capital of France?", "What's the capital city of France?") is None


def test_guards_are_composable():
    only_numbers = {"numbers": numbers_agree}
    assert first_disagreement("Is port 80 open?", "Is port 80 closed?", only_numbers) is None
    assert first_disagreement("Is port 80 open?", "Is port 81 open?", only_numbers) == "numbers"
