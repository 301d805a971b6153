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

# Words kept whole: contractions ("isn't"), identifiers ("redis.conf", "k8s", "ERR_42").
_TOKEN = re.compile(
    r"\"[^\"]+\"|“[^”]+”|`[^`]+`|(?<!\w)'[^'\s][^']*'(?!\w)"  # quoted strings and code
    r"|\d+(?:[.,]\d+)*"  # numbers, versions, 1,000
    r"|[A-Za-z_][\w\-./@]*(?:['’][a-z]+)?"  # words, identifiers, contractions
    r"|[^\sA-Za-z\d]"  # any other single symbol (+, %, $, ?)
)

# --- numbers --------------------------------------------------------------------------
_UNITS_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90, "dozen": 12,
}
_SCALE_WORDS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
# "which one", "the one", "each one" are pronouns, not the number 1.
_ONE_AS_PRONOUN_AFTER = {"which", "this", "that", "the", "each", "any", "every", "no", "another", "a", "one"}
_OPERATORS = {"+": "+", "plus": "+", "-": "-", "minus": "-", "*": "*", "×": "*", "x": "*", "times": "*",
              "/": "/", "÷": "/", "over": "/", "^": "^", "%": "%", "percent": "%", "=": "="}
_MULTIWORD_OPERATORS = {("divided", "by"): "/", ("multiplied", "by"): "*", ("to", "the", "power"): "^"}

# --- units (order matters: "5 miles to km" is not "5 km to miles") -----------------------
_UNIT_GROUPS: dict[str, tuple[str, ...]] = {
    "mm": ("mm", "millimeter", "millimeters", "millimetre", "millimetres"),
    "cm": ("cm", "centimeter", "centimeters", "centimetre", "centimetres"),
    "m": ("meter", "meters", "metre", "metres"),
    "km": ("km", "kms", "kilometer", "kilometers", "kilometre", "kilometres"),
    "inch": ("inch", "inches"),
    "ft": ("ft", "foot", "feet"),
    "yd": ("yd", "yard", "yards"),
    "mile": ("mi", "mile", "miles"),
    "mg": ("mg", "milligram", "milligrams"),
    "g": ("gram", "grams"),
    "kg": ("kg", "kgs", "kilo", "kilos", "kilogram", "kilograms"),
    "lb": ("lb", "lbs", "pound", "pounds"),
    "oz": ("oz", "ounce", "ounces"),
    "ton": ("ton", "tons", "tonne", "tonnes"),
    "celsius": ("celsius", "centigrade", "°c"),
    "fahrenheit": ("fahrenheit", "°f"),
    "kelvin": ("kelvin",),
    "ml": ("ml", "milliliter", "milliliters", "millilitre", "millilitres"),
    "l": ("liter", "liters", "litre", "litres"),
    "gallon": ("gallon", "gallons", "gal"),
    "cup": ("cup", "cups"),
    "ms": ("ms", "millisecond", "milliseconds"),
    "s": ("sec", "secs", "second", "seconds"),
    "min": ("min", "mins", "minute", "minutes"),
    "h": ("hr", "hrs", "hour", "hours"),
    "day": ("day", "days"),
    "week": ("week", "weeks"),
    "month": ("month", "months"),
    "year": ("year", "years"),
    "bit": ("bit", "bits"),
    "byte": ("byte", "bytes"),
    "kb": ("kb", "kilobyte", "kilobytes"),
    "mb": ("mb", "megabyte", "megabytes"),
    "gb": ("gb", "gigabyte", "gigabytes"),
    "tb": ("tb", "terabyte", "terabytes"),
    "kib": ("kib",), "mib": ("mib",), "gib": ("gib",),
    "usd": ("usd", "$", "dollar", "dollars"),
    "eur": ("eur", "€", "euro", "euros"),
    "gbp": ("gbp", "£", "sterling"),
    "jpy": ("jpy", "¥", "yen"),
    "mph": ("mph",),
    "kph": ("kph", "km/h"),
    "percent": ("%", "percent", "percentage"),
    "core": ("cpu", "cpus", "core", "cores", "vcpu", "vcpus"),
}
_UNITS = {alias: unit for unit, aliases in _UNIT_GROUPS.items() for alias in aliases}

# --- polarity -------------------------------------------------------------------------
_NEGATIONS = {"not", "no", "never", "none", "nothing", "nobody", "nor", "cannot", "without", "unable", "neither"}

