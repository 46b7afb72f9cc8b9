"""Deployable URL-normalization rules of one site: a :class:`RuleSet`.

A rule rewrites the URLs of one pattern-tree node (the source) into the format of another (the
target) with one operation per target key (``003_…`` §3): *keep* a constant value, *replace* it
with the value of a source key, or *ignore* it (a query, ``;`` or fragment key is dropped; a
path key takes the target's most common value, so the result is a URL the site serves). Chains
of rules found by the selection step are stored concatenated.

Safety holds by construction and is checked again when a rule set is loaded: rules never touch
the scheme, user, host or port (those keys are copied from the input); a rule's target is never
the source of another rule, so there are no cycles; and :meth:`RuleSet.apply` returns a URL
only when applying the rules to it again leaves it unchanged.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from scrapy_templates.documents import DocumentError, read_document, whole

from .tree import ABSENT, MAX_DEPTH, Absent, Token
from .url import AUTHORITY_KEYS, UrlKeys, Value, is_authority_key, is_url_key, split_url, to_url

FORMAT = "scrapy-templates/url-rules"
OpKind = Literal["keep", "replace", "ignore"]
_DROPPED_PREFIXES = ("?", ";", "#")
# pairs of URLs known to be distinct pages that a rule set carries (newest kept)
MAX_APART = 1000
# The learner keeps three examples of each rule; a document holding more is refused (each
# example is applied when the rule set is validated).
MAX_EXAMPLES = 3
# Tree nodes visited in all, per rule set, to prove rules' results settled (see
# :meth:`RuleSet._always_stable`); past it, the rules left are checked when applied.
MAX_SETTLE_VISITS = 200_000


class _Any:
    """Stands for "any value" of a replaced key when results are reasoned about."""


class RuleSetError(ValueError):
    """A rule set that is malformed or unsafe; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Op:
    """One rewrite operation on a target key: ``keep`` sets ``value``, ``replace`` copies the
    source key ``source``, ``ignore`` drops the key or, for a path key, sets ``value``."""

    kind: OpKind
    key: str
    value: Value = None
    source: str | None = None

    def describe(self) -> str:
        if self.kind == "keep":
            return f"keep {self.key}={self.value!r}"
        if self.kind == "replace":
            return f"{self.key} := {self.source}"
        if self.key.startswith(_DROPPED_PREFIXES):
            return f"drop {self.key}"
        return f"ignore {self.key} (use {self.value!r})"


@dataclass(frozen=True, slots=True)
class Rule:
    """Rewrite of the URLs of node ``source`` into the format of node ``target``; ``steps``
    holds the operation lists of a concatenated chain, applied in order. ``when`` pins keys
    to the one value the rule was seen to hold for (``?page='1'``): a URL where such a key
    has another value gets the ``fallback`` rule of the same node, if there is one (dropping
    a session id on every page of a listing, say), or is left alone. ``checked`` and
    ``held``: how many of the URLs it rewrote or dropped during a crawl were fetched anyway
    to compare, and how many of those were the page it took them for."""

    source: int
    target: int
    steps: tuple[tuple[Op, ...], ...]
    support: int = 0
    fpr: float = 0.0
    examples: tuple[tuple[str, str], ...] = ()
    when: tuple[tuple[str, Value], ...] = ()
    fallback: Rule | None = None
    checked: int = 0
    held: int = 0

    def variants(self) -> tuple[Rule, ...]:
        """This rule and its fallback, if any."""
        return (self,) if self.fallback is None else (self, self.fallback)

    def behaviour(self) -> tuple[Any, ...]:
        """What rewriting depends on: nodes, operations, pinned keys and the fallback's, not
        the evidence (support, fpr, examples, checks)."""
        fallback = None if self.fallback is None else self.fallback.behaviour()
        return (self.source, self.target, self.steps, self.when, fallback)

    def admits(self, values: Mapping[str, Value]) -> bool:
        """Whether every pinned key of the URL ``values`` is absent or has its value."""
        for key, want in self.when:
            have = values.get(key, ABSENT)
            if have is not ABSENT and have != want:
                return False
        return True


def apply_ops(keys: UrlKeys, steps: Iterable[Iterable[Op]]) -> UrlKeys | None:
    """Run rule steps over ``keys``; ``None`` when a replace finds no source value."""
    current = keys
    for ops in steps:
        values = current.as_dict()
        out: list[tuple[str, Value]] = [
            (k, v) for k, v in current.pairs if k in AUTHORITY_KEYS or k.startswith("host_")
        ]
        for op in ops:
            if op.source is not None:
                if op.source not in values:
                    return None
                out.append((op.key, values[op.source]))
            elif op.kind == "keep" or not op.key.startswith(_DROPPED_PREFIXES):
                out.append((op.key, op.value))
        current = UrlKeys(tuple(out))
    return current


