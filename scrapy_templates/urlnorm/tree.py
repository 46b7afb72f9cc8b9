"""The URL pattern tree of ``003_…`` §5.1 (Algorithm 1).

Starting from all URLs of a site, a node is split by the key with the lowest value entropy not
yet used; the key's values are *salient* (kept as literal values in the children's patterns) or
*trivial* (generalised to ``*``), cut at the largest drop of the sorted log-frequency curve
(eq. 5). A node stops when its lowest-entropy key has only trivial values.

Choices of ours, each cheap and in the spirit of the paper:

- a missing key is a value of its own (``ABSENT``), so URLs with and without ``?sid`` or a
  trailing segment land in different nodes;
- a split that would give a single child only fixes the key's value on the node itself, so the
  tree has no chains of one-child nodes;
- a key whose values all come out trivial is generalised on the node and the next key is
  tried (Algorithm 1 stops there), so a trivial key of low entropy does not hide a salient
  one;
- a key whose values differ between duplicates of one page (a session id, a tracking tag)
  has only trivial values, however often each value repeats: it says nothing about the page;
- value frequencies for the salient/trivial cut count distinct duplicate clusters, not URLs,
  and a salient value needs at least two clusters and ``min_share`` of the node's clusters:
  duplicates repeat a page's ID a few times, which must not make an ID look like a directory;
- a node :data:`MAX_DEPTH` levels below the root is not split: its URLs share one pattern;
- a value shaped like the name of one object (:func:`is_identifier`: twelve hexadecimal or
  decimal digits or more, a UUID) is never salient: a repository browser links its few
  commits from every page, frequent values that still name no section.

Columns of value ids (numpy) keep the build near-linear in the number of URLs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .url import UrlKeys, Value, is_authority_key, to_url


class Absent:
    """The value of a key a URL does not have (one instance, :data:`ABSENT`; identity
    hashing keeps it as cheap as a string in dictionary lookups)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT = Absent()
Token = str | None | Absent
WILD = "[^/?#&;]*"
MAX_DEPTH = 64
"""The deepest a pattern tree grows, learned or read as rules: each split uses up one key of
the URLs below it and real URLs carry a few dozen keys at most, while a site whose every
page carries a parameter name of its own grows a chain of one level per name (1,600 levels
deep at 3,200 URLs, each level a pass over every key)."""


@dataclass
class Node:
    """One URL pattern: the keys fixed to a value on the way from the root, the keys
    generalised to ``*``, and the member URLs (indices into the training URLs)."""

    id: int
    parent: int | None
    fixed: dict[str, Token]
    wild: frozenset[str]
    members: np.ndarray
    split_key: str | None = None
    children: dict[Token, int] = field(default_factory=dict)
    wildcard: int | None = None
    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    example: tuple[tuple[str, Value], ...] = ()

    @property
    def volume(self) -> int:
        return len(self.members)


@dataclass
class PatternTree:
    """A pattern tree over ``urls``; ``nodes[0]`` is the root."""

    urls: list[UrlKeys]
    nodes: list[Node]
    leaf_of: np.ndarray  # node id of the deepest node holding each URL
    columns: Columns

    def ancestors(self, node_id: int) -> list[int]:
        """``node_id`` and its ancestors, deepest first."""
        out = [node_id]
        parent = self.nodes[node_id].parent
        while parent is not None:
            out.append(parent)
            parent = self.nodes[parent].parent
        return out

    def pattern(self, node_id: int) -> dict[str, Token]:
        """Every constraint of the node: fixed values, and ``"*"`` for generalised keys."""
        out: dict[str, Token] = {}
        for nid in reversed(self.ancestors(node_id)):
            node = self.nodes[nid]
            out.update(dict.fromkeys(node.wild, "*"))
            out.update(node.fixed)
        return out

    def glob(self, node_id: int) -> str:
        """The node's pattern as a URL with ``*`` for generalised values."""
        node = self.nodes[node_id]
        fixed = {k: v for k, v in self.pattern(node_id).items() if v != "*"}
        pairs: list[tuple[str, Value]] = []
        for key, value in node.example:
            if key in fixed:
                token = fixed[key]
                pairs.append((key, None if isinstance(token, Absent) else token))
            elif key == "qsep":  # how the example's query is written, not a value
                pairs.append((key, value))
            else:
                pairs.append((key, "*"))
        return to_url(pairs)

    def regex(self, node_id: int) -> str:
        """A regular expression for the node's URLs written in its example's key order."""
        return "^" + re.escape(self.glob(node_id)).replace(r"\*", WILD) + "$"

    def match(self, keys: dict[str, Value]) -> list[int]:
        """Node ids on the path a URL takes from the root, root first; empty when the URL
        does not fit the root's pattern."""
        path: list[int] = []
        node = self.nodes[0]
        if not _fits(node, keys):
            return path
        path.append(0)
        while node.split_key is not None:
            value: Token = keys.get(node.split_key, ABSENT)
            child = node.children.get(value)
            if child is None and not isinstance(value, Absent):
                child = node.wildcard
            if child is None or not _fits(self.nodes[child], keys):
                break
            node = self.nodes[child]
            path.append(child)
        return path


