"""The words the verifier knows: function words to skip, contractions, synonym groups, and the closed
classes whose members are never interchangeable (times, periods, weekdays...).

Plain data, written for Tollgate; words.py and alignment.py turn it into content words and matches.
"""
from __future__ import annotations

# Contractions expanded before anything else ("what's" -> "what is", "can't" -> "can not").
CONTRACTIONS = {
    "can't": "can not", "cannot": "can not", "won't": "will not", "shan't": "shall not", "n't": " not",
    "'s": "", "'re": "", "'ve": "", "'ll": "", "'d": "", "'m": "",
}

# Function words, question frames and politeness: what two phrasings of one question may differ in freely.
STOPWORDS = frozenset("""
a an the this that these those there here it its it's itself i me my mine myself we us our ours you your
yours yourself he him his she her hers they them their theirs one ones someone anyone somebody anybody
something anything
what which who whom whose when where why how whats whats hows
is are was were be been being am do does did doing done have has had having
can could will would shall should may might must need needs ought
of in on at by for with about as into onto from to up out off over under through via per
and or but if then so than too very also just only even still yet already
please kindly thanks thank hi hello hey dear
tell say explain describe show give let know want wanted wondering wonder curious help like would
question ask asking answer quick quickly briefly simply basically actually really exactly generally usually
way ways thing things kind city between appear seem able used take
sorry excuse bother whether possibly hoping guys yo calculate compute determine purpose recipe
get got gets getting make makes made
typically normally fully completely entirely anymore totally truly honestly literally
approximately roughly around few several
use uses using during
tip tips advice suggestions ideas recommend recommended suggest advise
any some all each every much many lot lots more most
s t re ve ll d m
""".split())

# Words whose members are distinct answers even when the embedder finds them close ("yesterday" and
# "today" sit at cosine 0.86): an unmatched one always refuses the hit.
CLOSED_CLASSES: dict[str, frozenset[str]] = {
    "time": frozenset("""
yesterday today tomorrow tonight now currently current morning afternoon evening night midnight noon
daily weekly monthly yearly annually annual hourly quarterly biweekly nightly
weekday weekend monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december
spring summer autumn fall winter season seasonal
past future recent recently previous next ago later earlier soon early late
second minute hour day week month quarter year decade century millennium
""".split()),
    # "the least crowded" / "the most crowded": "most" and "more" are function words, so the other side of
    # such a pair has nothing to match these with.
    "degree": frozenset("least fewest fewer less".split()),
}

# Words that place a period in time only before a period noun: "this year" / "last year" ask about two
# years, while "this" is a function word elsewhere and "last" a verb ("how long does a day last").
DEICTIC = frozenset("this next last past coming previous".split())
PERIODS = frozenset("""
day days week weeks weekend month months quarter year years decade century season semester term night
morning evening spring summer autumn fall winter
""".split())

# Irregular forms, to their base ("built" meets "build").
IRREGULAR = {
    "built": "build", "undone": "undo", "done": "do", "made": "make", "bought": "buy", "ran": "run",
    "wrote": "write", "written": "write", "taken": "take", "took": "take", "gave": "give", "given": "give",
    "went": "go", "gone": "go", "chose": "choose", "chosen": "choose", "broke": "break", "broken": "break",
    "ate": "eat", "eaten": "eat", "drove": "drive", "driven": "drive", "got": "get", "gotten": "get",
    "paid": "pay", "sold": "sell", "sent": "send", "spent": "spend", "felt": "feel", "kept": "keep",
    "slept": "sleep", "lost": "lose", "found": "find", "thought": "think", "brought": "bring",
    "caught": "catch", "taught": "teach", "froze": "freeze", "frozen": "freeze", "grew": "grow", "grown": "grow",
    "knew": "know", "known": "know", "began": "begin", "begun": "begin", "wore": "wear", "worn": "wear",
}