@dataclass(frozen=True, slots=True)
class TreeNode:
    """What matching needs of a pattern-tree node."""

    parent: int | None
    fixed: Mapping[str, Token]
    split_key: str | None
    children: Mapping[Token, int]
    wildcard: int | None
    required: frozenset[str]
    optional: frozenset[str]
    glob: str = ""
    dup_rate: float = 0.0
    known: frozenset[str] = field(default=frozenset(), init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "known", self.required | self.optional)


def _matching(node: TreeNode) -> tuple[Any, ...]:
    """The fields of ``node`` that matching a URL reads (mappings compared as such)."""
    return (
        node.parent,
        dict(node.fixed),
        node.split_key,
        dict(node.children),
        node.wildcard,
        node.required,
        node.optional,
    )


_Result = dict[str, Token | type[_Any]]
"""A rule's result as far as its operations know it: a constant per kept or ignored path key,
:class:`_Any` per replaced key."""


def _known_result(ops: Iterable[Op]) -> _Result:
    """What the operations of one rule step write, with :class:`_Any` for replaced keys."""
    out: _Result = {}
    for op in ops:
        if op.source is not None:
            out[op.key] = _Any
        elif op.kind == "keep" or not op.key.startswith(_DROPPED_PREFIXES):
            out[op.key] = op.value
    return out


def _may_fit(node: TreeNode, out: _Result) -> bool:
    """Whether a URL of the known keys ``out`` may have the values ``node`` fixes (the
    scheme, user, host and port are taken to match)."""
    for key, want in node.fixed.items():
        have = out.get(key, ABSENT) if not is_authority_key(key) else want
        if have is not _Any and have != want:
            return False
    return True


def _branches(node: TreeNode, out: _Result) -> list[int]:
    """The children of ``node`` a URL of the known keys ``out`` may go on to: every one when
    the split key may have any value, the child of its value, else the wildcard child unless
    the key is absent."""
    if node.split_key is None:
        return []
    have = out.get(node.split_key, ABSENT)
    if is_authority_key(node.split_key) or have is _Any:
        wildcard = [node.wildcard] if node.wildcard is not None else []
        return [*node.children.values(), *wildcard]
    if not isinstance(have, type) and have in node.children:
        return [node.children[have]]
    if not isinstance(have, Absent) and node.wildcard is not None:
        return [node.wildcard]
    return []


