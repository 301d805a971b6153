"""Word orders that trade roles (order.py); the verifier's role-reversal cases live in test_verify.py."""
import pytest

from gateway.cache.order import order_changed


@pytest.mark.parametrize("a,b", [
    ("Is every square a rectangle?", "Is every rectangle a square?"),  # two spans traded
    ("Is tea healthier than coffee?", "Is coffee healthier than tea?"),  # around a directional word
    ("Can my cat give me ringworm?", "Can I give my cat ringworm?"),  # subject and object persons
    ("If my friend's car hits my fence, who pays?", "If my car hits my friend's fence, who pays?"),  # a noun moved
    ("Do I owe tax if my parents pay me?", "Do I owe tax if I pay my parents?"),  # "me" read as "I"
    ("Can I switch from a full-time job to a part-time job?",
     "Can I switch from a part-time job to a full-time job?"),  # hyphenated spans
    ("What should I do when my landlord ignores me?", "What should I do when I ignore my landlord?"),  # verb's person
    ("What do owls eat?", "What eats owls?"),  # the question word: object, then subject
    ("Who does the prime minister report to?", "Who reports to the prime minister?"),
    ("Can I sue if my neighbor damaged my car?", "Can I sue if I damaged my neighbor's car?"),  # doer to owner
])
def test_traded_roles(a, b):
    assert order_changed(a, b)


@pytest.mark.parametrize("a,b", [
    ("Can I, as a student, open an account?", "As a student, can I open an account?"),  # a clause moved
    ("From Porto, how do I get to Braga?", "How do I get to Braga from Porto?"),  # a clause moved
    ("How do I sort a list?", "How do I sort a list?"),
    ("Is it better to rent or buy?", "Is it better to buy or rent?"),  # listed, not ranked
    ("Why do cats purr and knead?", "Why do cats knead and purr?"),
    ("What do owls eat?", "What does an owl eat?"),  # "do" on both sides
    ("What do owls eat?", "What is eaten by owls?"),  # a passive says who does what in other words
    ("What food do owls eat?", "What do owls eat?"),
    ("How do I feed my dog?", "What is the right food for my dog's diet?"),  # an owner, no doer traded
    ("My landlord sent me a letter, what now?", "What should I do now that my landlord sent me a letter?"),
])
def test_orders_that_keep_roles(a, b):
    assert not order_changed(a, b)


def test_a_moved_word_counts_only_as_a_noun_when_told_parts_of_speech():
    a, b = "Should my sister's school pay for my laptop?", "Should my school pay for my sister's laptop?"
    assert order_changed(a, b, usual_pos=lambda w: "noun")
    assert not order_changed(a, b, usual_pos=lambda w: "adv")