def _fits(node: Node, keys: dict[str, Value]) -> bool:
    return all(keys.get(k, ABSENT) == v for k, v in node.fixed.items())


def entropy(counts: Sequence[int] | np.ndarray) -> float:
    """Shannon entropy of a value distribution (eq. 4)."""
    array = np.asarray(counts, dtype=np.float64)
    p = array[array > 0] / array.sum()
    return float(-(p * np.log(p)).sum())


_IDENTIFIER = re.compile(
    r"[0-9a-f]{12,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE
)


def is_identifier(value: Token) -> bool:
    """Whether a value is shaped like the name of one object: twelve hexadecimal (or decimal)
    digits or more — a content hash, a commit id, a millisecond timestamp — or a UUID. Such a
    value never names a section of a site, however often the site's links repeat it. Shorter
    hashes (a seven-digit abbreviated commit) are left to the frequency cut."""
    return isinstance(value, str) and _IDENTIFIER.fullmatch(value) is not None


def salient_values(counts: dict[Token, int], min_share: float) -> set[Token]:
    """Values kept literally in the tree: those before the largest drop of the sorted
    log-frequency curve (eq. 5), among values seen at least twice and in at least
    ``min_share`` of the URLs that have the key, object names (:func:`is_identifier`) aside.
    ``ABSENT`` (a structural fact, not a value) is always salient and is left out of the
    curve."""
    present = {v: c for v, c in counts.items() if not isinstance(v, Absent)}
    total = sum(present.values())
    ranked = sorted(
        ((v, c) for v, c in present.items() if not is_identifier(v)),
        key=lambda kv: (-kv[1], str(kv[0])),
    )
    floor = max(2.0, min_share * total)
    freqs = [c for _, c in ranked]
    best_drop, cut = 0.0, 0
    for i, f in enumerate(freqs):
        if f < floor:
            break
        nxt = freqs[i + 1] if i + 1 < len(freqs) else 1
        drop = math.log(f) - math.log(nxt)
        if drop > best_drop:
            best_drop, cut = drop, i + 1
    out: set[Token] = {v for v, _ in ranked[:cut]}
    if ABSENT in counts:
        out.add(ABSENT)
    return out