def _replacements_settle(ops: Iterable[Op], out: _Result) -> bool:
    """Whether the replaces of ``ops`` give the same values when run on their own result
    ``out``: each copies a key onto itself, a key the result lacks, or a key that itself
    is copied onto itself."""
    replaced = {op.key: op.source for op in ops if op.source is not None}
    return all(
        source == key or source not in out or replaced.get(source) == source
        for key, source in replaced.items()
    )


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why :meth:`RuleSet.apply` did what it did to one URL."""

    url: str
    result: str
    node: int | None
    rule: Rule | None
    reason: str


@dataclass
class RuleSet:
    """The deployable rules of one site, with the pattern tree they are attached to.

    ``apart``: pairs of URLs a crawl found to be distinct pages (a rule took one for the
    other, and fetching both showed otherwise); no rule set carrying them maps a pair onto
    one URL (see :meth:`keeping_apart`). ``retracted``: the nodes whose rules did: they still
    decide the URLs below them, and leave them as they are, so that a rule of an ancestor
    node does not take those URLs over. ``claims_refuted``: a check found a page of the site
    naming as its ``rel=canonical`` another page; the site's canonical links are no longer
    duplicate evidence, in any process that adopts the rule set, in this crawl or a later
    one over the same store."""

    site: str
    version: int
    nodes: list[TreeNode]
    rules: dict[int, Rule]
    destinations: frozenset[int] = frozenset()
    learned_from: int = 0
    apart: tuple[tuple[str, str], ...] = ()
    retracted: frozenset[int] = frozenset()
    claims_refuted: bool = False
    _decisive: frozenset[int] = field(default=frozenset(), init=False, repr=False)
    _walk: list[tuple[tuple[tuple[str, Token], ...], str | None, dict[Token, int], int | None]] = (
        field(default_factory=list, init=False, repr=False)
    )
    _allowed: dict[int, frozenset[str]] = field(default_factory=dict, init=False, repr=False)
    _settled: frozenset[int] = field(default=frozenset(), init=False, repr=False)
    dropped_query_keys: frozenset[str] = field(default=frozenset(), init=False, repr=False)
    """Query keys (``?name``) some rule drops: parameters the site adds without changing
    the page."""
    refused_results: int = field(default=0, init=False, repr=False, compare=False)
    """URLs left as they were because a rule's result would have read as other keys or
    would not have been left as it is by the rules (see :meth:`apply`)."""

    def __post_init__(self) -> None:
        self._decisive = frozenset(self.rules)
        self.dropped_query_keys = frozenset(
            op.key
            for nid, pinned in self.rules.items()
            if nid not in self.retracted
            for rule in pinned.variants()
            for ops in rule.steps
            for op in ops
            if op.kind == "ignore" and op.key.startswith("?") and op.key not in dict(rule.when)
        )
        # per node: the fixed values still to check once the parent's split chose it (the
        # split key's own value is already matched by the child lookup), split key, children
        self._walk = []
        for n in self.nodes:
            split_by = None if n.parent is None else self.nodes[n.parent].split_key
            fixed = tuple((k, v) for k, v in n.fixed.items() if k != split_by)
            self._walk.append((fixed, n.split_key, dict(n.children), n.wildcard))
        site_keys = frozenset(self.nodes[0].fixed) if self.nodes else frozenset()
        self._allowed = {nid: self.nodes[nid].known | site_keys for nid in self.rules}
        # a node with a pinned rule has two rules: its results are checked when applied
        budget = [MAX_SETTLE_VISITS]
        self._settled = frozenset(
            nid
            for nid, rule in self.rules.items()
            if not rule.when and nid not in self.retracted and self._always_stable(nid, budget)
        )

    @classmethod
    def empty(cls, site: str) -> RuleSet:
        return cls(site, 0, [], {})

    def behaves_like(self, other: RuleSet) -> bool:
        """Whether :meth:`apply` gives the same result for every URL under both: the same
        tree to match (duplicate rates aside) and the same rules (their evidence aside), the
        version and the sample size aside."""
        if (
            len(self.nodes) != len(other.nodes)
            or self.rules.keys() != other.rules.keys()
            or self.retracted != other.retracted
        ):
            return False
        return all(
            _matching(a) == _matching(b) for a, b in zip(self.nodes, other.nodes, strict=True)
        ) and all(
            rule.behaviour() == other.rules[nid].behaviour() for nid, rule in self.rules.items()
        )

    def _decide(self, values: dict[str, Value]) -> int | None:
        """Deepest node on the URL's path that has a rule."""
        return self._walk_tree(values)[1]

    def _rate_at(self, deepest: int | None) -> float:
        """The duplicate rate, in the training URLs, of leaf pattern ``deepest`` (0 for a URL
        that fits no leaf): how likely a URL of this form is a copy of another."""
        if deepest is None or self.nodes[deepest].split_key is not None:
            return 0.0  # the URL left the tree before a leaf: a form not seen in training
        return self.nodes[deepest].dup_rate

    def _walk_tree(self, values: dict[str, Value]) -> tuple[int | None, int | None]:
        """The deepest node the URL fits and the deepest one on the way with a rule."""
        walk = self._walk
        if not walk:
            return None, None
        decisive = self._decisive
        fixed, split, children, wildcard = walk[0]
        for key, want in fixed:
            if values.get(key, ABSENT) != want:
                return None, None
        node = 0
        found = 0 if 0 in decisive else None
        while split is not None:
            value: Token = values.get(split, ABSENT)
            child = children.get(value)
            if child is None:
                if value is ABSENT or wildcard is None:
                    break
                child = wildcard
            fixed, next_split, next_children, next_wildcard = walk[child]
            if fixed and any(values.get(key, ABSENT) != want for key, want in fixed):
                break
            split, children, wildcard = next_split, next_children, next_wildcard
            node = child
            if child in decisive:
                found = child
        return node, found

    def _always_stable(self, nid: int, budget: list[int]) -> bool:
        """Whether every result of the rule at ``nid`` is provably left alone by the rules,
        so :meth:`apply` need not check it: walking the tree with the result's known keys
        (constants, and "any value" for replaced keys) reaches no node with a rule other
        than ``nid`` itself, and when it can reach ``nid``, the rule's last step gives the
        same result when applied to its own output. Not proved (false) once the walks
        have used up ``budget[0]`` node visits."""
        last = self.rules[nid].steps[-1]
        out = _known_result(last)
        reached = self._rules_reached(out, budget)
        if reached is None or not reached <= {nid}:
            return False
        return _replacements_settle(last, out)

    def _rules_reached(self, out: _Result, budget: list[int]) -> set[int] | None:
        """The nodes with a rule that a URL of the known keys ``out`` may reach in the tree,
        following every branch an "any value" (or a scheme, user, host or port, which a
        rule copies from its input) can take; ``None`` when that takes more node visits
        than ``budget[0]`` has left (each visit is taken from it)."""
        reached: set[int] = set()
        seen: set[int] = set()  # a tree read from a document may loop until it is validated
        todo = [0]
        while todo:
            index = todo.pop()
            if index in seen:
                continue
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            seen.add(index)
            node = self.nodes[index]
            if not _may_fit(node, out):
                continue
            if index in self._decisive:
                reached.add(index)
            todo += _branches(node, out)
        return reached

    def _rewrite(self, keys: UrlKeys) -> tuple[UrlKeys | None, int | None, Rule | None, str]:
        """The rewritten keys (``None``: unchanged), the deciding node, its rule that applied
        and why."""
        values = keys.as_dict()
        return self._rewrite_at(keys, values, self._decide(values))

    def _rewrite_at(
        self, keys: UrlKeys, values: dict[str, Value], nid: int | None
    ) -> tuple[UrlKeys | None, int | None, Rule | None, str]:
        """:meth:`_rewrite` once the deciding node ``nid`` of ``values`` is known."""
        if nid is None:
            return None, None, None, "no rule for this pattern"
        rule = self.rules[nid]
        if nid in self.retracted:
            return None, nid, rule, "rule retracted"
        if not values.keys() <= self._allowed[nid]:
            return None, nid, rule, "keys outside the rule's pattern"
        if rule.when and not rule.admits(values):
            if rule.fallback is None:
                return None, nid, rule, "a pinned key has another value"
            rule = rule.fallback
        out = apply_ops(keys, rule.steps)
        if out is None:
            return None, nid, rule, "a source key is missing"
        return out, nid, rule, "rewritten"

    def explain(self, url: str) -> Explanation:
        """The result of :meth:`apply` with the node, rule and reason behind it."""
        out, nid, rule, reason = self._rewrite(split_url(url))
        if out is None:
            return Explanation(url, url, nid, rule, reason)
        result = to_url(out)
        if not _reads_back(result, out):
            return Explanation(url, url, nid, rule, "result would read as other keys")
        again = self._rewrite(out)[0]
        if again is not None and to_url(again) != result:
            return Explanation(url, url, nid, rule, "result not stable under the rules")
        if result == url:
            reason = "already canonical"
        return Explanation(url, result, nid, rule, reason)

    def apply(self, url: str) -> str:
        """The canonical form of ``url`` (``url`` itself when no rule applies, or when the
        result would not be left as it is by the rules: applying twice equals once)."""
        out, nid, _, _ = self._rewrite(split_url(url))
        return self._settled_url(url, out, nid)

    def apply_with_rate(self, url: str) -> tuple[str, float]:
        """:meth:`apply`, and — when it leaves ``url`` as it is — the duplicate rate, in the
        training URLs, of the leaf pattern ``url`` fits (0 otherwise, and for a URL that fits
        no leaf): how likely a URL of this form is a copy of another."""
        canonical, rate, _ = self.resolve(url)
        return canonical, rate

    def resolve(self, url: str) -> tuple[str, float, int | None]:
        """:meth:`apply_with_rate` and the node whose rule rewrote ``url`` (``None`` when it
        is left as it is). One split of the URL and one walk of the tree answer all three."""
        keys = split_url(url)
        values = keys.as_dict()
        deepest, nid = self._walk_tree(values)
        out = self._rewrite_at(keys, values, nid)[0]
        canonical = self._settled_url(url, out, nid)
        if canonical == url:
            return url, self._rate_at(deepest), None
        return canonical, 0.0, nid

    def signature(self, nid: int) -> str:
        """The rule of node ``nid`` as people read it (source pattern, target pattern, what it
        changes): the same for the same rule learned again with other node numbers."""
        return self._signatures[nid]

    @functools.cached_property
    def _signatures(self) -> dict[int, str]:
        """Every rule's signature, made once: a check names its rule per request turned away."""
        made = {}
        for nid, rule in self.rules.items():
            changes = "; ".join(self._changes(rule))
            made[nid] = (
                f"{self.nodes[rule.source].glob} -> {self.nodes[rule.target].glob}: {changes}"
            )
        return made

    @functools.cached_property
    def _inherited(self) -> list[dict[str, Token]]:
        """Each node's fixed values and those of the nodes above it, the nearest first: made
        once from the parents' (a walk up from every rule was cubic in a deep tree)."""
        made: list[dict[str, Token]] = []
        for node in self.nodes:
            above = made[node.parent] if node.parent is not None else {}
            made.append({**above, **node.fixed})
        return made

    def keeping_apart(self, pairs: Iterable[tuple[str, str]]) -> RuleSet:
        """This rule set with ``pairs`` added to :attr:`apart` and the rules retracted that
        map a pair onto one URL: the rule that rewrote either URL, until none does."""
        apart = tuple(dict.fromkeys((*self.apart, *pairs)))[-MAX_APART:]
        ruleset = self if apart == self.apart else self._with(apart=apart)
        for first, second in apart:
            while True:
                one, _, by_one = ruleset.resolve(first)
                two, _, by_two = ruleset.resolve(second)
                if one != two or (by_one is None and by_two is None):
                    break
                wrong = {n for n in (by_one, by_two) if n is not None}
                ruleset = ruleset._with(retracted=ruleset.retracted | wrong)
        return ruleset

    def with_checks(self, counts: Mapping[str, tuple[int, int]]) -> RuleSet:
        """This rule set with each rule's ``checked`` and ``held`` taken from ``counts`` (by
        :meth:`signature`; a rule not in it keeps its own)."""
        rules = {}
        for nid, rule in self.rules.items():
            found = counts.get(self.signature(nid))
            rules[nid] = rule if found is None else replace(rule, checked=found[0], held=found[1])
        return self._with(rules=rules)

    def refuting_claims(self) -> RuleSet:
        """This rule set, saying that the site's ``rel=canonical`` links proved wrong."""
        return self if self.claims_refuted else self._with(claims_refuted=True)

    def check_counts(self) -> dict[str, tuple[int, int]]:
        """Each checked rule's ``(checked, held)``, by :meth:`signature`."""
        return {
            self.signature(nid): (rule.checked, rule.held)
            for nid, rule in self.rules.items()
            if rule.checked and nid not in self.retracted
        }

    def _with(
        self,
        *,
        rules: dict[int, Rule] | None = None,
        apart: tuple[tuple[str, str], ...] | None = None,
        retracted: frozenset[int] | None = None,
        claims_refuted: bool | None = None,
    ) -> RuleSet:
        """A copy with other rules, pairs kept apart, retracted nodes or trust in the
        site's canonical links."""
        return RuleSet(
            self.site,
            self.version,
            self.nodes,
            self.rules if rules is None else rules,
            self.destinations,
            self.learned_from,
            self.apart if apart is None else apart,
            self.retracted if retracted is None else retracted,
            self.claims_refuted if claims_refuted is None else claims_refuted,
        )

    def _settled_url(self, url: str, out: UrlKeys | None, nid: int | None) -> str:
        """The URL of the rewritten keys ``out``, or ``url`` when nothing was rewritten, when
        the result would read as other keys (a written value holding a delimiter: another
        host, port or user, another path) or when the rules would not leave it as it is."""
        if out is None:
            return url
        result = to_url(out)
        if not _reads_back(result, out):
            self.refused_results += 1
            return url
        if nid in self._settled:
            return result
        again = self._rewrite(out)[0]
        if again is not None and again.pairs != out.pairs and to_url(again) != result:
            self.refused_results += 1
            return url
        return result

    # -- JSON -----------------------------------------------------------------------------

    @property
    def rule_count(self) -> int:
        """The rules as people count them: a rule pinned to one value of a key and the
        fallback for its other values are two (two rows of :meth:`describe_rules`)."""
        return sum(
            len(pinned.variants())
            for nid, pinned in self.rules.items()
            if nid not in self.retracted
        )

    def describe_rules(self) -> list[dict[str, Any]]:
        """One plain row per rule, most support first, for people: the source and target URL
        patterns, every operation of the chain in order, support, fpr, how often it was
        checked in a crawl and held, whether it was retracted, and one example."""
        rows = []
        every = [rule for pinned in self.rules.values() for rule in pinned.variants()]
        for rule in sorted(every, key=lambda r: (-r.support, r.source, not r.when)):
            pinned = self.rules[rule.source]
            rows.append(
                {
                    "host": self.site,
                    "source": self.nodes[rule.source].glob,
                    "target": self.nodes[rule.target].glob,
                    "operations": [op.describe() for step in rule.steps for op in step],
                    "changes": self._changes(rule),
                    "chain": len(rule.steps),
                    "support": rule.support,
                    "fpr": rule.fpr,
                    "checked": pinned.checked,
                    "held": pinned.held,
                    "retracted": rule.source in self.retracted,
                    "example": list(rule.examples[0]) if rule.examples else None,
                }
            )
        return rows

    def _changes(self, rule: Rule) -> list[str]:
        """What a rule changes, for people: its operations without the ones that leave a key
        as the source node has it (``path_1 := path_1``, a ``keep`` of the value the node
        fixes), and ``drop K`` for each key of the source node the first step does not write; each
        change once, though a chain may repeat it. Pinned keys come first (``only where``)."""
        node = self.nodes[rule.source]
        fixed = self._inherited[rule.source]
        changes = [
            f"only where {key} has no value" if value is None else f"only where {key}={value!r}"
            for key, value in rule.when
        ]
        for index, step in enumerate(rule.steps):
            for op in step:
                unchanged = op.source == op.key or (
                    index == 0 and op.kind == "keep" and fixed.get(op.key) == op.value
                )
                if not unchanged:
                    changes.append(op.describe())
        written = {op.key for op in rule.steps[0]} if rule.steps else set()
        present = node.known | {k for k, v in fixed.items() if v is not ABSENT}
        for key in sorted(present - written):
            if key not in AUTHORITY_KEYS and not key.startswith("host_"):
                changes.append(f"drop {key}")
        return list(dict.fromkeys(changes))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "site": self.site,
            "version": self.version,
            "learned_from": self.learned_from,
            "nodes": [_node_json(n) for n in self.nodes],
            "destinations": sorted(self.destinations),
            "rules": [_rule_json(r) for r in self.rules.values()],
            **({"apart": [list(p) for p in self.apart]} if self.apart else {}),
            **({"retracted": sorted(self.retracted)} if self.retracted else {}),
            **({"claims_refuted": True} if self.claims_refuted else {}),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, data: Any, max_nodes: int | None = None) -> RuleSet:
        """Load and validate; raises :class:`RuleSetError` naming the first problem.
        ``max_nodes`` bounds the tree before anything is built from it (a tree learned from
        n samples has fewer than 2n nodes: every split has two children or more)."""
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise RuleSetError("not a scrapy-templates rule set")
            if max_nodes is not None and len(data["nodes"]) > max_nodes:
                raise RuleSetError(f"{len(data['nodes'])} tree nodes, more than {max_nodes}")
            if len(data.get("apart", ())) > MAX_APART:
                raise RuleSetError(f"more than {MAX_APART} pairs kept apart")
            nodes = [_node_from(n) for n in data["nodes"]]
            rules = [_rule_from(r) for r in data["rules"]]
            _check_depth(nodes)  # before anything is built: building proves rules settled
            ruleset = cls(
                site=str(data["site"]),
                version=whole(data["version"], "version"),
                nodes=nodes,
                rules={r.source: r for r in rules},
                destinations=frozenset(_index(d) for d in data["destinations"]),
                learned_from=whole(data.get("learned_from", 0), "learned_from"),
                apart=tuple((str(a), str(b)) for a, b in data.get("apart", [])),
                retracted=frozenset(_index(n) for n in data.get("retracted", [])),
                claims_refuted=_flag(data.get("claims_refuted", False), "claims_refuted"),
            )
            if len(ruleset.rules) != len(rules):
                raise RuleSetError("two rules share a source node")
            ruleset.validate()
        except RuleSetError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError, IndexError) as exc:
            # whatever else a document holds that the checks did not foresee: refused all
            # the same
            raise RuleSetError(f"malformed rule set: {exc}") from exc
        return ruleset

    @classmethod
    def loads(cls, text: str | bytes, max_nodes: int | None = None) -> RuleSet:
        try:
            data = read_document(text, "rule set")
        except DocumentError as exc:
            raise RuleSetError(str(exc)) from exc
        return cls.from_json(data, max_nodes)

    def validate(self) -> None:
        """Raise :class:`RuleSetError` unless the rule set is safe to deploy."""
        self._validate_tree()
        if not self.retracted <= self.rules.keys():
            raise RuleSetError("a retracted node without a rule")
        for src, pinned in self.rules.items():
            for rule in pinned.variants():
                self._validate_links(src, rule)
                _validate_ops(src, rule)
                _check_examples(rule)
                if src not in self.retracted:
                    self._validate_examples(src, rule)

    def _validate_tree(self) -> None:
        """Each node's parent comes before it (only the root has none), each child, the
        wildcard one included, comes after the node and names it as its parent, and no
        node is more than :data:`MAX_DEPTH` below the root."""
        _check_depth(self.nodes)
        n = len(self.nodes)
        for i, node in enumerate(self.nodes):
            if (node.parent is None) != (i == 0) or (node.parent is not None and node.parent >= i):
                raise RuleSetError(f"node {i}: bad parent")
            kids = [
                *node.children.values(),
                *([node.wildcard] if node.wildcard is not None else []),
            ]
            if any(not i < c < n or self.nodes[c].parent != i for c in kids):
                raise RuleSetError(f"node {i}: bad child")

    def _validate_links(self, src: int, rule: Rule) -> None:
        """The rule (``rule`` is the one at node ``src`` or its fallback) leaves ``src``, a
        fallback belongs to a pinned rule and is itself neither pinned nor followed by one,
        both nodes exist, and the target is not rewritten onwards (no cycles)."""
        if rule.source != src or (rule.fallback is not None and not rule.when):
            raise RuleSetError(f"rule {src}: a fallback of another node or of no pinned rule")
        if rule.fallback is not None and (rule.fallback.when or rule.fallback.fallback):
            raise RuleSetError(f"rule {src}: a pinned or nested fallback")
        n = len(self.nodes)
        if not (0 <= src < n and 0 <= rule.target < n):
            raise RuleSetError(f"rule {src}: node out of range")
        onward = self.rules.get(rule.target)
        if onward is not None and rule.target not in (onward.target, src):
            raise RuleSetError(f"rule {src}: target {rule.target} is itself rewritten")

    def _validate_examples(self, src: int, rule: Rule) -> None:
        """Each example of the rule keeps the scheme and host, and the rule set maps it
        onto its result, which it leaves as it is."""
        for before, after in rule.examples:
            if split_url(before).as_dict().get("scheme") != split_url(after).as_dict().get(
                "scheme"
            ) or _host(before) != _host(after):
                raise RuleSetError(f"rule {src}: example changes the scheme or host")
            if self.apply(before) != after or self.apply(after) != after:
                raise RuleSetError(f"rule {src}: example {before} does not give {after}")


