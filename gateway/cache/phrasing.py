"""Phrasing that changes nothing in the answer, rewritten away before the pair is verified: courtesy
frames ("would you be so kind as to", "if you don't mind"), chat shorthand ("u", "pls"), contractions
typed without their apostrophe ("cant"), and phrasal verbs the alignment would otherwise see as two
words ("turn on" -> "enable", "get rid of" -> "remove").

"If you don't mind" must go before the negation guard counts its "don't"; "cant" must become "can't"
before it counts at all.
"""
from __future__ import annotations

import re
from functools import lru_cache

# Removed whole (case-insensitive, on word boundaries), longest first.
COURTESY = (
    "i would be grateful if you could", "i'd be grateful if you could", "i would be grateful if you would",
    "would you be so kind as to", "could you be so kind as to", "would you mind", "if you don't mind",
    "if you do not mind", "i was hoping you could", "i was wondering if you could", "i was wondering",
    "i'd like to know", "i would like to know", "i want to know", "i need to know", "do you know",
    "could you please explain", "could you please tell me", "can you please explain", "can you please tell me",
    "can you tell me", "could you tell me", "can you explain", "could you explain", "could you kindly explain",
    "could you kindly tell me", "would you please explain", "would you please tell me", "please advise on",
    "please explain", "please tell me", "tell me", "walk me through", "give me the steps to",
    "good morning", "good afternoon", "good evening", "hello", "hey", "hi there", "thanks in advance",
    "thank you", "thanks", "lol", "ok so", "okay so", "anyway", "even", "exactly", "kindly", "please", "pls", "plz",
    "is it able to", "be able to", "in simple terms", "in very simple terms", "in plain english",
    "excuse me", "sorry to bother you", "quick one", "quick question", "hey there", "respected assistant",
    # More of the same, formal and casual: frames and fillers that never change what is asked.
    "dear assistant", "hello assistant", "respectfully", "my apologies for the bother", "sorry for the bother",
    "sorry if this is a dumb question", "sorry if this is basic", "i would be most grateful if you could",
    "i would be very grateful if you could", "might i trouble you for", "i'd appreciate guidance on",
    "i would appreciate guidance on", "i'd appreciate it if you could", "i would appreciate it if you could",
    "i hope you're well", "i hope you are well", "i'm wondering", "i am wondering", "may i ask",
    "quick q", "yo", "sup", "omg", "ugh", "bro", "dude", "hey so", "so like", "pls help", "please help", "help me",
    "i'd appreciate some guidance on", "i would appreciate some guidance on", "i'd appreciate some advice on",
    "i would appreciate some advice on", "i'd appreciate advice on", "i would appreciate advice on",
    "dear support team", "dear support", "hey folks", "hi folks", "hi all", "hey all", "hello all",
    "could you please assist", "can you please assist", "could you assist", "please assist",
    "could you possibly tell me", "can you possibly tell me", "could you possibly", "would you be kind enough to",
    "would you be able to tell me", "could you let me know", "can you let me know", "please let me know",
)
# Whole-word rewrites.
REWRITES = {
    "u": "you", "ur": "your", "r": "are", "thx": "", "wat": "what", "em": "them", "wut": "what", "wht": "what", "teh": "the", "cant": "can't", "wont": "won't", "dont": "don't",
    "doesnt": "doesn't", "isnt": "isn't", "arent": "aren't", "wasnt": "wasn't", "werent": "weren't",
    "didnt": "didn't", "shouldnt": "shouldn't", "couldnt": "couldn't", "wouldnt": "wouldn't",
    "havent": "haven't", "hasnt": "hasn't", "whats": "what's", "ive": "i've", "youre": "you're", "theyre": "they're", "thats": "that's", "hows": "how's", "im": "i'm",
    "turn on": "enable", "switch on": "enable", "turn off": "disable", "switch off": "disable",
    "get rid of": "remove", "come up with": "create", "set up": "setup", "find out": "find",
    "look up": "find", "figure out": "find", "most recent": "latest", "how come": "why",
    "percent": "%", "per cent": "%", "percentage": "%", "unable to": "can't",
    "is it possible to": "can i", "is it ok to": "can i", "is it okay to": "can i", "am i allowed to": "can i",
    "am i able to": "can i", "are we allowed to": "can we", "twice": "two times", "thrice": "three times",
    "w/o": "without", "w/": "with", "b/c": "because", "bc": "because", "tho": "though", "rn": "right now",
    "led to": "caused", "lead to": "cause", "leads to": "causes", "leading to": "causing",
    "throw up": "vomit", "throws up": "vomits", "threw up": "vomited", "throwing up": "vomiting",
    "learn by heart": "memorize", "learning by heart": "memorizing",
    "the whole time": "constantly", "all the time": "constantly", "at all times": "always",
    "make sure": "ensure", "making sure": "ensuring", "in order to": "to",
    "take place": "happen", "takes place": "happens", "took place": "happened", "taking place": "happening",
    "give away": "reveal", "gives away": "reveals", "gave away": "revealed", "giving away": "revealing",
    "from largest to smallest": "in descending order", "from biggest to smallest": "in descending order",
    "from highest to lowest": "in descending order", "from smallest to largest": "in ascending order",
    "from lowest to highest": "in ascending order", "from smallest to biggest": "in ascending order",
    "what are my options": "what can i do", "what options do i have": "what can i do",
    "what options are available to me": "what can i do", "what are my next steps": "what should i do",
    "failing to": "not", "fails to": "does not", "failed to": "did not", "fail to": "not",
    "refusing to": "won't", "refuses to": "won't", "refused to": "wouldn't", "refuse to": "won't",
    "give back": "return", "gives back": "returns", "gave back": "returned", "giving back": "returning",
    "send back": "return", "sends back": "returns", "sent back": "returned", "sending back": "returning",
    "goes on": "happens", "what's going on": "what's happening", "what is going on": "what is happening",
    "change the name of": "rename", "changing the name of": "renaming",
    # An evaluative "way to" asks how to: "What's the best way to descale a kettle?" / "How do I descale...".
    "the best way to": "how to", "a good way to": "how to", "the most effective way to": "how to",
    "the proper way to": "how to", "the right way to": "how to", "the correct way to": "how to",
    "a good method to": "how to", "the best method to": "how to", "the best method for": "how to",
    "drift off to sleep": "fall asleep", "drift off": "fall asleep",
    "my money back": "a refund", "the money back": "a refund", "money back": "refund",
    "on what date": "when", "what date": "when", "the date": "when", "at what time": "when",
}