class Columns:
    """Training URLs as integer value ids per key (0 = absent). Value ids are shared by all
    keys, so values of two keys compare as integers.

    The pairs are held once, row by row; a key's dense column is made the first time it is
    asked for. A site that gives each page a parameter name of its own (``/item?1234``) has
    as many keys as URLs, and a column per key would be quadratic in memory."""

    def __init__(self, urls: Sequence[UrlKeys]) -> None:
        ids: dict[Token, int] = {ABSENT: 0}
        self.tokens: list[Token] = [ABSENT]
        key_ids: dict[str, int] = {}
        keys: list[int] = []
        vids: list[int] = []
        lengths: list[int] = []
        for pairs in urls:
            for key, value in pairs.pairs:
                vid = ids.get(value)
                if vid is None:
                    vid = ids[value] = len(self.tokens)
                    self.tokens.append(value)
                kid = key_ids.get(key)
                if kid is None:
                    kid = key_ids[key] = len(key_ids)
                keys.append(kid)
                vids.append(vid)
            lengths.append(len(pairs.pairs))
        self.size = len(urls)
        self.names: list[str] = sorted(key_ids)
        """The keys by name; a key's id (its index here) orders ties by name."""
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        renumber = np.zeros(len(key_ids), dtype=np.int64)
        for name, kid in key_ids.items():
            renumber[kid] = self.index[name]
        self.entry_keys = renumber[np.asarray(keys, dtype=np.int64)]
        self.entry_values = np.asarray(vids, dtype=np.int64)
        self.entry_rows = np.repeat(np.arange(len(urls)), lengths)
        self.starts = np.zeros(len(urls) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.starts[1:])
        self._columns: dict[str, np.ndarray] = {}

    def column(self, key: str) -> np.ndarray:
        """The key's value id in every URL (all absent when no URL has the key)."""
        found = self._columns.get(key)
        if found is None:
            found = np.zeros(self.size, dtype=np.int64)
            kid = self.index.get(key)
            if kid is not None:
                here = self.entry_keys == kid
                found[self.entry_rows[here]] = self.entry_values[here]
            self._columns[key] = found
        return found

    def entries(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Key ids and value ids of every pair of the URLs ``members``, in time linear in
        those pairs whatever the number of keys."""
        starts = self.starts[members]
        lengths = self.starts[members + 1] - starts
        total = int(lengths.sum())
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        return self.entry_keys[offsets], self.entry_values[offsets]

    def key_counts(self, members: np.ndarray) -> np.ndarray:
        """For each key id, how many of ``members`` have the key."""
        keys, _ = self.entries(members)
        return np.bincount(keys, minlength=len(self.names))


def build_tree(
    urls: Sequence[UrlKeys],
    clusters: Sequence[int] | np.ndarray | None = None,
    *,
    min_share: float = 0.05,
    vary_max: float = 0.5,
) -> PatternTree:
    """Algorithm 1 of ``003_…`` over ``urls`` (all of one site); ``clusters[i]`` is the
    duplicate cluster of ``urls[i]`` (each URL its own cluster when not given)."""
    cols = Columns(urls)
    cluster_of = np.arange(len(urls)) if clusters is None else np.asarray(clusters, dtype=np.int64)
    builder = _Builder(cols, cluster_of, min_share, vary_max, np.arange(len(urls)))
    todo: list[tuple[int, frozenset[str], int]] = [(0, frozenset(), 0)]
    while todo:
        nid, done, depth = todo.pop()
        if depth < MAX_DEPTH:
            todo += [(child, used, depth + 1) for child, used in builder.grow(nid, done)]
    nodes = builder.nodes
    leaf_of = np.zeros(len(urls), dtype=np.int64)
    for node in nodes:
        _describe(node, urls, cols)
        if node.split_key is None:
            leaf_of[node.members] = node.id
    return PatternTree(list(urls), nodes, leaf_of, cols)


class _Builder:
    """One run of Algorithm 1: the URLs' columns and clusters, the thresholds, and the nodes
    made so far (the root first)."""

    def __init__(
        self,
        cols: Columns,
        cluster_of: np.ndarray,
        min_share: float,
        vary_max: float,
        members: np.ndarray,
    ) -> None:
        self.cols = cols
        self.cluster_of = cluster_of
        self.min_share = min_share
        self.vary_max = vary_max
        self.nodes: list[Node] = [Node(0, None, {}, frozenset(), members)]

    def grow(self, nid: int, done: frozenset[str]) -> list[tuple[int, frozenset[str]]]:
        """Take the keys of node ``nid`` not in ``done``, lowest entropy first: a key with
        no salient value is generalised on the node, a key whose one salient value every
        member has is fixed on it, and the first other key splits it. Returns the children
        to grow next, each with the keys used on the way."""
        node = self.nodes[nid]
        members = node.members
        tokens = self.cols.tokens
        while True:
            lowest = self._lowest_entropy_key(members, done)
            if lowest is None:
                return []
            key, vids = lowest
            salient = self._salient(key, members)
            done = done | {key}
            if not salient:
                node.wild = node.wild | {key}
                continue
            column = self.cols.column(key)[members]
            salient_ids = [v for v in vids.tolist() if tokens[v] in salient]
            trivial = ~np.isin(column, salient_ids)
            if len(salient_ids) == 1 and not trivial.any():
                node.fixed[key] = tokens[salient_ids[0]]
                continue
            return self._split(nid, key, column, salient_ids, trivial, done)

    def _lowest_entropy_key(
        self, members: np.ndarray, done: frozenset[str]
    ) -> tuple[str, np.ndarray] | None:
        """The key not in ``done`` whose values over ``members`` have the lowest entropy
        (ties by name), with its value ids; ``None`` when no such key is held by any
        member. All keys are measured at once from the members' pairs; those within rounding
        of the lowest are measured again one by one over their sorted counts, so keys of
        equal entropy tie exactly and the name decides (a site whose every URL has a key of
        its own ties them all: no key's column is made here)."""
        cols = self.cols
        keys, values = cols.entries(members)
        if not len(keys):
            return None
        size = len(members)
        width = len(cols.tokens)
        pairs, counts = np.unique(keys * width + values, return_counts=True)
        key_of = pairs // width
        share = counts / size
        h = np.bincount(key_of, weights=-share * np.log(share), minlength=len(cols.names))
        present = np.bincount(key_of, weights=counts, minlength=len(cols.names))
        absent = (size - present) / size
        missing = absent > 0
        h[missing] = h[missing] - absent[missing] * np.log(absent[missing])
        held = present > 0
        held[[cols.index[k] for k in done if k in cols.index]] = False
        if not held.any():
            return None
        near = np.flatnonzero(held & (h <= h[held].min() + 1e-9))
        firsts = np.searchsorted(key_of, near, side="left").tolist()
        ends = np.searchsorted(key_of, near, side="right").tolist()
        best: tuple[float, str, np.ndarray] | None = None
        for kid, first, end in zip(near.tolist(), firsts, ends, strict=True):
            key = cols.names[kid]
            counted = counts[first:end]
            ids = pairs[first:end] - kid * width
            missing_count = size - int(counted.sum())
            if missing_count:
                counted = np.append(counted, missing_count)
                ids = np.insert(ids, 0, 0)
            exact = entropy(np.sort(counted))
            if best is None or (exact, key) < (best[0], best[1]):
                best = (exact, key, ids)
        assert best is not None
        return best[1], best[2]

    def _salient(self, key: str, members: np.ndarray) -> set[Token]:
        """The salient values of ``key`` among ``members``, counted by cluster. A key whose
        values differ between duplicates has none but ``ABSENT``: each value counts once."""
        column = self.cols.column(key)
        counts = _cluster_counts(column, self.cluster_of, members, self.cols.tokens)
        if varies_within_clusters(column, self.cluster_of, members) > self.vary_max:
            counts = {t: 1 for t in counts if t is not ABSENT} | (
                {ABSENT: 1} if ABSENT in counts else {}
            )
        return salient_values(counts, self.min_share)

    def _split(
        self,
        nid: int,
        key: str,
        column: np.ndarray,
        salient_ids: list[int],
        trivial: np.ndarray,
        done: frozenset[str],
    ) -> list[tuple[int, frozenset[str]]]:
        """Split node ``nid`` by ``key`` (``column``: its value ids over the node's
        members): a child per salient value, and a wildcard child for the members with a
        trivial value, if any. Returns the children with ``done``."""
        node = self.nodes[nid]
        tokens = self.cols.tokens
        node.split_key = key
        made: list[tuple[int, frozenset[str]]] = []
        for vid in salient_ids:
            child = Node(
                len(self.nodes), nid, {key: tokens[vid]}, frozenset(), node.members[column == vid]
            )
            self.nodes.append(child)
            node.children[tokens[vid]] = child.id
            made.append((child.id, done))
        if trivial.any():
            child = Node(len(self.nodes), nid, {}, frozenset({key}), node.members[trivial])
            self.nodes.append(child)
            node.wildcard = child.id
            made.append((child.id, done))
        return made


MIN_EVIDENCE = 3


def varies_within_clusters(
    column: np.ndarray, cluster_of: np.ndarray, members: np.ndarray
) -> float:
    """Among duplicate clusters with two or more of ``members`` having the key: the share
    whose URLs disagree on the key's value; 0 when fewer than :data:`MIN_EVIDENCE` clusters
    say anything (one odd pair of look-alike pages must not decide for a whole key)."""
    present = members[column[members] != 0]
    if len(present) < 2:
        return 0.0
    clusters = cluster_of[present]
    ids, sizes = np.unique(clusters, return_counts=True)
    width = int(column.max()) + 1
    distinct_ids, distinct = np.unique(
        np.unique(clusters.astype(np.int64) * width + column[present]) // width,
        return_counts=True,
    )
    several = ids[sizes > 1]
    if len(several) < MIN_EVIDENCE:
        return 0.0
    differing = distinct_ids[distinct > 1]
    return float(np.isin(several, differing).sum()) / len(several)


def _cluster_counts(
    column: np.ndarray, cluster_of: np.ndarray, members: np.ndarray, tokens: list[Token]
) -> dict[Token, int]:
    """For each value of a key among ``members``: in how many distinct clusters it occurs."""
    width = int(cluster_of.max()) + 1 if len(cluster_of) else 1
    combined = np.unique(column[members].astype(np.int64) * width + cluster_of[members])
    vids, counts = np.unique(combined // width, return_counts=True)
    return {tokens[v]: int(c) for v, c in zip(vids.tolist(), counts.tolist(), strict=True)}


def _describe(node: Node, urls: Sequence[UrlKeys], cols: Columns) -> None:
    """Fill the node's required / optional keys and its example URL."""
    members = node.members
    counts = cols.key_counts(members)
    required: set[str] = set()
    optional: set[str] = set()
    for kid in np.flatnonzero(counts).tolist():
        key = cols.names[kid]
        if is_authority_key(key):
            continue
        if counts[kid] == len(members):
            required.add(key)
        else:
            optional.add(key)
    node.required = frozenset(required)
    node.optional = frozenset(optional)
    if len(members):
        node.example = urls[int(members[0])].pairs
