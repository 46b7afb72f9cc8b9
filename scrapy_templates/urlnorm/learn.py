"""Learning a site's URL-normalization rules from duplicate clusters (``003_…`` §5.2–5.3).

1. :func:`~.tree.build_tree` builds the pattern tree of the training URLs.
2. Duplicate nodes (Algorithm 2): an inverted index from each duplicate cluster to the nodes
   holding its URLs gives the node pairs that share clusters; a pair is kept when its overlap
   (eq. 6) reaches ``o_min``, a node on its own when its duplicate rate reaches ``dup_rate_min``
   or (ours) when it holds :data:`~.tree.MIN_EVIDENCE` duplicate clusters. Early in a crawl
   most pages have been reached once, so a node whose every link carries a fresh session id
   shows a low duplicate rate; the count of its duplicate clusters does not wait for the
   crawl, and the false-positive test of step 4 still decides.
3. A candidate rule per kept pair and direction: key-key mappings (Algorithm 3, ``sigma_min``)
   measured on duplicate URL pairs, then one keep / replace / ignore operation per target key,
   with the test that turns a "fake" replace (a key whose values differ between duplicates)
   into an ignore.
4. Candidates whose false-positive rate on the training set exceeds ``fpr_max`` are removed,
   and (ours) those supported by fewer than ``min_support`` URL pairs: a rule seen once is a
   guess about URLs nobody has fetched. A pair whose candidate is removed gets (ours) a second
   one that copies the keys the first ignored or left unmapped (:func:`_candidates`).
5. Deployable rules (§5.3): a random walk over the candidate rules and descendant→ancestor
   links, started from node volumes, gives each node a popularity; a node that no rule leads to
   a more popular node is a destination, rules leaving destinations are dropped, each remaining
   source keeps its rule to the most popular target and chains are concatenated. Ours: a node
   the site declares canonical (``rel=canonical`` links and redirects end on its URLs) ranks
   above any node it does not, whatever their popularity; (also ours) ties of popularity go
   to the node whose URLs carry fewer keys.

The deployed set is then run over the training URLs once more and any rule whose false-positive
rate, as deployed, exceeds ``fpr_max`` is removed. A sample without two URLs of one page learns
the empty rule set at once; a relearn keeps the rules in force while they still hold
(:func:`learn_from_samples`).
"""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .clusters import Sample, canonical_votes, duplicate_clusters
from .rules import Op, Rule, RuleSet, TreeNode, apply_ops
from .tree import (
    ABSENT,
    MIN_EVIDENCE,
    Absent,
    PatternTree,
    Token,
    build_tree,
    varies_within_clusters,
)
from .url import UrlKeys, Value, is_authority_key, split_url


@dataclass(frozen=True, slots=True)
class LearnConfig:
    """Thresholds of the learner; the defaults are the paper's where it gives one."""

    min_share: float = 0.05
    o_min: float = 0.5
    dup_rate_min: float = 0.5
    sigma_min: float = 0.5
    fake_max: float = 0.5
    fpr_max: float = 0.0005
    min_support: int = 1
    pairs_per_cluster: int = 8
    pair_clusters: int = 1000
    fpr_sample: int = 2_000
    check_sample: int = 5_000
    seed: int = 0


@dataclass
class Candidate:
    """A candidate rule with what the learner measured on it."""

    source: int
    target: int
    ops: tuple[Op, ...]
    support: int = 0
    fpr: float = 0.0
    when: tuple[tuple[str, Value], ...] = ()


@dataclass
class LearnReport:
    """A learned :class:`RuleSet` and the numbers behind it."""

    ruleset: RuleSet
    tree: PatternTree
    candidates: list[Candidate] = field(default_factory=list)
    qualified: list[Candidate] = field(default_factory=list)
    seconds: float = 0.0
    kept: bool = False
    """Whether the rules in force were kept (see :func:`learn_from_samples`)."""
    previous_held: bool = False
    """Whether the rules in force merged no two distinct pages of the sample, kept or not."""


# keys that say how a URL is written, not which page it is
_FORM_KEYS = frozenset({"qsep", "#"})