# "What is the role of X?" asks what X does.
_WHAT_IT_DOES = re.compile(r"(?<![\w'])what(?:'s| is| are) the (?:function|role|purpose|job)s? of ([^?.!;]+)",
                           re.IGNORECASE)

# "What's the deal with X?" / "What's up with X?" ask how X works; "What makes X happen?" what causes it;
# "Where does X come from?" its origin.
_HOW_IT_WORKS = re.compile(r"(?<![\w'])what(?:'s| is) (?:the deal|up) with ([^?.!;,]+)", re.IGNORECASE)
_WHAT_CAUSES = re.compile(r"(?<![\w'])what makes ([^?.!;,]+?) happen(?![\w'])", re.IGNORECASE)
_ORIGIN = re.compile(r"(?<![\w'])where(?:'d| does| do| did) ([^?.!;,]+?) (?:come|originate) from(?![\w'])", re.IGNORECASE)

# "keep X from turning brown" asks how to prevent it; "keep" alone ("keep my job") is no synonym of "stop".
_KEEP_FROM = re.compile(r"(?<![\w'])keep((?: [\w'-]+){1,3}) from(?![\w'])", re.IGNORECASE)


def _pattern(phrases) -> re.Pattern:
    alternatives = sorted(phrases, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(" + "|".join(re.escape(p) for p in alternatives) + r")(?![\w'])", re.IGNORECASE)


_COURTESY = _pattern(COURTESY)
_REWRITES = _pattern(REWRITES)


@lru_cache(maxsize=65_536)
def plain(text: str) -> str:
    """The question with courtesy removed and shorthand spelled out; case kept where the text is kept."""
    text = text.replace("’", "'")
    text = _COURTESY.sub(" ", text)
    text = _REWRITES.sub(lambda m: REWRITES[m.group(1).casefold()], text)
    text = _KEEP_FROM.sub(lambda m: f"prevent{m.group(1)} from", text)
    text = _WHAT_IT_DOES.sub(lambda m: f"what does {m.group(1).strip()} do", text)
    text = _HOW_IT_WORKS.sub(lambda m: f"how does {m.group(1).strip()} work", text)
    text = _WHAT_CAUSES.sub(lambda m: f"what causes {m.group(1).strip()}", text)
    text = _ORIGIN.sub(lambda m: f"what is the origin of {m.group(1).strip()}", text)
    return " ".join(text.split()).lstrip(" ,;:.!")