def _check_depth(nodes: Sequence[TreeNode]) -> None:
    """Raise :class:`RuleSetError` when a node is more than :data:`MAX_DEPTH` below the
    root (a parent that does not come before its node counts as the root here; the tree's
    validation refuses it)."""
    depth: list[int] = []
    for node in nodes:
        parent = node.parent
        level = depth[parent] + 1 if parent is not None and 0 <= parent < len(depth) else 0
        if level > MAX_DEPTH:
            raise RuleSetError(f"a tree deeper than {MAX_DEPTH} levels")
        depth.append(level)


def _check_examples(rule: Rule) -> None:
    for variant in rule.variants():
        if len(variant.examples) > MAX_EXAMPLES:
            raise RuleSetError(f"rule {rule.source}: more than {MAX_EXAMPLES} examples")


def _validate_ops(src: int, rule: Rule) -> None:
    """No operation of the rule writes or reads the scheme, user, host or port, or writes a
    path without a leading ``/`` (placed right after the host, it would extend it), and each
    writes a URL key with a value a URL can hold, free of the delimiters that would end it
    (``b/c`` for one path segment). A value copied from another key is checked on each
    result instead (:meth:`RuleSet.apply`)."""
    for ops in rule.steps:
        for op in ops:
            if is_authority_key(op.key) or (op.source and is_authority_key(op.source)):
                raise RuleSetError(f"rule {src}: changes the scheme, host or port")
            if op.key == "path" or op.source == "path":
                raise RuleSetError(f"rule {src}: writes a path without a leading '/'")
            try:
                to_url([(op.key, op.value)])
            except ValueError as exc:
                raise RuleSetError(f"rule {src}: {exc}") from exc
            ends = _ENDS_VALUE.get(op.key[0] if op.key[0] in "?;#" else op.key.rstrip("0123456789"))
            if op.value is not None and ends and any(c in op.value for c in ends):
                raise RuleSetError(f"rule {src}: {op.key}={op.value!r} holds a delimiter")