class _Training:
    """Training URLs with their clusters and fast per-node membership."""

    def __init__(self, urls: Sequence[str], tree: PatternTree, clusters: np.ndarray) -> None:
        self.urls = list(urls)
        self.tree = tree
        self.clusters = clusters
        self.chain = {n.id: tree.ancestors(n.id) for n in tree.nodes}
        self.in_node = [
            {int(m) for m in n.members} if n.volume < 4096 else None for n in tree.nodes
        ]
        self.leaf = tree.leaf_of
        self.fpr_max = 0.0
        self.min_support = 1
        self.votes = np.zeros(len(self.urls))
        self.value_ids: dict[Token, int] = {t: i for i, t in enumerate(tree.columns.tokens)}
        self.keys: list[UrlKeys] = []
        self._relevant: dict[str, set[tuple[tuple[str, Value], ...]]] = {}
        self._key_counts: np.ndarray | None = None

    def relevant_on(self, key: str) -> set[tuple[tuple[str, Value], ...]]:
        """The paths (:func:`_path_of`) where ``key`` was seen to matter: two URLs that differ
        in ``key`` alone (its value, or whether it is there) are distinct pages."""
        found = self._relevant.get(key)
        if found is None:
            first: dict[tuple[tuple[str, Value], ...], int] = {}
            found = set()
            for i, url in enumerate(self.keys):
                rest = tuple(p for p in url.pairs if p[0] != key)
                cluster = int(self.clusters[i])
                if first.setdefault(rest, cluster) != cluster:
                    found.add(_path_of(url))
            self._relevant[key] = found
        return found

    def key_count(self, node: int) -> float:
        """The mean number of keys of the node's URLs: authority, the query's separator and
        the fragment aside (the form of a gitweb query is no other page)."""
        if self._key_counts is None:
            self._key_counts = np.array(
                [
                    sum(1 for k, _ in keys.pairs if k not in _FORM_KEYS and not is_authority_key(k))
                    for keys in self.keys
                ],
                dtype=float,
            )
        members = self.tree.nodes[node].members
        return float(self._key_counts[members].mean()) if len(members) else 0.0

    def member(self, url: int, node: int) -> bool:
        found = self.in_node[node]
        if found is not None:
            return url in found
        return node in self.chain[int(self.leaf[url])]

    def column(self, key: str) -> np.ndarray:
        return self.tree.columns.column(key)


def learn_rules(
    urls: Sequence[str],
    clusters: Sequence[int],
    *,
    site: str = "",
    version: int = 1,
    config: LearnConfig | None = None,
    votes: Sequence[int] | None = None,
) -> LearnReport:
    """Learn the deployable rules of one site from ``urls`` and their duplicate-cluster ids
    (``clusters[i]`` is the cluster of ``urls[i]``; unique pages are clusters of one).
    ``votes[i]`` counts the pages that name ``urls[i]`` as their ``rel=canonical``: they add
    to the popularity that picks destination formats."""
    cfg = config or LearnConfig()
    t0 = time.perf_counter()
    groups = _cluster_members(np.asarray(clusters))
    if not groups:
        # no two URLs share a page: no rule has support, so the tree is not built
        empty = RuleSet(site, version, [], {}, frozenset(), len(urls))
        return LearnReport(empty, build_tree([]), seconds=time.perf_counter() - t0)
    keys = [split_url(u) for u in urls]
    tree = build_tree(keys, clusters, min_share=cfg.min_share, vary_max=cfg.fake_max)
    data = _Training(urls, tree, np.asarray(clusters))
    data.keys = keys
    data.fpr_max = cfg.fpr_max
    data.min_support = cfg.min_support
    data.votes = np.zeros(len(urls)) if votes is None else np.asarray(votes, dtype=float)
    pairs, common = _duplicate_nodes(data, groups, cfg)
    rng = random.Random(cfg.seed)
    candidates: list[Candidate] = []
    qualified = []
    for s, t in pairs:
        dup_pairs = _dup_pairs(data, common[(min(s, t), max(s, t))], groups, s, t, cfg, rng)
        tried: set[tuple[Op, ...]] = set()
        for cand in _candidates(data, s, t, dup_pairs, cfg):
            if cand is None or cand.ops in tried or (s == t and _unchanged(data, cand)):
                continue
            tried.add(cand.ops)
            candidates.append(cand)
            cand.support, cand.fpr, cand.when = _measure(data, keys, cand, cfg, rng)
            if cand.support >= cfg.min_support and cand.fpr <= cfg.fpr_max:
                qualified.append(cand)
                break
    ruleset = _select(data, keys, qualified, site, version, cfg)
    return LearnReport(ruleset, tree, candidates, qualified, time.perf_counter() - t0)


def learn_from_samples(
    samples: Sequence[Sample],
    *,
    site: str = "",
    version: int = 1,
    distance: int | None = None,
    config: LearnConfig | None = None,
    previous: RuleSet | None = None,
    canonical: bool = True,
) -> LearnReport:
    """Duplicate clusters of ``samples`` (:mod:`.clusters`; ``canonical``: whether the
    site's ``rel=canonical`` links are evidence), then :func:`learn_rules`.

    ``previous``, the rules in force, stays in force (as ``version``) while it holds on the
    sample and explains it as well as the rules just learned (:func:`still_holds`): a
    relearn decides afresh how the pattern tree splits and which URL form is the
    destination, and a sample grown by a few pages can tip either choice with nothing new
    learned — a key with two values becomes two nodes and the URLs with neither (``?sid=``
    without ``?page``) fall under no rule; a sort order's page wins the random walk from the
    plain listing. Each such flip would send again the requests the rules in force turned
    away. The report says whether they stayed (``kept``) and whether they held
    (``previous_held``)."""
    cfg = config or LearnConfig()
    urls, clusters = duplicate_clusters(samples, distance=distance, canonical=canonical)
    votes = canonical_votes(samples, urls, canonical=canonical)
    report = learn_rules(urls, clusters, site=site, version=version, config=cfg, votes=votes)
    if previous is not None and previous.rules:
        if report.ruleset.behaves_like(previous):
            report.previous_held = report.kept = True
        else:
            report.previous_held, report.kept = still_holds(
                previous, report.ruleset, urls, clusters, votes
            )
        if report.kept:
            report.ruleset = replace(previous, version=version, learned_from=len(urls))
    return report