# concept: (positive pole, negative pole). Phrases are matched on whole tokens.
_ANTONYMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "open": (("open", "opened", "opening", "reachable", "listening"), ("closed", "close", "closing", "shut", "unreachable")),
    "enable": (("enable", "enabled", "enabling", "activate", "activated", "turn on", "switch on", "on"),
               ("disable", "disabled", "disabling", "deactivate", "deactivated", "turn off", "switch off", "off")),
    "increase": (("increase", "increased", "increasing", "raise", "raised", "grow", "extend", "more", "higher", "maximum", "max"),
                 ("decrease", "decreased", "decreasing", "reduce", "reduced", "lower", "lowered", "shrink", "shorten", "less", "fewer", "minimum", "min")),
    "upgrade": (("upgrade", "upgraded", "upgrading"), ("downgrade", "downgraded", "downgrading")),
    "before": (("before", "prior", "earlier", "earliest", "first", "oldest"), ("after", "later", "latest", "last", "newest")),
    "start": (("start", "started", "starting", "begin", "launch", "resume", "restart", "running"), ("stop", "stopped", "stopping", "end", "halt", "pause", "paused", "kill")),
    "add": (("add", "added", "adding", "create", "created", "insert", "attach"), ("remove", "removed", "removing", "delete", "deleted", "deleting", "drop", "detach", "erase")),
    "install": (("install", "installed", "installing"), ("uninstall", "uninstalled", "uninstalling")),
    "allow": (("allow", "allowed", "permit", "permitted", "accept", "accepted", "whitelist", "allowlist", "approve", "approved", "grant"),
              ("deny", "denied", "block", "blocked", "forbid", "forbidden", "reject", "rejected", "blacklist", "blocklist", "decline", "declined", "revoke")),
    "import": (("import", "imported", "importing"), ("export", "exported", "exporting")),
    "upload": (("upload", "uploaded", "uploading"), ("download", "downloaded", "downloading")),
    "encrypt": (("encrypt", "encrypted", "encryption"), ("decrypt", "decrypted", "decryption")),
    "login": (("log in", "login", "sign in", "signin", "logged in"), ("log out", "logout", "sign out", "signout", "logged out")),
    "subscribe": (("subscribe", "subscribed", "renew", "renewal", "reactivate", "sign up", "signup"), ("unsubscribe", "unsubscribed", "cancel", "cancelled", "canceled", "cancellation")),
    "lock": (("lock", "locked", "locking"), ("unlock", "unlocked", "unlocking")),
    "push": (("push", "pushed"), ("pull", "pulled")),
    "buy": (("buy", "bought", "purchase", "purchased"), ("sell", "sold", "refund", "refunded", "return")),
    "send": (("send", "sent", "sending", "outgoing", "outbound", "egress"), ("receive", "received", "receiving", "incoming", "inbound", "ingress")),
    "input": (("input", "inputs"), ("output", "outputs")),
    "true": (("true",), ("false",)),
    "above": (("above", "over", "exceed", "exceeds"), ("below", "under", "beneath")),
    "best": (("best", "better"), ("worst", "worse")),
    "cheap": (("cheap", "cheaper", "cheapest", "inexpensive"), ("expensive", "pricier", "priciest", "costly")),
    "fast": (("fast", "faster", "fastest", "quick", "quicker", "quickest"), ("slow", "slower", "slowest")),
    "large": (("large", "larger", "largest", "big", "bigger", "biggest"), ("small", "smaller", "smallest", "tiny")),
    "long": (("long", "longer", "longest"), ("short", "shorter", "shortest")),
    "hot": (("hot", "hotter", "hottest", "warm", "warmer", "boiling", "heat"), ("cold", "colder", "coldest", "cool", "cooler", "freezing", "frozen")),
    "public": (("public",), ("private",)),
    "success": (("success", "successful", "succeed", "succeeded", "pass", "passed", "passing"), ("failure", "fail", "failed", "failing", "error", "errors")),
    "valid": (("valid",), ("invalid",)),
    "include": (("include", "included", "including", "inclusive"), ("exclude", "excluded", "excluding", "exclusive")),
    "online": (("online", "up"), ("offline", "down", "outage")),
    "encode": (("encode", "encoded", "encoding"), ("decode", "decoded", "decoding")),
    "compress": (("compress", "compressed", "zip"), ("decompress", "decompressed", "unzip", "extract")),
    "north": (("north", "northern"), ("south", "southern")),
    "east": (("east", "eastern"), ("west", "western")),
    "win": (("win", "won", "winner"), ("lose", "lost", "loser")),
    "sign": (("positive",), ("negative",)),
    "debit": (("debit",), ("credit",)),
    "mount": (("mount", "mounted"), ("unmount", "unmounted")),
    "merge": (("merge", "merged", "join"), ("split", "separate")),
}
_POLES = {}
for _concept, (_pos, _neg) in _ANTONYMS.items():
    for _phrase in _pos:
        _POLES[tuple(_phrase.split())] = (_concept, "+")
    for _phrase in _neg:
        _POLES[tuple(_phrase.split())] = (_concept, "-")