# the characters that would end a written value of each kind of key and start another
_ENDS_VALUE = {"path_": "/?#", "ext": "/?#;.", ";": "/?#;", "?": "&#", "#": ""}


def _reads_back(result: str, out: UrlKeys) -> bool:
    """Whether the URL written from ``out`` reads back as exactly those keys and values (a
    ``;``-separated query left with one parameter reads back as a plain one: same URL)."""
    back, keys = split_url(result).as_dict(), out.as_dict()
    back.pop("qsep", None)
    keys.pop("qsep", None)
    return back == keys


def _host(url: str) -> list[tuple[str, Value]]:
    return [(k, v) for k, v in split_url(url).pairs if is_authority_key(k) and k != "scheme"]


def _token_json(token: Token) -> Any:
    return {"absent": True} if isinstance(token, Absent) else token


def _token_from(data: Any) -> Token:
    if isinstance(data, dict):
        if data != {"absent": True}:
            raise RuleSetError(f"bad value {data!r}")
        return ABSENT
    if data is not None and not isinstance(data, str):
        raise RuleSetError(f"bad value {data!r}")
    return data


def _node_json(node: TreeNode) -> dict[str, Any]:
    return {
        "parent": node.parent,
        "fixed": [[k, _token_json(v)] for k, v in node.fixed.items()],
        "split": node.split_key,
        "children": [[_token_json(v), c] for v, c in node.children.items()],
        "wildcard": node.wildcard,
        "required": sorted(node.required),
        "optional": sorted(node.optional),
        "glob": node.glob,
        "dup_rate": node.dup_rate,
    }