def still_holds(
    previous: RuleSet,
    learned: RuleSet,
    urls: Sequence[str],
    clusters: Sequence[int],
    votes: Sequence[int],
) -> tuple[bool, bool]:
    """Whether ``previous`` holds on the sample ``urls`` (duplicate cluster ids in
    ``clusters``) — it merges no two distinct pages of it — and whether it also explains
    the sample as well as ``learned`` from it: every two URLs ``learned`` maps to one URL it
    maps to one URL too, and it sends no URL that a page names as its ``rel=canonical``
    (``votes``) elsewhere while ``learned`` leaves that URL as it is (the site's own word
    wins over the rules in force, as it does in learning)."""
    mapped = [previous.apply(u) for u in urls]
    cluster_of: dict[str, int] = {}
    for form, cluster in zip(mapped, clusters, strict=True):
        if cluster_of.setdefault(form, cluster) != cluster:
            return False, False
    forms: dict[str, str] = {}
    for url, form, named in zip(urls, mapped, votes, strict=True):
        result = learned.apply(url)
        if forms.setdefault(result, form) != form or (named and form != url and result == url):
            return True, False
    return True, True


def _cluster_members(clusters: np.ndarray) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(clusters.tolist()):
        groups[c].append(i)
    return {c: m for c, m in groups.items() if len(m) > 1}


def _duplicate_nodes(
    data: _Training, groups: dict[int, list[int]], cfg: LearnConfig
) -> tuple[list[tuple[int, int]], dict[tuple[int, int], list[int]]]:
    """Algorithm 2: node pairs sharing duplicate clusters, with their overlap; and nodes
    whose own duplicate rate is high or that hold several duplicate clusters (pairs
    ``(s, s)``).

    The overlap is taken one direction at a time (ours): ``s → t`` is a candidate when at
    least ``o_min`` of the URLs of ``s`` have a duplicate in ``t``. Eq. 6 divides by
    ``|s| + |t|``, which hides a small format (a tracking parameter on a few links) next to a
    large canonical node, and lets a wide node whose duplicates are a corner of it through."""
    nodes = data.tree.nodes
    ancestors = {nid: set(chain) for nid, chain in data.chain.items()}
    shared: set[tuple[int, int]] = set()
    covered: dict[tuple[int, int], int] = defaultdict(int)
    common: dict[tuple[int, int], list[int]] = defaultdict(list)
    for cid, members in groups.items():
        count: Counter[int] = Counter()
        for m in members:
            count.update(data.chain[int(data.leaf[m])])
        ids = sorted(count)
        for i, s in enumerate(ids):
            common[(s, s)].append(cid)
            for t in ids[i + 1 :]:
                if s in ancestors[t] or t in ancestors[s]:
                    continue
                shared.add((s, t))
                covered[(s, t)] += count[s]
                covered[(t, s)] += count[t]
                common[(s, t)].append(cid)
    pairs: list[tuple[int, int]] = []
    for s, t in shared:
        for a, b in ((s, t), (t, s)):
            if covered[(a, b)] / nodes[a].volume >= cfg.o_min:
                pairs.append((a, b))
    for node in nodes:
        if node.volume > 1 and (node.id, node.id) in common:
            _, sizes = np.unique(data.clusters[node.members], return_counts=True)
            rate = 1 - len(sizes) / node.volume
            if rate >= cfg.dup_rate_min or int((sizes > 1).sum()) >= MIN_EVIDENCE:
                pairs.append((node.id, node.id))
    return sorted(pairs), common


def _dup_pairs(
    data: _Training,
    cids: list[int],
    groups: dict[int, list[int]],
    s: int,
    t: int,
    cfg: LearnConfig,
    rng: random.Random,
) -> list[tuple[int, int]]:
    """Duplicate URL pairs ``(u in s, v in t)``, at most ``pairs_per_cluster`` per cluster
    and from at most ``pair_clusters`` clusters (the pairs estimate rates)."""
    out: list[tuple[int, int]] = []
    if len(cids) > cfg.pair_clusters:
        cids = rng.sample(cids, cfg.pair_clusters)
    for cid in cids:
        members = groups[cid]
        in_s = [m for m in members if data.member(m, s)]
        in_t = [m for m in members if data.member(m, t)]
        here = [(u, v) for u in in_s for v in in_t if u != v]
        if len(here) > cfg.pairs_per_cluster:
            here = rng.sample(here, cfg.pairs_per_cluster)
        out += here
    return out


def _own_keys(data: _Training, node: int) -> list[str]:
    """The node's keys in its example URL's order, scheme and host left out."""
    n = data.tree.nodes[node]
    keys = [k for k, _ in n.example if k in n.required]
    return keys + sorted(n.required - set(keys))


