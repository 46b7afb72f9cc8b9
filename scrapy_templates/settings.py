"""Every ``TEMPLATES_*`` setting: its name, default, the values it takes and a description.

This module is the single source for defaults (the add-on applies them), for what each setting
allows (:mod:`scrapy_templates.config` reads and checks the settings by it) and for the settings
reference in the docs (``docs/settings.md`` is generated from :data:`SETTINGS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias


def _either(options: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def _number(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True, slots=True)
class Flag:
    """A boolean, in any spelling Scrapy's ``getbool`` reads."""

    type_name: ClassVar[str] = "bool"

    def describe(self) -> str:
        return "true or false (1/0, '1'/'0', 'true'/'false' and 'True'/'False' also work)"


@dataclass(frozen=True, slots=True)
class Whole:
    """A whole number from ``low`` to ``high``, both included (``None``: no bound)."""

    low: int | None = None
    high: int | None = None
    type_name: ClassVar[str] = "int"

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"a whole number from {self.low} to {self.high}"
        if self.low is not None:
            return f"a whole number of at least {self.low}"
        if self.high is not None:
            return f"a whole number of at most {self.high}"
        return "a whole number"


@dataclass(frozen=True, slots=True)
class Number:
    """A finite number from ``low`` (left out when ``low_open``) to ``high`` (``None``: no
    bound)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    type_name: ClassVar[str] = "float"

    def describe(self) -> str:
        above = "above" if self.low_open else "of at least"
        if self.low is not None and self.high is not None:
            if self.low_open:
                return f"a number above {_number(self.low)}, up to {_number(self.high)}"
            return f"a number from {_number(self.low)} to {_number(self.high)}"
        if self.low is not None:
            return f"a finite number {above} {_number(self.low)}"
        if self.high is not None:
            return f"a finite number of at most {_number(self.high)}"
        return "a finite number"


@dataclass(frozen=True, slots=True)
class Text:
    """A string that is not blank (``what`` it is, in plain words); with ``schemes``, a URL of
    one of them."""

    what: str = "a non-empty string"
    schemes: tuple[str, ...] = ()
    type_name: ClassVar[str] = "str"

    def describe(self) -> str:
        if self.schemes:
            return f"{self.what} starting with " + _either([f"{s}://" for s in self.schemes])
        return self.what


@dataclass(frozen=True, slots=True)
class Choice:
    """One of a few names."""

    choices: tuple[str, ...]
    type_name: ClassVar[str] = "str"

    def describe(self) -> str:
        return _either([repr(c) for c in self.choices])


@dataclass(frozen=True, slots=True)
class Reference:
    """One of ``names``, or an object given itself or by the dotted path to import it: ``what``,
    which must be callable or, when ``attribute`` is named, a class with that method."""

    names: tuple[str, ...]
    what: str
    type_name: str
    attribute: str | None = None

    def describe(self) -> str:
        return ", ".join([*map(repr, self.names), self.what]) + ", or the dotted path to one"


Kind: TypeAlias = Flag | Whole | Number | Text | Choice | Reference

FLAG = Flag()
PRIORITY = Whole()  # Scrapy component priorities: any integer, negative ones too
COUNT = Whole(0)  # 0 turns the feature off, or means none; each setting's doc says which
POSITIVE = Whole(1)
SHARE = Number(0.0, 1.0)
SECONDS = Number(0.0)  # 0 turns the feature off, or means no wait; each setting's doc says which
FIELD = Text("an item field name (a non-empty string)")
TEXT = Text()
# the compiled partition walk takes k as a C int
_C_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Setting:
    """One setting of the add-on: its default, the values it takes (``kind``, and ``None`` too
    when ``none`` says what ``None`` means) and a description."""

    name: str
    default: Any
    kind: Kind
    doc: str
    none: str | None = None

    @property
    def type_name(self) -> str:
        """The Python type of its value, as the docs name it."""
        return self.kind.type_name if self.none is None else f"{self.kind.type_name} or None"

    @property
    def allowed(self) -> str:
        """The values it takes, in plain words."""
        allowed = self.kind.describe()
        return allowed if self.none is None else f"None ({self.none}) or {allowed}"


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "TEMPLATES_ENABLED",
        True,
        FLAG,
        "Master switch: when false every component raises NotConfigured.",
    ),
    Setting(
        "TEMPLATES_PIPELINE_PRIORITY",
        300,
        PRIORITY,
        "Priority of the template pipeline in ITEM_PIPELINES.",
    ),
    Setting(
        "TEMPLATES_HTML_FIELD", "html", FIELD, "Item field that holds the page HTML (str or bytes)."
    ),
    Setting(
        "TEMPLATES_URL_FIELD",
        "url",
        FIELD,
        "Item field that holds the page URL; the site and page identity come from it.",
    ),
    Setting(
        "TEMPLATES_KEEP_HTML",
        True,
        FLAG,
        "Keep the HTML field on the exported item; false removes it after marking.",
    ),
    Setting(
        "TEMPLATES_PAGELETS_FIELD",
        "pagelets",
        FIELD,
        "Item field that receives the list of pagelets with their template flag.",
    ),
    Setting(
        "TEMPLATES_CONTENT_FIELD",
        "content_text",
        FIELD,
        "Item field that receives the page text without template pagelets.",
    ),
    Setting(
        "TEMPLATES_INFO_FIELD",
        "templates",
        FIELD,
        "Item field that receives the decision summary (site, pages seen, algorithm, reason).",
    ),
    Setting(
        "TEMPLATES_ALGORITHM",
        "local",
        Choice(("local", "global")),
        "'local' (pagelets counted by their text across the site's pages) or 'global' (those groups split further by the links between the pages holding them), the two algorithms of Bar-Yossef & Rajagopalan.",
    ),
    Setting(
        "TEMPLATES_LINK_THRESHOLD",
        3,
        Whole(1, _C_INT_MAX),
        "Links that make an element a list to split: an element is split into its children when one of them holds at least this many links (the k of Bar-Yossef & Rajagopalan's pagelets).",
    ),
    Setting(
        "TEMPLATES_MIN_PAGES",
        2,
        POSITIVE,
        "A pagelet is template when it occurs on at least this many distinct pages of its site.",
    ),
    Setting(
        "TEMPLATES_MIN_SHARE",
        0.25,
        SHARE,
        "…and on at least this share of the site's pages seen so far (0 disables the share test).",
    ),
    Setting(
        "TEMPLATES_PATTERN_SHARE",
        0.5,
        SHARE,
        "A pagelet differing from others only in its numbers (a dated footer, a counter) is template when that pattern is on this share of the site's pages.",
    ),
    Setting(
        "TEMPLATES_REGION_MIN_SHARE",
        0.5,
        SHARE,
        "Inside the site's main region, a pagelet that is not navigation (most of its letters in links to the site) is template only from this share of the site's pages: one section's standing sentence stays content (0: off).",
    ),
    Setting(
        "TEMPLATES_MAIN_REGION_SHARE",
        0.8,
        SHARE,
        "Content text is taken from the deepest element holding this share of the page's non-template text (0 keeps every non-template pagelet).",
    ),
    Setting(
        "TEMPLATES_SECTION_SHARE",
        0.5,
        SHARE,
        "A link block (most of its letters in links to the site: a menu, a menu entry) is template when it is on at least this share of the pages of its section — the pages of its URL directory —, on 3 of them at least, however small a share of the site the section is (0: off).",
    ),
    Setting(
        "TEMPLATES_LAYOUT",
        True,
        FLAG,
        "Layout-aware templates: group a site's pages into layout clusters and flag blocks whose text barely varies across a cluster (as Webstemmer's DiffScore and the Thor system do) besides exact counting.",
    ),
    Setting(
        "TEMPLATES_LAYOUT_SIMILARITY",
        0.5,
        SHARE,
        "Cosine similarity of TF-IDF pagelet-path signatures at which a page joins a layout cluster rather than starting one.",
    ),
    Setting(
        "TEMPLATES_LAYOUT_MAX_CLUSTERS",
        12,
        POSITIVE,
        "Layout clusters per site at most; past it a page joins the nearest cluster.",
    ),
    Setting(
        "TEMPLATES_LAYOUT_MAX_SITES",
        1000,
        POSITIVE,
        "Sites whose layout clusters, block samples and anchor texts each process keeps; past it the least recently seen site's evidence is dropped (it starts afresh if the site returns).",
    ),
    Setting(
        "TEMPLATES_BLOCK_DIFF_MAX",
        0.4,
        SHARE,
        "A block (tag path without ids, and rank) whose DiffScore across its layout cluster is at most this is static, i.e. template, when it lies outside the site's main region or is navigation (0: identical copies, 1: no word in common).",
    ),
    Setting(
        "TEMPLATES_BLOCK_SHIFT_DIFF_MAX",
        0.75,
        SHARE,
        "A navigation block (links to other pages of the site make most of its text) whose DiffScore across its layout cluster is at most this is template when it frames the content, at the top or bottom of the main region with nothing but template between it and the edge, and wherever it lies once it framed most pages of its layout: a prev/next bar or a breadcrumb, whose labels stay while the titles between them change on every page (0: off; static blocks are unaffected).",
    ),
    Setting(
        "TEMPLATES_BLOCK_MIN_PAGES",
        5,
        POSITIVE,
        "Pages of a layout cluster a block must have been seen on before its DiffScore counts.",
    ),
    Setting(
        "TEMPLATES_BLOCK_MIN_SHARE",
        0.0,
        SHARE,
        "…and at least this share of the cluster's pages (0: any share; a bar of one kind of page, such as texinfo's chapter pages among its section pages, is a small part of its cluster).",
    ),
    Setting(
        "TEMPLATES_BLOCK_SAMPLES",
        6,
        Whole(2),
        "Text samples kept per block (a reservoir of its first words) to compute its DiffScore; it takes two to see a block vary.",
    ),
    Setting(
        "TEMPLATES_BLOCK_COMPARE",
        "bits",
        Choice(("bits", "words")),
        "How block samples are kept and compared: 'bits' (word-offset bit signatures after Chen, Ye & Li, one integer per sample, compared by AND) or 'words' (the words, compared by Webstemmer's letter-weighted common subsequence).",
    ),
    Setting(
        "TEMPLATES_SITE",
        "host",
        Reference(("host", "domain"), "a function url -> site", "str or callable"),
        "How pages are grouped into sites: 'host', 'domain' (registered domain) or a dotted path to a function url -> site.",
    ),
    Setting(
        "TEMPLATES_BOOTSTRAP_PAGES",
        50,
        COUNT,
        "Cold start: the first items of a site the store knows fewer pages of wait until this many more of its pages are counted (the spider's own; nothing extra is downloaded), or until the crawl has nothing in flight, and are then decided on what all of them teach (0 disables).",
    ),
    Setting(
        "TEMPLATES_BOOTSTRAP_TIMEOUT",
        30.0,
        SECONDS,
        "Seconds the first items of a site may wait for its next page before deciding on what is there: each page of the site that comes to the pipeline or is counted starts this over, and no item of the site waits past ten times it after the site's first item came (0: they do not wait).",
    ),
    Setting(
        "TEMPLATES_MAX_HTML_BYTES",
        5_000_000,
        POSITIVE,
        "Pages larger than this are cut to this size before parsing (the reason field says so) and before the URL rules hash their text.",
    ),
    Setting(
        "TEMPLATES_MAX_TAGS",
        100_000,
        POSITIVE,
        "Pages with more tags ('<' characters) than this are not partitioned; the item is flagged instead.",
    ),
    Setting(
        "TEMPLATES_PARSE_WORKERS",
        None,
        COUNT,
        none="one worker when this process may use more than one CPU, else none",
        doc="Child processes that mark pages off the crawl's thread (the HTML goes over a pipe; with the local algorithm the worker parses, counts in its own copy of its sites' counts and decides, each site always in the same worker, while the crawl's thread counts the page in the store; with the global algorithm it parses only); None: one when this process may use more than one CPU; 0: all in the crawl's thread. Pages that come while a worker starts (about 0.3 s) wait for it, at most 10 s, and are then marked in the crawl's thread; a worker that dies is replaced, and the pages it had are marked in the crawl's thread. When this is above 0 (or None on more than one CPU), URL rules are also learned in a child process of their own; at 0, in a thread.",
    ),
    Setting(
        "TEMPLATES_PARSE_TIMEOUT",
        30.0,
        Number(0, low_open=True),
        "Seconds a parse worker may spend on one page. A worker that takes longer is killed and replaced; that page's item passes on unmarked with reason 'parse-timeout', and the pages queued behind it are parsed in the crawl's thread.",
    ),
    Setting(
        "TEMPLATES_LOGSTATS_INTERVAL",
        60.0,
        SECONDS,
        "Seconds between progress log lines (pages marked, template share, URL rules in force, requests rewritten and dropped); 0 turns them off.",
    ),
    Setting(
        "TEMPLATES_SNIPPET_CHARS",
        80,
        COUNT,
        'Most characters of the text snippet stored on each pagelet of the item, cut between words with "…" when the text is longer (the title is cut at twice this; 0: no snippets).',
    ),
    Setting(
        "TEMPLATES_STORE",
        None,
        Reference(
            ("memory", "redis"), "a store class with from_settings", "str or class", "from_settings"
        ),
        none="'redis' when TEMPLATES_REDIS_URL or scrapy-redis's REDIS_URL is set, else 'memory'",
        doc="Where pages are counted: 'memory' (this process only) or 'redis' (shared by every process of the crawl); None chooses Redis when a Redis URL is set. A store class with from_settings, or its dotted path, also works.",
    ),
    Setting(
        "TEMPLATES_REDIS_URL",
        None,
        Text("a URL", ("redis", "rediss", "unix")),
        none="unset: scrapy-redis's REDIS_URL is used",
        doc="Redis URL for the shared store; falls back to scrapy-redis's REDIS_URL when unset (None or '').",
    ),
    Setting(
        "TEMPLATES_REDIS_PREFIX", "templates", TEXT, "Prefix of every Redis key the store writes."
    ),
    Setting(
        "TEMPLATES_MAX_OWNERS",
        256,
        POSITIVE,
        "Global algorithm: owner pages remembered per pagelet fingerprint and site.",
    ),
    Setting(
        "TEMPLATES_MAX_LINKS", 200, POSITIVE, "Global algorithm: out-links remembered per page."
    ),
    Setting(
        "TEMPLATES_STORE_RETRY",
        5.0,
        SECONDS,
        "Seconds between attempts to reach the shared store while it is down (pages are counted in process memory meanwhile and merged when it is back; 0: at every store call).",
    ),
    Setting(
        "TEMPLATES_STORE_JOURNAL",
        200_000,
        COUNT,
        "Writes kept for replay while the shared store is down; past it the oldest are not merged (items still flow; 0: none are kept).",
    ),
    Setting(
        "TEMPLATES_STORE_FILE",
        "scrapy-templates.json",
        Text("a file name (a non-empty string)"),
        "File name, inside JOBDIR, where the memory store keeps its state between runs (used only when JOBDIR is set).",
    ),
    Setting(
        "TEMPLATES_RELEARN_INTERVAL",
        60.0,
        SECONDS,
        "Seconds between relearns of the URL rules and template models of sites with new evidence (0: only on new pages and at spider close).",
    ),
    Setting(
        "TEMPLATES_RELEARN_PAGES",
        500,
        COUNT,
        "Relearn a site's template model once this process has marked this many new pages of it (0: off).",
    ),
    Setting(
        "TEMPLATES_SYNC_INTERVAL",
        1.0,
        Number(0, low_open=True),
        "Seconds between checks for rules and models that other processes published (one read of a counter); values below 0.1 count as 0.1.",
    ),
    Setting(
        "TEMPLATES_LOCK_TTL",
        120.0,
        Number(0, low_open=True),
        "Seconds a learner's per-site lock lasts; a learner that dies frees it after this long.",
    ),
    Setting(
        "TEMPLATES_PRUNE_PAGES",
        200,
        COUNT,
        "Delete a site's fingerprint counters that stand at 1 each time it has counted this many more pages, and at spider close (0: never).",
    ),
    Setting(
        "TEMPLATES_PRUNE_SHARE",
        0.05,
        SHARE,
        "Pruning also deletes counters below this share of the site's pages (at most half of TEMPLATES_MIN_SHARE; 0 or a share test of 0: only counters at 1).",
    ),
    Setting(
        "TEMPLATES_URL_RULES",
        True,
        FLAG,
        "Learn URL-normalization rules per host during the crawl and apply them to requests before they are enqueued.",
    ),
    Setting(
        "TEMPLATES_URL_SPIDER_MIDDLEWARE_PRIORITY",
        950,
        PRIORITY,
        "Priority of the spider middleware that rewrites or drops requests before they are enqueued (above DepthMiddleware's 900, so depth, URL length and referer see the rewritten URL).",
    ),
    Setting(
        "TEMPLATES_URL_DOWNLOADER_MIDDLEWARE_PRIORITY",
        50,
        PRIORITY,
        "Priority of the downloader middleware that covers redirects, retries and requests queued before a rule existed.",
    ),
    Setting(
        "TEMPLATES_URL_DROP_REPEATS",
        True,
        FLAG,
        "Drop a request for a URL the scheduler's dupefilter has recorded (fragment aside) before it gets there, as the dupefilter would drop it after every later spider middleware, the request_scheduled signal and the request fingerprint: most of a site's links are repeats. Only with URL rules on (TEMPLATES_URL_RULES), with Scrapy's own scheduler, dupefilter and request fingerprinter and DUPEFILTER_DEBUG off, and for a GET without a body, dont_filter or verbatim_url; counted in templates/urls/repeats, not in dupefilter/filtered, and with no request_dropped signal (as a spider middleware's drop).",
    ),
    Setting(
        "TEMPLATES_URL_RULES_FILE",
        None,
        Text("a file path (a non-empty string)"),
        none="no file",
        doc="A JSON file of rule sets (from `scrapy-templates rules learn`) in force from the start of the crawl (None or '': none).",
    ),
    Setting(
        "TEMPLATES_URL_SAMPLE_SIZE",
        5000,
        POSITIVE,
        "URL samples (URL + content fingerprints) kept per host for learning, by reservoir sampling.",
    ),
    Setting(
        "TEMPLATES_URL_MIN_SAMPLES",
        20,
        POSITIVE,
        "A host's rules are first learned once this many of its pages have been sampled, or once a quarter of this many have been when three of its downloads repeated the text of a page already sampled; and only once its samples show two URLs of one page (the same text or page hash, or another URL of the host the site names for the page), rules are in force, TEMPLATES_URL_SIMHASH_DISTANCE is set, the store holds samples of the host from another process or an earlier crawl, or the host has over four times TEMPLATES_URL_SAMPLE_SIZE pages (past those, a duplicate could go unseen): learning from distinct pages gives no rule.",
    ),
    Setting(
        "TEMPLATES_URL_LEARN_EVERY",
        25,
        POSITIVE,
        "Relearn a host's rules after at most this many new samples (after a tenth of its sample while that is fewer: at least 5 samples, or 1 while the host has no rules yet). Each relearn that leaves the rules mapping every URL as before doubles this for the host (up to 64 times); one that changes them starts over. A download that repeats the text of a page downloaded under another URL makes the host due after that least step alone, unless two relearns in a row left the repeats of its form of URL (path and query keys) telling the two URLs apart: those duplicates come from the site's data (a short list in every sort order), and a learning run each would cost the crawl for nothing.",
    ),
    Setting(
        "TEMPLATES_URL_SIMHASH_DISTANCE",
        None,
        Whole(0, 3),
        none="page simhashes are no duplicate evidence",
        doc="Pages whose simhashes differ in at most this many bits are duplicates for learning (0: equal simhashes only). Off by default: a whole-page near-duplicate is often a distinct page under a large shared template, and a rule learned from it loses pages; duplicates are found from the content without the template, the page's text, rel=canonical and redirects. At most 3: near-duplicates are found by splitting the 64-bit simhash into four 16-bit blocks, and only hashes within 3 bits are sure to share one.",
    ),
    Setting(
        "TEMPLATES_URL_MIN_SHARE",
        0.05,
        SHARE,
        "Pattern tree: a value stays literal (salient) only when at least this share of a node's pages have it.",
    ),
    Setting(
        "TEMPLATES_URL_O_MIN",
        0.5,
        SHARE,
        "Minimum overlap of the duplicate pages of two URL patterns for a rule between them (o_min of Lei et al.).",
    ),
    Setting(
        "TEMPLATES_URL_DUP_RATE_MIN",
        0.5,
        SHARE,
        "Minimum duplicate rate of one tree node for a rule inside it (a rule from a URL pattern to itself, as in Lei et al. §5.2.1). A node holding three or more duplicate clusters qualifies whatever its rate: early in a crawl most pages have been reached once, so the rate is low even where every link carries a session id.",
    ),
    Setting(
        "TEMPLATES_URL_SIGMA_MIN",
        0.5,
        SHARE,
        "sigma_min of Algorithm 3: share of duplicate pairs with equal values for a key-key mapping.",
    ),
    Setting(
        "TEMPLATES_URL_FAKE_MAX",
        0.5,
        SHARE,
        "A mapped key whose values differ between duplicates more often than this is ignored, not replaced (Lei et al. §5.2.2).",
    ),
    Setting(
        "TEMPLATES_URL_MIN_SUPPORT",
        1,
        POSITIVE,
        "A rule needs at least this many pairs of training URLs it makes equal (support pairs).",
    ),
    Setting(
        "TEMPLATES_URL_DEFER_PRIORITY",
        0,
        COUNT,
        "Requests no rule rewrites, of a URL form that has shown duplicates, get this much lower priority so that their rule can be learned before they are fetched (0, the default: never; no gain measured on the demo crawl yet).",
    ),
    Setting(
        "TEMPLATES_URL_DEFER_RATE",
        0.25,
        SHARE,
        "…when the duplicate rate of the URL's form in the training URLs is at least this.",
    ),
    Setting(
        "TEMPLATES_URL_FPR_MAX",
        0.0005,
        SHARE,
        "Highest false-positive rate a candidate rule may have on the URL samples: the share of the URLs it would rewrite that are not duplicates of their target (fpr_max of Lei et al. §5.2.3).",
    ),
    Setting(
        "TEMPLATES_URL_CHECK_FIRST",
        3,
        COUNT,
        "The first this many requests each URL rule rewrites or drops are fetched anyway and their page compared with the page the rule took them for, and as many in each further directory the rule reaches (within a tenth of the host's downloads); a rule whose pages differ is retracted at once and the requests it turned away are sent again (0 and TEMPLATES_URL_CHECK_SHARE 0: no checks).",
    ),
    Setting(
        "TEMPLATES_URL_CHECK_SHARE",
        0.02,
        SHARE,
        "…and then this share of them, chosen at random, never more than this share of the host's downloads.",
    ),
)

DEFAULTS: dict[str, Any] = {s.name: s.default for s in SETTINGS}


def render_markdown() -> str:
    """The settings reference page (``docs/settings.md``), generated from :data:`SETTINGS`:
    an index table, then one section per setting (its heading is its anchor, the setting's
    name in lower case).

    Regenerate with ``python -m scrapy_templates.settings > docs/settings.md``.
    """
    lines = [
        "# Settings",
        "",
        "Every setting of scrapy-templates: its type, the values it takes, its default and what",
        'it does. The add-on applies the defaults at "addon" priority, so a value in your project',
        "or spider settings always wins.",
        "",
        "Every setting is checked when the crawler starts, against the values listed here. A",
        "value that is not allowed stops the crawl before its first request, with one error",
        "naming every such setting, its value and what is allowed, for example",
        "",
        "```text",
        "scrapy_templates.config.SettingError: TEMPLATES_MIN_SHARE = 1.5 is not allowed: a number from 0 to 1",
        "```",
        "",
        "Strings, as `scrapy crawl -s NAME=VALUE` gives them, are converted",
        "(`-s TEMPLATES_MIN_PAGES=3`, `-s TEMPLATES_LAYOUT=false`). With `TEMPLATES_ENABLED = False`",
        "the add-on checks and enables nothing. The check is `TemplatesConfig.from_settings`",
        "(`scrapy_templates/config.py`).",
        "(Generated from `scrapy_templates/settings.py`.)",
        "",
        "| setting | type | default |",
        "|---|---|---|",
    ]
    for s in SETTINGS:
        lines.append(f"| [`{s.name}`](#{s.name.lower()}) | {s.type_name} | `{s.default!r}` |")
    for s in SETTINGS:
        lines += [
            "",
            f"## `{s.name}`",
            "",
            s.doc,
            "",
            f"- type: {s.type_name}",
            f"- allowed: {s.allowed}",
            f"- default: `{s.default!r}`",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