def _key(data: Any) -> str:
    if not is_url_key(data):
        raise RuleSetError(f"{str(data)[:40]!r} is not a URL key")
    return str(data)


def _index(data: Any) -> int:
    return whole(data, "node index")


def _flag(data: Any, name: str) -> bool:
    if not isinstance(data, bool):
        raise RuleSetError(f"{name} is not true or false")
    return data


def _node_from(data: dict[str, Any]) -> TreeNode:
    return TreeNode(
        parent=None if data["parent"] is None else _index(data["parent"]),
        fixed={_key(k): _token_from(v) for k, v in data["fixed"]},
        split_key=None if data["split"] is None else _key(data["split"]),
        children={_token_from(v): _index(c) for v, c in data["children"]},
        wildcard=None if data["wildcard"] is None else _index(data["wildcard"]),
        required=frozenset(_key(k) for k in data["required"]),
        optional=frozenset(_key(k) for k in data["optional"]),
        glob=str(data.get("glob", "")),
        dup_rate=float(data.get("dup_rate", 0.0)),
    )


def _rule_json(rule: Rule) -> dict[str, Any]:
    return {
        "source": rule.source,
        "target": rule.target,
        "steps": [
            [{"op": o.kind, "key": o.key, "value": o.value, "source": o.source} for o in ops]
            for ops in rule.steps
        ],
        "support": rule.support,
        "fpr": rule.fpr,
        "examples": [list(e) for e in rule.examples],
        **({"when": [[k, v] for k, v in rule.when]} if rule.when else {}),
        **({"checked": rule.checked, "held": rule.held} if rule.checked else {}),
        **({"fallback": _rule_json(rule.fallback)} if rule.fallback else {}),
    }