def _candidates(
    data: _Training, s: int, t: int, dup_pairs: list[tuple[int, int]], cfg: LearnConfig
) -> tuple[Candidate | None, Candidate | None]:
    """Rules ``s → t``: Algorithm 3 for the key-key mappings, then the operations; and
    (ours) the same rule copying every key of the target that the source has and that the
    first would drop. Duplicates that coincide by their data (a file unchanged between two
    commits is one page under both commit ids) make a key look irrelevant by §5.2.2, or
    leave it unmapped, and the rule that drops it merges distinct pages elsewhere; the
    learner tries the second rule when the first fails.

    *keep* is used only for keys the target's pattern fixes (a value seen on every target URL
    by chance, on a key the tree generalised, is no constant). A generalised path key with no
    mapping may be ignored only when its values differ between duplicates (a mirror name);
    otherwise there is no safe rule and ``None`` stands for it (the second rule copies the
    key when the source has it), as it does for both when the target's URLs do not all have
    the same keys."""
    nodes = data.tree.nodes
    if nodes[t].optional:
        return None, None  # URLs of several formats: no one format to rewrite into
    source_keys = sorted(nodes[s].required | nodes[s].optional)
    pattern = data.tree.pattern(t)
    first: list[Op] | None = []
    careful: list[Op] = []
    for key in _own_keys(data, t):
        op = _operation(data, s, t, key, pattern.get(key, "*"), dup_pairs, source_keys, cfg)
        copied = op is None or op.kind == "ignore"
        if first is not None:
            first = None if op is None else [*first, op]
        if copied and key in source_keys:
            careful.append(Op("replace", key, source=key))
        elif op is not None:
            careful.append(op)
        else:
            return None, None  # neither rule has an operation for the key
    return (
        None if first is None else Candidate(s, t, tuple(first)),
        Candidate(s, t, tuple(careful)),
    )


def _operation(
    data: _Training,
    s: int,
    t: int,
    key: str,
    fixed: Token,
    dup_pairs: list[tuple[int, int]],
    source_keys: list[str],
    cfg: LearnConfig,
) -> Op | None:
    """The operation of :func:`_candidates`' first rule on target key ``key`` (``fixed``:
    its value in the target's pattern, ``"*"`` when generalised); ``None``: no safe one."""
    if fixed != "*":
        return Op("keep", key, _plain(fixed))
    best, sigma = _best_mapping(data, dup_pairs, source_keys, key)
    if best is not None and sigma > cfg.sigma_min and not _is_fake(data, s, t, best, key, cfg):
        return Op("replace", key, source=best)
    if key.startswith(("?", ";", "#")):
        return Op("ignore", key)
    members = data.tree.nodes[t].members
    if varies_within_clusters(data.column(key), data.clusters, members) > cfg.fake_max:
        return Op("ignore", key, _plain(_values(data, t, key)[1]))
    return None


def _unchanged(data: _Training, cand: Candidate) -> bool:
    """Whether a rule within one node writes every key as its URLs have it (each copied onto
    itself, or kept at the value the node fixes): it rewrites nothing."""
    pattern = data.tree.pattern(cand.source)
    return all(
        op.source == op.key or (op.kind == "keep" and pattern.get(op.key) == op.value)
        for op in cand.ops
    )


def _plain(token: Token) -> Value:
    return None if isinstance(token, Absent) else token


def _values(data: _Training, node: int, key: str) -> tuple[int, Token]:
    """How many values the key has over the node's members, and the most common one."""
    ids, counts = np.unique(data.column(key)[data.tree.nodes[node].members], return_counts=True)
    return len(ids), data.tree.columns.tokens[int(ids[int(np.argmax(counts))])]


def _best_mapping(
    data: _Training, dup_pairs: list[tuple[int, int]], source_keys: list[str], target_key: str
) -> tuple[str | None, float]:
    """The source key whose values most often equal ``target_key``'s on duplicate pairs."""
    if not dup_pairs:
        return None, 0.0
    pairs = np.asarray(dup_pairs)
    u, v = pairs[:, 0], pairs[:, 1]
    target = data.column(target_key)[v]
    best: tuple[float, str] | None = None
    for key in source_keys:
        source = data.column(key)[u]
        sigma = float(np.count_nonzero((source == target) & (source != 0))) / len(pairs)
        if best is None or (sigma, key == target_key) > (best[0], best[1] == target_key):
            best = (sigma, key)
    assert best is not None
    return best[1], best[0]


def _is_fake(
    data: _Training, s: int, t: int, source_key: str, target_key: str, cfg: LearnConfig
) -> bool:
    """The test of §5.2.2: a mapped key is irrelevant when duplicates inside ``s`` (or inside
    ``t``) often differ on it."""
    nodes = data.tree.nodes
    return any(
        varies_within_clusters(data.column(key), data.clusters, nodes[node].members) > cfg.fake_max
        for node, key in ((s, source_key), (t, target_key))
    )