_MAX_PHRASE = max(len(p) for p in _POLES)

# --- entities ---------------------------------------------------------------------------
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
            out.append(_number_value(w))
        elif w in _UNITS_WORDS or (w in _SCALE_WORDS and out and out[-1].isdigit()):
            if w == "one" and i > 0 and words[i - 1] in _ONE_AS_PRONOUN_AFTER:
                i += 1
                continue
            total, current = 0, 0
            while i < len(words) and (words[i] in _UNITS_WORDS or words[i] in _SCALE_WORDS or words[i] == "and"):
                word = words[i]
                if word in _UNITS_WORDS:
                    current += _UNITS_WORDS[word]
                elif word in _SCALE_WORDS:
                    current = max(current, 1) * _SCALE_WORDS[word]
                    if _SCALE_WORDS[word] >= 1000:
                        total, current = total + current, 0
                i += 1
            out.append(str(total + current))
            continue
        elif w in _SCALE_WORDS:
            out.append(str(_SCALE_WORDS[w]))
        else:
            for phrase, op in _MULTIWORD_OPERATORS.items():
                if tuple(words[i:i + len(phrase)]) == phrase:
                    out.append(op)
                    i += len(phrase)
                    break
            else:
                # An operator only counts between numbers ("over" and "x" are words elsewhere).
                op = _OPERATORS.get(w)
                nxt = words[i + 1] if i + 1 < len(words) else ""
                near_number = out and (nxt[:1].isdigit() or nxt in _UNITS_WORDS or w == "%")
                if op and near_number and i > 0 and (words[i - 1][:1].isdigit() or words[i - 1] in _UNITS_WORDS):
                    out.append(op)
            i += 1
            continue
        i += 1
    return tuple(out)


def _is_number(word: str) -> bool:
    return word[:1].isdigit() or word in _UNITS_WORDS


def _units(words: list[str]) -> tuple[tuple, tuple]:
    """(units bound to a number, in order; the other units).

    "Convert 5 miles to km" and "What is 5 miles in km?" both give ((5, mile),) + {km}:
    what is measured is the unit next to the number, so word order elsewhere may vary.
    With no number to anchor them, the order of the units is what tells the direction.
    """
    bound: list[tuple[str, str]] = []
    free: list[str] = []
    for i, w in enumerate(words):
        unit = _UNITS.get(w)
        if unit is None:
            continue
        before = words[i - 1] if i > 0 else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if _is_number(before):
            bound.append((before, unit))
        elif w in ("$", "€", "£", "¥") and _is_number(after):
            bound.append((after, unit))
        else:
            free.append(unit)
    return tuple(bound), tuple(sorted(free) if bound else free)


def _negated(words: list[str]) -> bool:
    count = sum(1 for w in words if w in _NEGATIONS or w.endswith(("n't", "n’t")))
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


@lru_cache(maxsize=65_536)
def features(text: str) -> Features:
    tokens = _tokens(text)
    words = [t.casefold() for t in tokens]
    return Features(
        text=" ".join(words),
        numbers=_numbers(words),
        units=_units(words),
        negated=_negated(words),
        poles=_poles(words),
        entities=_entities(tokens),
    )


# --- the guards -------------------------------------------------------------------------
Guard = Callable[[Features, Features], bool]  # True: the two questions agree on this


def numbers_agree(a: Features, b: Features) -> bool:
    """Same numbers, same operators, same order: 1+1 is not 21+1, port 6379 is not 6380."""
    return a.numbers == b.numbers


def units_agree(a: Features, b: Features) -> bool:
    """Same units bound to the same numbers: "5 miles to km" is not "5 km to miles"."""
    return a.units == b.units


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


def entities_agree(a: Features, b: Features) -> bool:
    """Every entity of one appears in the other, and shared entities come in the same order."""
    entities = list(dict.fromkeys(a.entities + b.entities))
    pos_a = [_position(e, a.text) for e in entities]
    pos_b = [_position(e, b.text) for e in entities]
    if -1 in pos_a or -1 in pos_b:
        return False
    order_a = [e for _, e in sorted(zip(pos_a, entities))]
    order_b = [e for _, e in sorted(zip(pos_b, entities))]
    return order_a == order_b


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
