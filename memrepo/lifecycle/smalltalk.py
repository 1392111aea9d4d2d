"""Small talk: greetings, thanks, farewells, congratulations, encouragement, sympathy, back-channel.

Pure rules you can read, English and Chinese, no model. :func:`content_sentences` splits a
turn into sentences and drops those that only keep the conversation going ("Hey Mel! Long time
no talk!", "Thanks, Nate! Your support means a lot.", "回头聊！", "辛苦了，加油！"), so what is
left is what the turn says. A turn with nothing left is small talk as a whole
(:func:`small_talk_kind` names its kind for ``--explain``).

A sentence is small talk when one of the rules below matches it and at most
:data:`MAX_LEFT_WORDS` words (or :data:`MAX_LEFT_HANZI` Chinese characters) outside the
conversational vocabulary remain: "So proud of you for winning that tournament!" is a
congratulation; "Thanks! I finally finished my first full screenplay." is two sentences, and
the second one is content.

In a conversation turn, a sentence about the listener (a question, or "you" without "I") is
left out as well: it recurs as the *other* speaker's fact, not this one's. An opening
interjection and name ("Hey Nate, …") is cut from the sentences that stay.
"""
from __future__ import annotations

import re
from functools import lru_cache

from memrepo.text import ENGLISH_STOPWORDS

MAX_LEFT_WORDS = 2  # content words a small-talk sentence may still carry ("winning that tournament")
MAX_LEFT_HANZI = 3  # Chinese characters likewise, after function characters are removed

# kind -> pattern; checked in this order, the first match names the kind
RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(rx, re.IGNORECASE)) for kind, rx in (
    ("greeting", r"^(hey|hi|hello|hiya|howdy|yo|good (morning|afternoon|evening))\b|long time no (see|talk|chat)"
                 r"|how('s| is| are| have)( it| you| things| everything)?( been)? (going|doing|been)|how are you"
                 r"|what'?s (up|new)|anything new|(good|great|nice) to (see|talk to|hear from|chat with|catch up with) you"
                 r"|(你好|您好|嗨|哈喽|早上好|下午好|晚上好|好久不见|最近(怎么样|好吗|如何)|在吗)"),
    ("thanks", r"\b(thanks|thank (you|u)|thx|cheers|appreciate (it|that|you|your)|means (a lot|so much)|grateful)\b"
               r"|(谢谢|多谢|感谢|辛苦了|不客气)"),
    ("farewell", r"\b(bye|goodbye|take care|talk (to you )?(soon|later)|catch you (later|soon)|see (you|ya)( soon| later)?"
                 r"|(have|enjoy) (a|your) (great|good|nice|wonderful|lovely) (day|night|one|time|weekend|evening)"
                 r"|until next time|good ?night|stay (safe|strong|well)|can'?t wait to (catch up|talk|hear|see)|keep (me|you) (posted|updated)"
                 r"|stay in touch|let me know how)\b|(再见|拜拜|回头聊|下次聊|改天聊|晚安|保重|回见)"),
    ("congratulations", r"\b(congrat\w*|well done|way to go|proud of you|so proud|good job|great job|nice job|kudos"
                        r"|you (did|nailed) it|happy for you)\b|(恭喜|祝贺|干得漂亮|真为你(高兴|骄傲))"),
    ("encouragement", r"\b(keep (it up|going|pushing|at it|up the)|you (got|can do) (this|it)|good luck|best of luck"
                      r"|hang in there|don'?t give up|go for it|rooting for you|you'?ll (do|be) (great|fine|amazing)"
                      r"|believe in you|you deserve it|proud of)\b|(加油|别担心|一切顺利|祝你|你可以的|相信你|坚持)"),
    ("sympathy", r"\b(sorry (to hear|about|for)|that must (have been|be) (tough|hard|rough|difficult)"
                 r"|hope (you|things|it|your \w+) (feel|get|gets|are|is|heals?|recovers?)( better| well| soon)?"
                 r"|get well|feel better|sending (hugs|love))\b|(抱歉|遗憾|难过|心疼|早日康复)"),
    ("back-channel", r"^(wow|whoa|woah|cool|nice|great|awesome|amazing|ok(ay)?|yeah|yes|yep|yup|sure|right|true|totally"
                     r"|absolutely|definitely|lol|haha\w*|oh|ah|aw+|hmm+|i see|got it|exactly|indeed|agreed|same"
                     r"|sounds (great|good|fun|awesome|amazing|cool|lovely|delicious|like a plan)|that'?s (great|awesome"
                     r"|amazing|cool|wonderful|so cool|fantastic|incredible|nice)|me too|no worries)\b"
                     r"|^(好的|嗯+|哈哈+|是的|对|没问题|没关系|好吧|行|可以|明白|了解|真棒|太棒了|厉害|不错)"),
))

