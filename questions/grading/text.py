"""Reading a free-text answer: sentences, concept occurrences, negation and contrast.

The grader's notion of "an answer says X" lives here. A rubric alternative such as
`decode + memory_bound` holds in a sentence when every concept occurs there, none of them
negated, and (when the sentence also talks about a rival, e.g. prefill) the concepts are
attached to the same side of the contrast.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

from questions.bank import Concept

# --- Sentences ------------------------------------------------------------------------------

_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "eg", "ie", "vs", "etc", "approx", "ca", "cf", "fig", "eq", "incl", "resp"},
)
_BOUNDARY = re.compile(r"[.!?]+(?=[\s\"')\]]|$)|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•·>]+|\d{1,2}[.)]|[a-z][.)])\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str


def split_sentences(text: str) -> list[Sentence]:
    """Sentences with their spans in `text`; list items and lines count as sentences."""
    sentences: list[Sentence] = []
    cursor = 0

    def emit(start: int, end: int) -> None:
        chunk = text[start:end]
        bullet = _BULLET.match(chunk)
        if bullet:
            start += bullet.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start and any(ch.isalnum() for ch in text[start:end]):
            sentences.append(Sentence(start=start, end=end, text=text[start:end]))

    for boundary in _BOUNDARY.finditer(text):
        if boundary.group().startswith("."):
            before = re.search(r"([A-Za-z.]+)$", text[cursor : boundary.start()])
            if before and before.group(1).lower().rstrip(".") in _ABBREVIATIONS:
                continue
            line_start = text.rfind("\n", 0, boundary.start()) + 1
            if re.fullmatch(r"\s*(?:\d{1,2}|[A-Za-z])", text[line_start : boundary.start()]):
                continue  # "1. " or "a. " opening a list item
        emit(cursor, boundary.end())
        cursor = boundary.end()
    emit(cursor, len(text))
    return sentences


# --- Concepts -------------------------------------------------------------------------------

# A match edge may not cut through a word: the same test as `\b`, but only where the pattern's
# own edge is a word character, so patterns such as '\$\d+' or 'tb/s' still work.
_EDGE = r"(?:(?<!\w)|(?!\w))"


@lru_cache(maxsize=4096)
def compile_concept(concept: Concept) -> re.Pattern[str]:
    alternation = "|".join(f"(?:{pattern})" for pattern in concept.patterns)
    return re.compile(f"{_EDGE}(?:{alternation}){_EDGE}", re.IGNORECASE)


@lru_cache(maxsize=4096)
def compile_absent(concept: Concept) -> re.Pattern[str] | None:
    """The words whose presence in a sentence keeps `concept` from being found there, or None."""
    if not concept.absent:
        return None
    return re.compile("|".join(f"(?:{word})" for word in concept.absent), re.IGNORECASE)


def find_concept(concept: Concept, text: str) -> list[tuple[int, int]]:
    """Non-overlapping (start, end) spans of the concept in `text`, on word edges."""
    return [m.span() for m in compile_concept(concept).finditer(text) if m.end() > m.start()]


@dataclass(frozen=True)
class Occurrence:
    concept: str
    start: int
    end: int
    negated: bool


# Negation cues. `not only` / `not just` add rather than deny, so they are excluded.
_NEGATION = re.compile(
    r"(?<!\w)(?:"
    r"not(?!\s+(?:only|just|merely|always\s+the\s+case))"
    r"|\w+n't|(?:is|are|was|were|do|does|did|has|have|had|wo|ca|could|should|would)nt"
    r"|cannot|never|no\s+longer|no(?!\s+(?:matter|doubt|problem))|none|neither|nor|without"
    r"|hardly|lacks?|lacking"
    # "nothing promises one SSE chunk per token" denies what it promises (round 38).
    r"|nothing(?=\s+(?:promises|guarantees|ensures))"
    r"|(?P<contrast>rather\s+than|instead\s+of|as\s+opposed\s+to|unlike)"
    r")(?!\w)",
    re.IGNORECASE,
)
# Where a negation stops: punctuation, contrastive or causal connectives, and `and` when it
# starts a new clause ("... isn't parallel and is memory-bound").
_SCOPE_END = re.compile(
    r"[,;:.!?()\[\]\n\u2014\u2013]|\s-\s"
    r"|(?<!\w)(?:but|while|whereas|however|although|though|yet|because|since|so|then|unless"
    r"|until|except)(?!\w)"
    r"|(?<!\w)and\s+(?=(?:is|are|it|its|it's|they|this|that|so|then|therefore|thus|hence|each"
    r"|every|decode|prefill|the|a|an|their|these|those|there|we|you|your|our)\b)",
    re.IGNORECASE,
)
_SCOPE_WORDS = 8
# "rather than X", "instead of X", "unlike X": only the noun phrase X is denied.
_CONTRAST_SCOPE_WORDS = 3

# Sentences that report or suppose a belief rather than state it; misconceptions are not
# looked for there ("a common mistake is to think decode is compute-bound").
_DISTANCING = re.compile(
    r"(?<!\w)(?:myths?|misconceptions?|mistakes?|mistaken(?:ly)?"
    # "a wrong answer" is an output that is wrong, not a belief being reported.
    r"|(?:wrong|incorrect)(?:ly)?(?!\s+(?:answers?|responses?|outputs?|results?|repl(?:y|ies)|completions?|tokens?))"
    # "less of a problem than people think" and "peaks aren't the problem people think" compare
    # with a belief and state their own (round 38).
    r"|misleading|(?<!than\s)(?<!problem\s)(?<!issue\s)(?<!deal\s)"
    r"people\s+(?:often\s+|usually\s+|tend\s+to\s+|sometimes\s+)?(?:think|assume"
    r"|believe|say|expect)|tempting|you\s+might\s+(?:think|expect|assume)|one\s+might"
    r"|contrary\s+to|if\s+(?:you|we|it)\s+(?:didn't|did\s+not|had\s+no|don't)"
    # "Without batching, decode would ..." and "Otherwise, ..." suppose; "... four times faster,
    # without the all-reduces" and "the KV memory it would otherwise need" state (a supposition
    # opens its sentence or clause).
    r"|(?:^|(?<=[;:]\s)|(?<=[;:]))\s*(?:without|otherwise)"
    # A naive view or a sentence that opens "Naively" supposes; "naive attention" or "the naive
    # 16 GiB" names a method or an estimate, and the sentence states its own claim.
    r"|naively|naive\s+(?:view|reading|answer|belief|assumption|guess|take|idea|expectation"
    r"|intuition|thinking|mental\s+model|engineers?|learners?|readers?|observers?)"
    r"|(?:^|(?<=[;:]\s)|(?<=[;:]))\s*(?:a\s+|the\s+)?naive"
    r"|not\s+true|it\s+is\s+false|it's\s+false"
    # "It is not that X; Y" denies X and says Y instead.
    r"|it(?:\s+is|\s+was|'s)\s+not\s+that|it\s+(?:isn't|wasn't)\s+that)(?!\w)",
    re.IGNORECASE,
)


def _asks_or_quotes(text: str) -> bool:
    """Whether a sentence asks or reports rather than claims: a question ("First: 12,000 tokens
    per second of what?" does not claim that each user sees 12,000), or one that opens by
    quoting someone's words, as a strong answer opened: "GPUs are random" isn't really it."""
    return (
        text.rstrip().rstrip("\"'\u2019\u201d)").endswith("?")
        or text.lstrip().startswith(("\"", "\u201c"))
    )


# The learner says they do not know: "GPTQ is also weight-only, but I don't remember how it
# works", "Coordinated omission I'm honestly not sure about". First person only: "since you
# don't know the output length in advance" states a fact. Or says so without saying it: a method
# that "does something with outliers" is named, not explained.
_ADMITS_NOT_KNOWING = re.compile(
    r"\bI(?:'m| am)(?: \w+)? not (?:sure|certain)\b"
    r"|\bI (?:do not|don't|dont|can't|cannot|can not) (?:remember|recall|know)\b"
    r"|\bI (?:forget|forgot)\b"
    r"|^\W*not sure\b"
    r"|\bI(?:'d| would) have to (?:look|read|check)\b"
    # Round 47's partial answer; no sentence of an earlier round says this.
    r"|\b(?:does|do|did) something (?:with|to|about)\b|\bsomething to do with\b",
    re.IGNORECASE,
)


def _admits_not_knowing(text: str) -> bool:
    """Whether a sentence says the learner does not know or remember something, or names a
    mechanism only as "something"."""
    return bool(_ADMITS_NOT_KNOWING.search(text))


# Words that carry a clause: verbs, auxiliaries, connectives and pronouns. A sentence without
# any of them is a list of terms, whatever punctuation it uses.
_EXPLAINING_WORDS = """
    is are was were be been being am has have had having does do did doing done can could
    will would should may might must need needs needed shall isn't aren't wasn't weren't
    doesn't don't didn't can't won't wouldn't couldn't shouldn't hasn't haven't isnt arent
    doesnt dont cant wont it's that's there's you're we're they're i'm let's because since
    so which that while whereas when whenever if than therefore thus hence but although
    though unless until once whether why how where it its they them their this these those
    we you i there he she one read reads reading loads loading loaded streams processes
    processed processing generate generates generated generating produce produces produced
    producing scales scaled scaling depend depends depending grow grows growing grew take
    takes taking took make makes making made uses using used fits fitting limits limited
    dominate dominates dominated costs move moves moving runs running ran hold holds stores
    stored save saves saving saved reduce reduces reducing reduced increase increases
    increasing increased cuts cutting become becomes get gets getting got stay stays keep
    keeps keeping kept add adds adding added shares shared sharing amortise amortises
    amortize amortizes amortised amortized spend spends spent waits waiting finish finishes
    finished join joins joining leave leaves leaving fills filled means mean meant help
    helps helped pay pays paid buy trades traded lose loses lost drops dropped go goes going
    went happen happens happened matters works worked let lets allow allows allowed give
    gives gave given require requires required want wants think know measures measured see
    sees seen saw say says said calls called computes computed multiply multiplies divide
    divides divided multiplied fetch fetches fetched sit sits sat passes passed swaps
    swapped stops stopped starts started serve serves served serving handle handles handled
    schedules scheduled admit admits admitted evict evicts evicted exceed exceeds exceeded
    wastes wasted lower lowers lowered raise raises raised rises shrink shrinks shrank
    doubles doubled halve halves halved lands arrive arrives arrived appear appears appeared
    shows showed bottlenecked wait fit matter share show start stop fill pass call swap land
    rise rent store pick picks picked prefer prefers preferred choose chooses chose chosen
    win wins beat beats outperform outperforms outperformed hurts
    break breaks broke broken set sets round rounds rounded mix mixes mixed spread spreads fold
    folds folded run losing look looks looked fitted became come comes came flow flows flowed
    fall falls fell learn learns learned learnt suit suits suited
    convert converts converted converting turn turns turned turning drift drifts drifted drifting
"""
_EXPLAINING = frozenset(_EXPLAINING_WORDS.split())
# Note-taking marks that state a relation as a verb would: "prefill = compute-bound".
_RELATION_MARK = re.compile(r"=|->|=>|\u2192")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\u2019]*")


@dataclass
class SentenceAnalysis:
    sentence: Sentence
    occurrences: dict[str, list[Occurrence]] = field(default_factory=dict)
    # Reported, supposed or asked rather than claimed: it cannot state the learner's belief.
    distanced: bool = False
    # Whether the sentence makes a claim at all (has a verb or connective); a bare list of
    # terms cannot state a misconception.
    claims: bool = True
    # The learner says here that they do not know or remember something: the sentence earns no
    # point, by patterns or by meaning (beliefs are still read in it).
    disclaims: bool = False
    # Contrast-group concepts carried over from the previous sentence by a leading pronoun
    # ("Decode reads every weight per token. It is memory-bound."), with where that began.
    inherited: frozenset[str] = frozenset()
    inherited_from: int | None = None

    def present(self, concept_id: str) -> bool:
        if concept_id in self.inherited:
            return True
        return any(not o.negated for o in self.occurrences.get(concept_id, ()))


@dataclass
class AnswerAnalysis:
    text: str
    sentences: list[SentenceAnalysis]
    contrasts: tuple[tuple[str, ...], ...]


# A sentence whose subject is a pronoun ("It is memory-bound."). "That's why" and "This
# means" point at a whole statement, not at one subject, so they carry nothing over.
_PRONOUN_START = re.compile(
    r"^(?:and\s+|so\s+|hence\s+|therefore\s+|thus\s+)?"
    r"(?:it|its|it's|they|this|these|those|which|each\s+of\s+(?:those|these|them)"
    r"|that(?!(?:'s|\s+is|\s+was)\s+(?:also\s+|exactly\s+|precisely\s+)?"
    r"(?:why|how|where|what|because)|\s+way|,)"
    r"|(?:each|every)\s+(?:such\s+)?step)\b(?!\s+means)",
    re.IGNORECASE,
)


def _negation_scopes(text: str, start: int, end: int) -> list[tuple[int, int, int]]:
    """(cue start, scope start, scope end) for each negation cue in text[start:end]."""
    scopes: list[tuple[int, int, int]] = []
    for cue in _NEGATION.finditer(text, start, end):
        stop = _SCOPE_END.search(text, cue.end(), end)
        limit = stop.start() if stop else end
        words = list(re.finditer(r"\S+", text[cue.end() : limit]))
        if cue.group("contrast"):
            # The noun phrase ends at the first verb, pronoun or connective.
            kept = 0
            for word in words[:_CONTRAST_SCOPE_WORDS]:
                if word.group().lower().strip(".,;:") in _EXPLAINING:
                    break
                kept += 1
            limit = cue.end() + (words[kept - 1].end() if kept else 0)
        elif len(words) > _SCOPE_WORDS:
            limit = cue.end() + words[_SCOPE_WORDS - 1].end()
        scopes.append((cue.start(), cue.end(), limit))
    return scopes


def analyse(
    *, text: str, concepts: Mapping[str, Concept], concept_ids: Iterable[str],
    contrasts: Sequence[Sequence[str]] = (),
) -> AnswerAnalysis:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    sentences = split_sentences(text)
    wanted = sorted(set(concept_ids))
    found: list[tuple[str, int, int]] = []
    for concept_id in wanted:
        found.extend(
            (concept_id, start, end) for start, end in find_concept(concepts[concept_id], text)
        )
    found.sort(key=lambda item: item[1])

    analyses: list[SentenceAnalysis] = []
    cursor = 0
    for sentence in sentences:
        scopes = _negation_scopes(text, sentence.start, sentence.end)
        inside = []
        while cursor < len(found) and found[cursor][1] < sentence.start:
            cursor += 1
        probe = cursor
        while probe < len(found) and found[probe][1] < sentence.end:
            concept_id, _, end = found[probe]
            absent = compile_absent(concepts[concept_id])
            if end <= sentence.end and not (absent and absent.search(sentence.text)):
                inside.append(found[probe])
            probe += 1
        occurrences: dict[str, list[Occurrence]] = {}
        for concept_id, start, end in inside:
            # A word of a negation cue is the cue, not a concept of its own: "longer" in "no
            # longer wait" says nothing about anything taking longer (round 45's chunked-prefill
            # answers). A concept that begins with the cue ("no longer", in a list of negation
            # words) is kept.
            if any(cue_start < start and end <= scope_start for cue_start, scope_start, _ in scopes):
                continue
            negated = False
            for cue_start, scope_start, scope_end in scopes:
                if not scope_start <= start < scope_end:
                    continue
                # A cue that is part of another concept's wording ("doesn't depend on") belongs
                # to that concept; it only negates what lies inside that concept's span. A
                # concept that is no more than the cue itself (a list of negation words kept
                # for `unless`) is not wording that owns it.
                host = next(
                    (
                        (s, e) for cid, s, e in inside
                        if cid != concept_id and s <= cue_start < e
                        and not (s == cue_start and e <= scope_start)
                    ),
                    None,
                )
                if host is not None and not (host[0] <= start and end <= host[1]):
                    continue
                negated = True
                break
            occurrences.setdefault(concept_id, []).append(
                Occurrence(concept=concept_id, start=start, end=end, negated=negated),
            )
        analyses.append(
            SentenceAnalysis(
                sentence=sentence, occurrences=occurrences,
                distanced=bool(_DISTANCING.search(sentence.text)) or _asks_or_quotes(sentence.text),
                claims=_claims(sentence.text),
                disclaims=_admits_not_knowing(sentence.text),
            ),
        )

    for previous, current in pairwise(analyses):
        if not _PRONOUN_START.match(current.sentence.text):
            continue
        # The pronoun is the subject of the sentence's first clause. A rival named only after
        # that clause ("That is memory-bound, so it emits fewer output tokens than it ingests
        # input tokens") is compared with the subject, not the subject itself.
        first_clause = _SCOPE_END.search(text, current.sentence.start, current.sentence.end)
        first_clause_end = first_clause.start() if first_clause else current.sentence.end
        carried: set[str] = set()
        for group in contrasts:
            if any(
                o.start < first_clause_end
                for member in group for o in current.occurrences.get(member, ())
            ):
                continue
            said = [m for m in group if previous.present(m)]
            if len(said) == 1:
                carried.add(said[0])
        if carried:
            current.inherited = frozenset(carried)
            current.inherited_from = previous.sentence.start
    return AnswerAnalysis(text=text, sentences=analyses, contrasts=tuple(map(tuple, contrasts)))


# --- Relations ------------------------------------------------------------------------------

_FUNCTION_WORDS_TEXT = (
    "and or vs versus the a an of to in on for with by at as is are was be its it this that "
    "while whereas but than so from into like unlike over under about per via"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())


def _segment_start(text: str, occurrence: Occurrence, floor: int) -> int:
    """Where an occurrence's side of a contrast begins.

    Usually at the occurrence itself; but a short run of modifiers right before it belongs to
    it ("compute-bound prefill vs memory-bound decode"), unless the occurrence starts a clause
    of its own ("... memory bound prefill is compute bound").
    """
    following = re.match(r"\s*([A-Za-z']+)", text[occurrence.end :])
    if following and following.group(1).lower() in _EXPLAINING:
        return occurrence.start
    position = occurrence.start
    for _ in range(3):
        word = re.search(r"([A-Za-z][\w\-/]*)\s+$", text[floor:position])
        if not word or word.group(1).lower() in _FUNCTION_WORDS:
            break
        position = floor + word.start(1)
    return position


_RELATIVE_AFTER_COMMA = re.compile(r",\s*(?:which|who|where)\b", re.IGNORECASE)

_COORDINATED = re.compile(
    r"^(?:\s|,|and|or|plus|\+|&|/|as well as|the|its|their|both|either)*$", re.IGNORECASE,
)


def _territory(
    analysis: SentenceAnalysis, text: str, group: Sequence[str], concept_id: str,
) -> list[tuple[int, int]]:
    """Spans of the sentence that talk about `concept_id` rather than its rivals in `group`.

    Each mention of a group member owns the text up to the next mention. Mentions joined only
    by a conjunction ("the weights and the KV cache") share what follows them.
    """
    sentence = analysis.sentence
    # A member carried over by the leading pronoun is mentioned where the sentence starts.
    members = sorted(
        [
            *(o for g in group for o in analysis.occurrences.get(g, ())),
            *(
                Occurrence(concept=g, start=sentence.start, end=sentence.start, negated=False)
                for g in group if g in analysis.inherited
            ),
        ],
        key=lambda o: o.start,
    )
    starts = [sentence.start]
    for index, occurrence in enumerate(members[1:], start=1):
        floor = members[index - 1].end
        starts.append(max(floor, _segment_start(text, occurrence, floor)))
    starts.append(sentence.end)

    chains: list[tuple[int, int, set[str], bool, int]] = []  # begin, finish, owners, negated, end
    index = 0
    while index < len(members):
        last = index
        while (
            last + 1 < len(members)
            and members[last + 1].negated == members[index].negated
            and _COORDINATED.match(text[members[last].end : members[last + 1].start])
        ):
            last += 1
        chains.append(
            (
                starts[index], starts[last + 1], {m.concept for m in members[index : last + 1]},
                members[index].negated, members[last].end,
            ),
        )
        index = last + 1

    owned: list[tuple[int, int]] = []
    for position, (begin, finish, owners, negated, mention_end) in enumerate(chains):
        if not negated:
            if concept_id in owners:
                owned.append((begin, finish))
            continue
        # A negated mention ("unlike prefill,") holds the floor only for its own clause; the
        # rest goes back to whoever had it before, or to the next mention if nobody did.
        stop = _SCOPE_END.search(text, mention_end, finish)
        relative = stop and _RELATIVE_AFTER_COMMA.match(text, stop.start())
        if relative:
            # "unlike prefill, which is compute-bound": the relative clause is prefill's too.
            stop = _SCOPE_END.search(text, relative.end(), finish)
        clause_end = stop.start() if stop else finish
        if clause_end >= finish:
            continue
        before = [c for c in chains[:position] if not c[3]]
        after = [c for c in chains[position + 1 :] if not c[3]]
        heir = before[-1] if before else (after[0] if after else None)
        if heir is not None and concept_id in heir[2]:
            owned.append((clause_end, finish))
    return owned


def _shared_conclusion(
    analysis: SentenceAnalysis, text: str, group: Sequence[str], occurrence: Occurrence,
) -> bool:
    """Whether an occurrence sits in a clause about neither side of the contrast.

    In "the KV cache adds a little next to the weights, so TPOT hardly moves", the last clause
    has its own subject (TPOT); it is a conclusion of the whole sentence, not a property of
    the weights. A clause with a pronoun subject ("so it is memory-bound") still belongs to
    the side it points back to.
    """
    sentence = analysis.sentence
    begin = sentence.start
    for boundary in _SCOPE_END.finditer(text, sentence.start, occurrence.start):
        begin = boundary.start()
    after = _SCOPE_END.search(text, occurrence.end, sentence.end)
    finish = after.start() if after else sentence.end
    for member in group:
        if any(begin <= o.start < finish for o in analysis.occurrences.get(member, ())):
            return False
    # Only a clause with a subject of its own is a conclusion; ", is memory-bound" after a
    # parenthesis continues the clause before it, and "so it is ..." points back.
    lead = re.sub(
        r"^(?:[\s,;:()\-]|(?:and|but|so|while|whereas|because|since|then|thus|hence|therefore"
        r"|as)\b)+",
        "",
        text[begin:occurrence.start],
        flags=re.IGNORECASE,
    )
    first = re.match(r"[A-Za-z']+", lead)
    return first is not None and first.group().lower() not in _EXPLAINING


def holds(
    *, analysis: AnswerAnalysis, index: int, alternative: Sequence[str],
) -> bool:
    """Whether one alternative (`a + b + c`) holds in sentence `index`."""
    sentence = analysis.sentences[index]
    if not all(sentence.present(concept_id) for concept_id in alternative):
        return False
    for concept_id in alternative:
        for group in analysis.contrasts:
            if concept_id not in group:
                continue
            rivals_here = any(
                rival != concept_id and rival not in alternative
                and (rival in sentence.occurrences or rival in sentence.inherited)
                for rival in group
            )
            if not rivals_here:
                continue
            territory = _territory(sentence, analysis.text, group, concept_id)
            for other in alternative:
                if other == concept_id or other in group or other in sentence.inherited:
                    continue
                if not any(
                    not o.negated
                    and (
                        any(lo <= o.start < hi for lo, hi in territory)
                        or _shared_conclusion(sentence, analysis.text, group, o)
                    )
                    for o in sentence.occurrences.get(other, ())
                ):
                    return False
    return True


def any_present(*, analysis: AnswerAnalysis, index: int, concept_ids: Iterable[str]) -> bool:
    sentence = analysis.sentences[index]
    return any(sentence.present(concept_id) for concept_id in concept_ids)


def evidence_span(*, analysis: AnswerAnalysis, index: int) -> tuple[int, int]:
    sentence = analysis.sentences[index]
    start = sentence.sentence.start
    if sentence.inherited_from is not None:
        start = sentence.inherited_from
    return start, sentence.sentence.end


# --- Keyword lists --------------------------------------------------------------------------

_CLAUSE_SPLIT = re.compile(
    r"[,;:\n/|\u2022\u00b7]|->|\u2192|=>|\s[-\u2013\u2014]\s|\.(?=\s|$)|[!?]",
)


# Working such as "8B params x 2 bytes = 16 GB" explains even without a verb.
_CALCULATION = re.compile(r"\d[^=\n]*=\s*~?\d|\d\s*(?:[x\u00d7*+]|->|\u2192)\s*\d")
_ITEM_SPLIT = re.compile(r"[,;\n\u2022]")


def _items(text: str) -> list[str]:
    """The pieces between commas, semicolons, bullets and line breaks that hold a word."""
    return [c for c in _ITEM_SPLIT.split(text) if _TOKEN.search(c)]


# Articles and prepositions: a clause of at least _GRAMMAR_CLAUSE words with two of them is
# written as a sentence, whatever its verb ("SmoothQuant applies a Gaussian smoothing filter to
# the weight matrix to remove spikes before rounding", round 45, was read as a list of terms:
# "applies" and "remove" are not in _EXPLAINING_WORDS). Measured on every labelled answer of
# rounds 1-45 (session 38): no keyword-list answer is uncapped by it.
_GRAMMAR_WORDS = frozenset(
    ("the", "a", "an", "to", "of", "by", "with", "for", "from", "into", "on", "in", "at"),
)
_GRAMMAR_CLAUSE = 8


def _written_as_sentence(words: list[str]) -> bool:
    return len(words) >= _GRAMMAR_CLAUSE and sum(w in _GRAMMAR_WORDS for w in words) >= 2


def _claims(text: str) -> bool:
    """Whether a sentence makes a claim: it has a relation mark, a verb or connective the
    closed list knows, or it is written as a sentence (long, with articles and prepositions)
    and is not a list of terms. Round 46: "SmoothQuant flattens the weight distribution by
    clipping and redistributing the extreme weight values across channels" knows none of those
    verbs, yet states a belief."""
    if _RELATION_MARK.search(text):
        return True
    words = [w.lower().replace("\u2019", "'") for w in _TOKEN.findall(text)]
    if any(w in _EXPLAINING for w in words):
        return True
    return _written_as_sentence(words) and not is_term_list(text)


def _explained_words(text: str) -> tuple[int, int]:
    """(words in clauses that explain, all words): a clause explains when it has at least three
    words and one of them is a verb, auxiliary, connective or pronoun, when it is a calculation,
    or when it is long and has the articles and prepositions of a sentence."""
    total = 0
    explained = 0
    for clause in (c.strip() for c in _CLAUSE_SPLIT.split(text) if c and c.strip()):
        words = [w.lower().replace("\u2019", "'") for w in _TOKEN.findall(clause)]
        total += len(words)
        if (
            (len(words) >= 3 and any(w in _EXPLAINING for w in words))
            or _CALCULATION.search(clause)
            or _written_as_sentence(words)
        ):
            explained += len(words)
    return explained, total


def is_term_list(text: str) -> bool:
    """Whether a sentence is a list of terms: at least four items between commas, semicolons,
    bullets or line breaks, and fewer than 40% of its words in clauses that explain
    (keyword_list_reason's rule for a whole answer). A sentence with one or two commas and a
    verb the clause test does not know ("the decode instance rebuilds the KV cache") is not."""
    explained, total = _explained_words(text)
    return len(_items(text)) >= 4 and explained / total < 0.4


def keyword_list_reason(text: str) -> str | None:
    """Why an answer reads as a list of terms rather than an explanation, or None.

    A clause explains when it has at least three words and one of them is a verb, auxiliary,
    connective or pronoun, or when it is a calculation. An answer where fewer than 40% of
    the words sit in explaining clauses is a list, however it is punctuated (commas,
    newlines, arrows); so is a run of three or more very short notes.
    """
    explained, total = _explained_words(text)
    if total == 0:
        return "The answer has no words to grade."
    items = [len(_TOKEN.findall(c)) for c in _items(text)]
    if len(items) >= 3 and max(items) <= 5 and sum(items) / len(items) <= 3.5:
        return (
            "The answer is a set of short notes rather than sentences that explain, so it is "
            "capped at 35%."
        )
    if explained == 0:
        return (
            "The answer lists terms without a sentence that explains how they connect, so it "
            "is capped at 35%."
        )
    if explained / total < 0.4:
        return (
            "Most of the answer is a list of terms rather than sentences that explain, so it "
            "is capped at 35%."
        )
    return None