def _rule_from(data: dict[str, Any]) -> Rule:
    steps = []
    for ops in data["steps"]:
        step = []
        for o in ops:
            if o["op"] not in ("keep", "replace", "ignore"):
                raise RuleSetError(f"unknown operation {o['op']!r}")
            if o["op"] == "replace" and not isinstance(o.get("source"), str):
                raise RuleSetError("replace without a source key")
            source = o.get("source")
            step.append(
                Op(
                    o["op"],
                    _key(o["key"]),
                    _value(o.get("value")),
                    None if source is None else _key(source),
                )
            )
        steps.append(tuple(step))
    return Rule(
        source=_index(data["source"]),
        target=_index(data["target"]),
        steps=tuple(steps),
        support=int(data.get("support", 0)),
        fpr=float(data.get("fpr", 0.0)),
        examples=tuple((str(a), str(b)) for a, b in data.get("examples", [])),
        when=tuple((_key(k), _value(v)) for k, v in data.get("when", [])),
        checked=whole(data.get("checked", 0), "checked"),
        held=whole(data.get("held", 0), "held"),
        fallback=_rule_from(data["fallback"]) if data.get("fallback") else None,
    )


def _value(data: Any) -> Value:
    if data is not None and not isinstance(data, str):
        raise RuleSetError(f"bad value {data!r}")
    return data