# Words that keep a conversation going but say nothing about the speaker's life: what may be left
# in a small-talk sentence without making it content.
CONVERSATIONAL = frozenset("""
hey hi hello thanks thank cheers bye goodbye congrats congratulations wow whoa woah cool nice great awesome
amazing glad happy proud sorry hope good luck keep going care soon later talk chat catch wait see
hear heard know let really so much lot means mean appreciate support kind words sweet love lovely
totally absolutely definitely sure yeah yes yep okay ok oh ah haha lol well done job way fun
sounds sound look looks seem seems like feel feeling thing things stuff always never time times
day today night week weekend share sharing update updated posted doing going got get gonna just
super pretty truly incredible fantastic wonderful beautiful exciting excited cute tough hard
everything anything something nothing man dude buddy friend pal inspiring inspiration encouragement
motivate motivates motivating motivation rooting deserve believe best luck tell told new
again still once ever even yet already usually sometimes often lately recently instead maybe
perhaps actually probably literally basically kinda
""".split())

_SENTENCE_RE = re.compile(r"[^.!?。！？…~\n]+[.!?。！？…~]*")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’]*")
_HAN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# characters that glue Chinese sentences together, and the pronouns of a conversation
_ZH_FILLER = frozenset("的了又在是和也就都把被着过吗呢吧啊呀哦哇嘛这那个我你他她它们再还很要让真好太呢最近一下")


def sentences(text: str) -> list[str]:
    """The sentences of a turn (terminal punctuation kept), blank ones dropped."""
    return [s.strip() for s in _SENTENCE_RE.findall(text or "") if s.strip()]


@lru_cache(maxsize=100_000)
def sentence_kind(sentence: str, names: frozenset[str] = frozenset()) -> str | None:
    """The small-talk kind of one sentence (``greeting``, ``thanks`` …), or None for content.

    ``names`` (lower case) are the participants' names: "Thanks, Nate!" leaves nothing behind.
    """
    left = _left_words(sentence, names)
    if len(left) > MAX_LEFT_WORDS:
        return None  # says too much to be small talk, whatever it opens with (and no regex run)
    hanzi = [ch for ch in _HAN_RE.findall(sentence) if ch not in _ZH_FILLER]
    if _ANY_RULE.search(sentence) is None:
        # no rule, but nothing but conversational words either ("Awesome, Nate!", "So cute!")
        return "back-channel" if not left and not hanzi and _WORD_RE.search(sentence) else None
    kind = next(k for k, rx in RULES if rx.search(sentence))  # the first rule that applies names it
    if hanzi:
        rest = RULES_BY_KIND[kind].sub("", sentence)
        hanzi = [ch for ch in _HAN_RE.findall(rest) if ch not in _ZH_FILLER]
        return kind if len(hanzi) <= MAX_LEFT_HANZI else None
    return kind


RULES_BY_KIND = dict(RULES)
_ANY_RULE = re.compile("|".join(f"(?:{rx.pattern})" for _, rx in RULES), re.IGNORECASE)


def _left_words(sentence: str, names: frozenset[str]) -> list[str]:
    """Latin words of a sentence that are neither conversational, stop words nor names."""
    out = []
    for word in _WORD_RE.findall(sentence):
        w = word.lower().replace("’", "'").split("'")[0]
        if len(w) > 1 and w not in CONVERSATIONAL and w not in ENGLISH_STOPWORDS and w not in names:
            out.append(w)
    return out


_YOU_RE = re.compile(r"\b(you|your|yours|you're|you've|you'll|you'd|yourself|u)\b|你|您", re.IGNORECASE)
_ME_RE = re.compile(r"\b(i|i'm|i've|i'll|i'd|me|my|mine|myself|we|we're|we've|our|ours|us)\b|我", re.IGNORECASE)


def about_listener(sentence: str) -> bool:
    """In a conversation turn: a question, or a sentence about "you" and not the speaker.

    "What kind of counseling do you want to pursue?", "You've got tons of talent." say
    something about the other person (their facts recur in *their* turns), not the speaker's.
    """
    if sentence.rstrip().endswith(("?", "？")) and not _ME_RE.search(sentence):
        return True
    return bool(_YOU_RE.search(sentence)) and not _ME_RE.search(sentence)


def content_sentences(text: str, names: frozenset[str] = frozenset(), *,
                      turn: bool = False) -> tuple[list[str], list[str]]:
    """(content sentences, small-talk kinds of the dropped ones) of a turn.

    With ``turn`` (the text is one speaker's turn in a conversation), sentences about the
    listener are dropped too (kind ``about the listener``).
    """
    kept, kinds = [], []
    for s in sentences(text):
        kind = sentence_kind(s, names)
        if kind is None and turn and about_listener(s):
            kind = "about the listener"
        if kind is None:
            rest = _OPENING_RE.sub("", s, count=1)
            kept.append(rest[:1].upper() + rest[1:] if rest else s)
        else:
            kinds.append(kind)
    return kept, kinds


# "Hey Nate, my favourite treat is …": the opening interjection and name are not the statement
_OPENING_RE = re.compile(r"^(?:(?:hey|hi|hello|wow|oh|ah|aw|yeah|yes|yep|well|so|haha|omg|thanks|thank you"
                         r"|cheers|congrats|sure|okay|ok)\b[^,.!?;:]{0,24}[,;:—–-]\s+)+", re.IGNORECASE)