def _measure(
    data: _Training, keys: list[UrlKeys], cand: Candidate, cfg: LearnConfig, rng: random.Random
) -> tuple[int, float, tuple[tuple[str, Value], ...]]:
    """Support pairs, false-positive rate (eq. 3) and pinned keys of a candidate run on the
    training set: the source's URLs rewritten, the target's as they are. A rule between two
    nodes must also *confirm* itself (ours): at least ``o_min`` of the source URLs must be
    rewritten exactly onto a target URL of their own duplicate cluster; otherwise its support
    is 0. A rule that sends most URLs to addresses nobody has seen is a guess, however clean
    its fpr.

    Nor may a rule lose a generalised source key on the word of one of its values (ours):
    ``?page=1`` and no ``page`` are the same listing, which says nothing of ``?page=2``; the
    article URLs of a site's root pattern becoming their print views says nothing of its
    listings. A key that the source's pattern leaves open and whose value the result does not
    carry (:func:`_open_keys`) must take two values or more among the confirmed source
    URLs; a key seen with one value only is *pinned* to it — the rule is measured again on
    the source URLs with that value and applies to those alone — and a key with none
    refuses the rule. The same holds for a generalised key the rule carries into its result
    (gitweb's action ``a``: copies among tree views say nothing of commit views), and two
    values confirmed on one page only are two names of it (a tag and its commit id), not two
    values seen not to matter: the rule is refused. Pages that a rule turned away would
    never be downloaded, so no later sample could refute it."""
    support, fpr, pins = _run_candidate(data, keys, cand, cfg, rng, ())
    if pins:
        support, fpr, more = _run_candidate(data, keys, cand, cfg, rng, pins)
        if more != ():
            return 0, fpr, ()
    elif pins is None:
        return 0, fpr, ()
    if support and _contradicted(data, cand, pins, rng):
        return 0, fpr, ()
    return support, fpr, pins


def _contradicted(
    data: _Training,
    cand: Candidate,
    when: tuple[tuple[str, Value], ...],
    rng: random.Random,
) -> bool:
    """Whether the rule drops or overwrites a parameter (query or ``;``), whatever its value,
    on a path where that parameter was seen to matter (ours; :meth:`_Training.relevant_on`).
    The false-positive rate only sees the URLs the rule rewrites: a rule pinned to one file
    of a repository browser (``f=mod5.py``, any commit ``hb``), learned while that file had
    not changed, is contradicted by the other files, whose commits do change the page. On a
    site of one script (gitweb) a path is the whole site: a parameter that matters for one
    view is kept on all of them, at the cost of some duplicates."""
    sample = _at_most(_admitted(data, cand.source, when).tolist(), _CONTRADICTION_SAMPLE, rng)
    # a value the source's pattern fixes or ``when`` pins was measured on its own URLs;
    # another value of its key mattering says nothing of it (``status=closed`` is the tool's
    # page, ``status=new`` is not)
    pattern = data.tree.pattern(cand.source)
    fixed = {k for k, v in pattern.items() if v != "*"} | {k for k, _ in when}
    moved = {op.source for op in cand.ops if op.source is not None} | fixed
    for m in sample:
        before = data.keys[m]
        after = apply_ops(before, (cand.ops,))
        if after is None:
            continue
        now = after.as_dict()
        for key, value in before.pairs:
            if not key.startswith(("?", ";")) or key in moved or now.get(key, ABSENT) == value:
                continue
            if _path_of(before) in data.relevant_on(key):
                return True
    return False


# source URLs of a candidate looked at for keys seen to matter
_CONTRADICTION_SAMPLE = 200


def _path_of(keys: UrlKeys) -> tuple[tuple[str, Value], ...]:
    """The path keys of a URL (segments, extension, rootless path): what a key's relevance
    is known by."""
    return tuple(p for p in keys.pairs if p[0].startswith("path") or p[0] == "ext")


def _run_candidate(
    data: _Training,
    keys: list[UrlKeys],
    cand: Candidate,
    cfg: LearnConfig,
    rng: random.Random,
    when: tuple[tuple[str, Value], ...],
) -> tuple[int, float, tuple[tuple[str, Value], ...] | None]:
    """One measurement of :func:`_measure` over the source URLs that ``when`` admits: support,
    fpr, and the keys still to pin (``None``: the rule is refused)."""
    members = _admitted(data, cand.source, when)
    sources = members.tolist()
    targets = [] if cand.source == cand.target else data.tree.nodes[cand.target].members.tolist()
    if not sources:
        return 0, 0.0, None
    sources = _at_most(sources, cfg.fpr_sample, rng)
    targets = _at_most(targets, cfg.fpr_sample, rng)
    groups, confirmed = _rewrite_all(data, keys, cand, sources, targets)
    support, fpr = support_and_fpr(data.clusters, groups.values())
    if targets and len(confirmed) / len(sources) < cfg.o_min:
        return 0, fpr, None  # ours: too few source URLs land on a known duplicate in the target
    pins = _pins(data, cand, members, confirmed, when) if targets else ()
    if pins is None:
        return 0, fpr, None  # ours: a key was never seen not to matter
    return support, fpr, pins


def _admitted(data: _Training, node: int, when: tuple[tuple[str, Value], ...]) -> np.ndarray:
    """The URLs of ``node`` where each pinned key of ``when`` is absent or has its value."""
    members = data.tree.nodes[node].members
    for key, value in when:
        column = data.column(key)[members]
        members = members[(column == 0) | (column == data.value_ids[value])]
    return members


