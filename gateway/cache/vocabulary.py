"""The words the guards know: written numbers, operators, units, negations, antonym poles.

Plain data, written for Tollgate; guards.py turns it into features.
"""
from __future__ import annotations

# --- numbers --------------------------------------------------------------------------
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90, "dozen": 12,
}
SCALE_WORDS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
# "which one", "the one", "each one" are pronouns, not the number 1.
ONE_AS_PRONOUN_AFTER = {"which", "this", "that", "the", "each", "any", "every", "no", "another", "a", "one"}
OPERATORS = {"+": "+", "plus": "+", "-": "-", "minus": "-", "*": "*", "×": "*", "x": "*", "times": "*",
              "/": "/", "÷": "/", "over": "/", "^": "^", "%": "%", "percent": "%", "=": "="}
MULTIWORD_OPERATORS = {("divided", "by"): "/", ("multiplied", "by"): "*", ("to", "the", "power"): "^"}

# --- units (order matters: "5 miles to km" is not "5 km to miles") -----------------------
UNIT_GROUPS: dict[str, tuple[str, ...]] = {
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

# --- polarity -------------------------------------------------------------------------
NEGATIONS = {"not", "no", "never", "none", "nothing", "nobody", "nor", "cannot", "without", "unable", "neither"}

# concept: (positive pole, negative pole). Phrases are matched on whole tokens.
ANTONYMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
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
    # Who holds a home or a car decides the answer: an owner's duties are not a tenant's.
    "own": (("own", "owned", "owning", "owner", "owners", "homeowner", "landlord", "mortgage"),
            ("rent", "rented", "renting", "renter", "renters", "tenant", "tenants", "lease", "leased", "leasing")),
    # The case for a thing and the case against it (a bare "for" / "against" is alignment._stance_traded's).
    "favor": (("pros", "advantages", "benefits", "upsides", "in favor of", "in favour of"),
              ("cons", "disadvantages", "drawbacks", "downsides")),
}