# Groups of words that ask the same thing; a word matches any member of its group. Kept small and safe:
# only words that swap freely in questions to a chat model.
SYNONYM_GROUPS: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "work function operate",
    "cause trigger",
    "replace substitute swap",
    "connect pair link",
    "prevent stop",
    "best ideal optimal",
    "fastest quickest",
    "central downtown",
    "latest last newest recent",
    "env environment",
    "info information",
    "config configuration",
    "repo repository",
    "db database",
    "docs documentation",
    "ratio proportion",
    "enable activate",
    "disable deactivate",
    "travel get go",
    "guy person",
    "largest biggest",
    "smallest tiniest",
    "phone smartphone cellphone",
    "tv television",
    "bike bicycle",
    "fridge refrigerator",
    "medicine medication",
    "illness disease",
    "cure treat remedy",
    "symptom sign",
    "email e-mail",
    "wifi wi-fi",
    "learn study",
    "improve enhance",
    "permitted allowed",
    "legal lawful",
    "turn go become",
    "write wrote develop invent author",
    "fix repair resolve solve troubleshoot",
    "change modify update edit alter switch",
    "wise smart sensible advisable",
    "remove delete erase",
    "buy purchase",
    "start begin",
    "create build generate",
    "find locate search",
    "use utilize employ",
    "big large huge",
    "small little tiny",
    "car automobile vehicle",
    "error bug issue problem",
    "setup configure",
    "meaning definition mean define",
    "difference differ distinguish diff distinction",
    "cost price",
    "correct right proper",
    "job occupation",
    "picture image photo",
    "movie film",
    "doctor physician",
    "kid child children",
    "sick ill",
    "happen occur",
    "stop halt",
    "show display",
    "app application",
    "function func",
    "folder directory",
    "pc computer",
    "purpose point goal",
    "benefit advantage",
    "drawback disadvantage downside",
    "autumn fall",
    # Common words of questions and their everyday synonyms: each pair swaps in a question without changing
    # the answer (WordNet lists them apart, or not among their first senses). Written from general usage,
    # not from the evaluation corpus' pairs.
    "good effective worthwhile",
    "bad harmful unhealthy",
    "dangerous unsafe hazardous",
    "cheap cheapest inexpensive affordable economical",
    "quick fast rapid speedy",
    "easy simple straightforward",
    "hard difficult tough",
    "get obtain acquire receive",
    "remove eliminate",
    "increase raise boost",
    "decrease reduce lower",
    "avoid prevent",
    "overcome beat conquer",
    "bring pack carry",
    "contain include",
    "rating score",
    "guest visitor",
    "vanish disappear",
    "sudden abrupt",
    "compose write",
    "compelling persuasive",
    "lawyer attorney",
    "parcel package",
    "coworker colleague co-worker",
    "former previous",
    "anxious nervous worried",
    "job occupation position role",
    "exhausted tired drained fatigued",
    "tiredness fatigue exhaustion",
    "consequence result outcome",
    "method approach technique strategy tip advice suggestion recommendation trick",
    "scared afraid frightened",
    "end finish complete",
    "constantly always continuously",
    "eat consume",
    "visit go",
    "visit see",
    "see view",
    "talk speak",
    "answer reply respond response",
    "help assist",
    "need require",
    "allow permit",
    "choose pick select",
    "keep store",
    "mistake error",
    "salary wage",
    "reason cause",
    "house home",
    "adult grown",
    "baby infant",
    "ache pain hurt",
    "vomit puke",
    "money currency",
    "prune trim",
    "main primary",
    "append add",
    "stove stovetop hob",
    "item element",
    "suggest recommend",
    "neighborhood neighbourhood area district",
    # Everyday synonyms of household, kitchen, health, travel, work and money questions, and the British and
    # American spellings of one word, by the same test as above (each swaps in a question without changing
    # its answer): most written from general usage, some of them ("steep" / "brew", "creaking" / "squeaky")
    # seen among the tuning splits' refused paraphrases. Things of one kind ("pan" / "pot", "flu" / "cold")
    # stay apart.
    "tap faucet spigot",
    "skillet frypan pan",
    "screen monitor",
    "leaky leaking dripping drippy",
    "runny watery",
    "squeaky squeaking creaky creaking",
    "brew steep infuse",
    "unclog unblock clear",
    "clogged blocked",
    "okay ok alright fine safe",
    "bad dangerous",
    "power electricity",
    "condition health",
    "budget money funds",
    "seawater saltwater",
    "puncture flat",
    "strong effective",
    "collapse fall downfall",
    "last stay",
    "legal allowed",
    "hide conceal",
    "lack deficiency shortage",
    "doorstep door",
    "apartment flat",
    "spotless clean",
    "clean wash cleanse",
    "spot patch",
    "although though",
    "grandma grandmother granny",
    "grandpa grandfather granddad",
    "mom mother mum mommy",
    "dad father daddy",
    "stomach belly tummy",
    "couch sofa settee",
    "trash garbage rubbish",
    "pants trousers",
    "vacation holiday",
    "truck lorry",
    "petrol gasoline gas",
    "elevator lift",
    "mailman postman",
    "phone mobile",
    "password passcode",
    "refund reimbursement",
    "warranty guarantee",
    "thaw defrost",
    "pill tablet",
    "dose dosage",
    "vet veterinarian",
    "puppy pup",
    "teen teenager adolescent",
    "elderly senior",
    "beginner novice newbie",
    "exam test",
    "homework assignment",
    "teacher instructor",
    "resume cv",
    "boss manager supervisor",
    "employee worker staff",
    "company business firm",
    "quit resign",
    "stock share",
    "bill invoice",
    "rent lease",
    "roommate flatmate housemate",
    "trip journey",
    "plane airplane aeroplane aircraft",
    "luggage baggage",
    "lawn grass",
    "insect bug",
    "clever intelligent smart",
    "dumb stupid",
    "rude impolite",
    "polite courteous",
    "angry mad",
    "sad unhappy",
    "happy glad",
    "nap snooze",
    "workout exercise",
    "basement cellar",
    "attic loft",
    "restroom washroom toilet loo",
    "tub bathtub",
    "bulb lightbulb",
    "outlet socket",
    "reboot restart",
    "slow sluggish laggy",
    "recover restore retrieve",
    "ask inquire enquire",
    "explain clarify",
    "dinner supper",
    "veggies vegetables veg",
    "sweet sugary",
    "healthy nutritious healthful",
    "sunscreen sunblock",
    "diaper nappy",
    "stroller pushchair pram",
    "pacifier dummy",
    "crib cot",
    "try attempt",
    "memorize memorise",
    "understand comprehend grasp",
    "lose shed",
    "boost improve",
    "grow cultivate",
    "sow plant",
    "mend fix repair",
    "change replace",
    "book reserve",
    "leave depart",
    "deal cope handle",
    "nail ace",
    "relieve ease alleviate soothe",
    "spread transmit",
    "check inspect examine",
    "recommended suggested advised",
    "common typical usual normal",
    "rare uncommon unusual",
    "weird strange",
    "important essential crucial vital",
    "necessary required needed",
    "loud noisy",
    "broken damaged faulty defective",
    "damp moist",
    "dirty filthy",
    "whole entire",
    "big large huge enormous massive",
    "difficult hard tough challenging tricky",
    "safe secure",
    "sure certain",
    "likely probable",
    "exact precise accurate",
    "tasty delicious yummy",
    "spoiled spoilt rotten",
    "swollen puffy",
    "sore painful",
    "sick ill unwell",
    "scary frightening terrifying",
    "problem issue trouble",
    "question query",
    "stage phase",
    "rest remainder",
    "amount quantity",
    "fee charge",
    "work job",
    "office workplace",
    "shop store",
    "clothes clothing garments",
    "motorbike motorcycle",
    "highway freeway motorway expressway",
    "line queue",
    "subway metro",
    "etymology origin",
    "color colour", "favorite favourite", "neighbor neighbour", "center centre", "theater theatre",
    "organize organise", "realize realise", "apologize apologise", "defense defence", "license licence",
    "traveling travelling", "gray grey", "aluminum aluminium", "mold mould", "tire tyre", "catalog catalogue",
    "analyze analyse", "jewelry jewellery", "pajamas pyjamas", "behavior behaviour", "humor humour",
    "flavor flavour", "labor labour", "honor honour", "fertilizer fertiliser", "mom mum",
))

# Directional words: "X than Y", "from X to Y", "X vs Y" name two things in an order that matters.
DIRECTIONAL = frozenset({"than", "to", "into", "from", "vs", "versus", "before", "after", "over", "against"})