def _at_most(urls: list[int], size: int, rng: random.Random) -> list[int]:
    """``urls``, or a random sample of ``size`` of them when there are more."""
    return rng.sample(urls, size) if len(urls) > size else urls


def _rewrite_all(
    data: _Training, keys: list[UrlKeys], cand: Candidate, sources: list[int], targets: list[int]
) -> tuple[dict[tuple[tuple[str, Value], ...], list[int]], list[int]]:
    """The URL groups the candidate makes equal (the target URLs as they are, the source URLs
    rewritten), and the source URLs whose result a target URL of their own duplicate cluster
    confirms (none without ``targets``)."""
    groups: dict[tuple[tuple[str, Value], ...], list[int]] = defaultdict(list)
    for m in targets:
        groups[_identity(keys[m])].append(m)
    checked = [op.key for op in cand.ops if op.kind != "ignore"]
    known = _confirming(data, cand, sources, checked) if targets else set()
    value_ids = data.value_ids
    confirmed: list[int] = []
    for m in sources:
        new = apply_ops(keys[m], (cand.ops,))
        result = new if new is not None else keys[m]
        if targets:
            values = result.as_dict()
            if (
                int(data.clusters[m]),
                *(value_ids.get(values.get(key, ABSENT), -1) for key in checked),
            ) in known:
                confirmed.append(m)
        groups[_identity(result)].append(m)
    return groups, confirmed


def _confirming(
    data: _Training, cand: Candidate, sources: list[int], checked: list[str]
) -> set[tuple[int, ...]]:
    """The cluster and the ``checked`` keys' value ids of each target URL in a cluster of
    ``sources``: every target URL (not only the sample) can confirm a source URL, when the
    rule's result agrees with it on every kept and replaced key (ignored keys say nothing)."""
    found = data.tree.nodes[cand.target].members
    found = found[np.isin(data.clusters[found], data.clusters[sources])]
    columns = [data.clusters[found], *(data.column(key)[found] for key in checked)]
    return set(zip(*(c.tolist() for c in columns), strict=True))


def _pins(
    data: _Training,
    cand: Candidate,
    members: np.ndarray,
    confirmed: list[int],
    when: tuple[tuple[str, Value], ...],
) -> tuple[tuple[str, Value], ...] | None:
    """The keys of :func:`_open_keys` not pinned by ``when`` that the ``confirmed``
    source URLs show with one value only, each with that value, where the key needs more
    (it is dropped, or ``members`` hold it with two values or more); ``None`` when such a
    key has no confirmed value at all, or several on one page only (all confirmed URLs in one
    duplicate cluster)."""
    pins: list[tuple[str, Value]] = []
    pinned = dict(when)
    # confirmed on one page only: its several values of a key may be names of that one page
    # (a tag and its commit id), which says nothing of the key's other values
    one_page = len(np.unique(data.clusters[confirmed])) < 2
    for key, dropped in _open_keys(data, cand):
        if key in pinned:
            continue
        seen = np.unique(data.column(key)[confirmed])
        seen = seen[seen != 0]
        held = data.column(key)[members]
        if (len(seen) < 2 or one_page) and (dropped or len(np.unique(held[held != 0])) >= 2):
            if len(seen) != 1:
                return None
            token = data.tree.columns.tokens[int(seen[0])]
            assert not isinstance(token, Absent)  # id 0 is the only absent one
            pins.append((key, token))
    return tuple(pins)


def _open_keys(data: _Training, cand: Candidate) -> list[tuple[str, bool]]:
    """Keys that the source's pattern generalises and whose values the rule's evidence must
    cover, each with whether the rule drops it (left out of the result). A value the
    source's pattern fixes, such as ``print=1``, is the rule's own.

    - A dropped key needs two confirmed values even where the source's URLs hold one: the
      pages of its other values are the ones the rule would turn away unseen.
    - A key overwritten with a constant of the target (a source ``*`` made ``articles``) is
      often a generalisation of the tree (``print`` and ``item`` made ``*``) and needs them
      only where the source holds more than one value.
    - So does a key the rule carries into its result (it keeps ``?a`` whatever ``?a`` is):
      duplicates among one action's pages say nothing of another's.
    - A key overwritten with another key's value loses its own, as a dropped key does: a
      mirror seen once (``/mirror/`` is ``/``, ``path_0 := path_1``) says nothing of
      ``/category/science``, which that rule would send to ``/science``.
    - A key the rule ignores was shown irrelevant by its values varying within duplicates
      (§5.2.2), which is evidence enough."""
    pattern = data.tree.pattern(cand.source)
    written = {op.key for op in cand.ops}
    sources = {op.source for op in cand.ops if op.source is not None}
    ignored = {op.key for op in cand.ops if op.kind == "ignore"} - sources
    overwritten = {op.key for op in cand.ops if op.kind == "replace"} - sources
    nodes = data.tree.nodes
    source_keys = nodes[cand.source].required | nodes[cand.source].optional
    return sorted(
        (k, k in overwritten or (k not in written and k not in sources))
        for k in source_keys
        if k not in ignored and pattern.get(k, "*") == "*"
    )


def _identity(keys: UrlKeys) -> tuple[tuple[str, Value], ...]:
    """What :func:`~.url.to_url` depends on: keys placed by name, query and ``;``-parameters
    in order (cheaper than building the URL)."""
    placed = sorted(p for p in keys.pairs if not p[0].startswith(("?", ";")))
    return (*placed, *(p for p in keys.pairs if p[0].startswith(("?", ";"))))


def support_and_fpr(clusters: np.ndarray, groups: Iterable[Sequence[int]]) -> tuple[int, float]:
    """Support pairs and false-positive rate (eq. 3) of URL groups made equal: pairs of
    URLs in one group, and the share of them from different clusters."""
    support = false = 0
    for members in groups:
        n = len(members)
        if n < 2:
            continue
        pairs = n * (n - 1) // 2
        same = sum(c * (c - 1) // 2 for c in Counter(clusters[members].tolist()).values())
        support += pairs
        false += pairs - same
    return support, (false / support if support else 0.0)


def _select(
    data: _Training,
    keys: list[UrlKeys],
    qualified: list[Candidate],
    site: str,
    version: int,
    cfg: LearnConfig,
) -> RuleSet:
    """Deployable rules by the graph method of §5.3, then checked as deployed."""
    moves = [c for c in qualified if c.source != c.target]
    selfs = {c.source: c for c in qualified if c.source == c.target}
    chosen, plain = _best_moves(moves, _ranks(data, moves))
    rules = _deployable(data, chosen, plain, selfs)
    nodes = _deployed_nodes(data)
    checked = list(range(len(data.urls)))
    if len(checked) > cfg.check_sample:
        checked = sorted(random.Random(cfg.seed).sample(checked, cfg.check_sample))
    for _ in range(8):
        bad, rules = _check_deployed(data, RuleSet(site, version, nodes, rules), checked)
        if not bad:
            destinations = frozenset(v.target for r in rules.values() for v in r.variants())
            return RuleSet(site, version, nodes, rules, destinations, len(keys))
    return RuleSet(site, version, nodes, {}, frozenset(), len(keys))


_Rank = tuple[bool, float, float, int, int]


def _ranks(data: _Training, moves: list[Candidate]) -> dict[int, _Rank]:
    """The rank of each node a move leaves or enters, higher the better destination: the
    site's own word first (ours), then popularity; ties (equally linked forms: a print view
    or a session id linked beside every plain URL) go to the fewer keys (ours), then the
    larger, then the older node. Popularity before keys: the form the site links is the one
    its later links use, so rewriting to it finds those pages downloaded (on gitweb, keys
    first made 168 duplicate downloads of 1,000, popularity first 101)."""
    nodes = data.tree.nodes
    return {
        node: (
            _declared(data, node),
            round(popularity, 12),
            -data.key_count(node),
            nodes[node].volume,
            -node,
        )
        for node, popularity in _popularity(data, moves).items()
    }


def _best_moves(
    moves: list[Candidate], rank: dict[int, _Rank]
) -> tuple[dict[int, Candidate], dict[int, Candidate]]:
    """The best move of each source to a node of higher rank (the target's rank, then the
    lowest fpr, then the most support), and the best without pinned keys (its fallback)."""
    chosen: dict[int, Candidate] = {}
    plain: dict[int, Candidate] = {}
    for cand in moves:
        if rank[cand.target] <= rank[cand.source]:
            continue
        for best in (chosen,) if cand.when else (chosen, plain):
            old = best.get(cand.source)
            if old is None or (rank[cand.target], -cand.fpr, cand.support) > (
                rank[old.target],
                -old.fpr,
                old.support,
            ):
                best[cand.source] = cand
    return chosen, plain


def _chain(
    cand: Candidate, chosen: dict[int, Candidate], selfs: dict[int, Candidate]
) -> Rule | None:
    """The candidate with the rules after its target concatenated; ``None`` when the chain
    would go on through a pinned rule (only some of its results would)."""
    steps = [cand.ops]
    target = cand.target
    while target in chosen and not chosen[target].when:
        steps.append(chosen[target].ops)
        target = chosen[target].target
    if target in chosen:
        return None
    if target in selfs:
        steps.append(selfs[target].ops)
    return Rule(cand.source, target, tuple(steps), cand.support, cand.fpr, when=cand.when)


def _deployable(
    data: _Training,
    chosen: dict[int, Candidate],
    plain: dict[int, Candidate],
    selfs: dict[int, Candidate],
) -> dict[int, Rule]:
    """The rule of each source: its chosen move chained (a pinned one with its fallback),
    or its rule within the node; none for a source under another source, which covers it
    (Figure 7 (b))."""
    rules: dict[int, Rule] = {}
    for source, cand in chosen.items():
        rule = None if _covered(data, source, chosen, selfs) else _chain(cand, chosen, selfs)
        if rule is None:
            continue
        if rule.when:
            rule = replace(rule, fallback=_fallback(source, chosen, plain, selfs))
        rules[source] = rule
    for source, cand in selfs.items():
        if source not in chosen and not _covered(data, source, chosen, selfs):
            rules[source] = Rule(source, source, (cand.ops,), cand.support, cand.fpr)
    return rules


def _covered(
    data: _Training, node: int, chosen: dict[int, Candidate], selfs: dict[int, Candidate]
) -> bool:
    """Whether an ancestor of ``node`` is the source of a move or of a rule within it."""
    return any(a in chosen or a in selfs for a in data.chain[node][1:])


def _fallback(
    source: int,
    chosen: dict[int, Candidate],
    plain: dict[int, Candidate],
    selfs: dict[int, Candidate],
) -> Rule | None:
    """The rule for the URLs of ``source`` that its pinned rule does not admit: its best
    move without pinned keys, chained, else its rule within the node, if any."""
    fallback = _chain(plain[source], chosen, selfs) if source in plain else None
    if fallback is None and source in selfs:
        own = selfs[source]
        fallback = Rule(source, source, (own.ops,), own.support, own.fpr)
    return fallback


def _deployed_nodes(data: _Training) -> list[TreeNode]:
    """The pattern tree as a rule set keeps it: what matching needs, the glob and the
    duplicate rate of each node."""
    tree = data.tree
    return [
        TreeNode(
            n.parent,
            dict(n.fixed),
            n.split_key,
            dict(n.children),
            n.wildcard,
            n.required,
            n.optional,
            tree.glob(n.id),
            _dup_rate(data, n.members),
        )
        for n in tree.nodes
    ]


def _dup_rate(data: _Training, members: np.ndarray) -> float:
    """Share of a node's training URLs that are copies of another one (1 − pages / URLs)."""
    if not len(members):
        return 0.0
    return round(1.0 - len(np.unique(data.clusters[members])) / len(members), 4)


def _declared(data: _Training, node: int) -> bool:
    """Whether the site names the node's URLs as the addresses of their pages (ours): as
    many ``rel=canonical`` links and redirects end on its members as it has members, at
    least half. The random walk's popularity counts how URLs are linked, which a print view
    or a session id linked from every page can win; a format the pages themselves declare
    canonical is the destination whatever its popularity."""
    members = data.tree.nodes[node].members
    return bool(len(members)) and 2 * data.votes[members].sum() >= len(members)


def _popularity(data: _Training, moves: list[Candidate]) -> dict[int, float]:
    """Stable distribution of the random walk of §5.3 (eq. 7), started from node volumes.
    Every vertex also keeps a self-loop of weight 1 so that energy settles on sinks."""
    vertices = sorted({c.source for c in moves} | {c.target for c in moves})
    if not vertices:
        return {}
    index = {v: i for i, v in enumerate(vertices)}
    n = len(vertices)
    weights = np.eye(n)
    for cand in moves:
        i, j = index[cand.source], index[cand.target]
        weights[i, j] = max(weights[i, j], 1.0 - cand.fpr)
    for v in vertices:
        for a in data.chain[v][1:]:
            if a in index:
                weights[index[v], index[a]] = 1.0
    p = weights / weights.sum(axis=1, keepdims=True)
    nodes = data.tree.nodes
    pi = np.array(
        [nodes[v].volume + data.votes[nodes[v].members].sum() for v in vertices], dtype=float
    )
    pi /= pi.sum()
    for _ in range(200):
        nxt = p.T @ pi
        if np.abs(nxt - pi).sum() < 1e-12:
            pi = nxt
            break
        pi = nxt
    return {v: float(pi[index[v]]) for v in vertices}


def _check_deployed(
    data: _Training, ruleset: RuleSet, checked: list[int]
) -> tuple[bool, dict[int, Rule]]:
    """Run the rule set over the training URLs (``checked``: all, or ``check_sample`` of
    them); drop rules above ``fpr_max`` as deployed and attach support, false-positive rate
    and examples to the rest."""
    groups: dict[str, list[int]] = defaultdict(list)
    by_rule: dict[str, set[int]] = defaultdict(set)
    examples: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for i in checked:
        url = data.urls[i]
        explained = ruleset.explain(url)
        groups[explained.result].append(i)
        if explained.result != url and explained.node is not None:
            by_rule[explained.result].add(explained.node)
            if len(examples[explained.node]) < 3:
                examples[explained.node].append((url, explained.result))
    stats: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for result, members in groups.items():
        if len(members) < 2 or result not in by_rule:
            continue
        support, fpr = support_and_fpr(data.clusters, [members])
        for nid in by_rule[result]:
            stats[nid][0] += support
            stats[nid][1] += round(support * fpr)
    kept: dict[int, Rule] = {}
    bad = False
    for nid, rule in ruleset.rules.items():
        support, false = stats.get(nid, [0, 0])
        fpr = false / support if support else 0.0
        if support < data.min_support or fpr > data.fpr_max:
            bad = True
            continue
        kept[nid] = replace(rule, support=support, fpr=fpr, examples=tuple(examples[nid]))
    return bad, kept
