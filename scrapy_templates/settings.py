"""Every ``TEMPLATES_*`` setting: its name, default and a one-line description.

This module is the single source for defaults (the add-on applies them) and for the settings
reference in the docs (``docs/settings.md`` is generated from :data:`SETTINGS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One setting of the add-on."""

    name: str
    default: Any
    doc: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "TEMPLATES_ENABLED", True, "Master switch: when false every component raises NotConfigured."
    ),
    Setting(
        "TEMPLATES_PIPELINE_PRIORITY", 300, "Priority of the template pipeline in ITEM_PIPELINES."
    ),
    Setting("TEMPLATES_HTML_FIELD", "html", "Item field that holds the page HTML (str or bytes)."),
    Setting(
        "TEMPLATES_URL_FIELD",
        "url",
        "Item field that holds the page URL; the site and page identity come from it.",
    ),
    Setting(
        "TEMPLATES_KEEP_HTML",
        True,
        "Keep the HTML field on the exported item; false removes it after marking.",
    ),
    Setting(
        "TEMPLATES_PAGELETS_FIELD",
        "pagelets",
        "Item field that receives the list of pagelets with their template flag.",
    ),
    Setting(
        "TEMPLATES_CONTENT_FIELD",
        "content_text",
        "Item field that receives the page text without template pagelets.",
    ),
    Setting(
        "TEMPLATES_INFO_FIELD",
        "templates",
        "Item field that receives the decision summary (site, pages seen, algorithm, reason).",
    ),
    Setting(
        "TEMPLATES_ALGORITHM",
        "local",
        "'local' (shingle groups, 000_… §3.2 Fig. 4) or 'global' (groups split into link-connected components, Fig. 5).",
    ),
    Setting(
        "TEMPLATES_LINK_THRESHOLD",
        3,
        "k of the pagelet partition: an element is split when a child holds at least k links (000_… §3.1).",
    ),
    Setting(
        "TEMPLATES_MIN_PAGES",
        2,
        "A pagelet is template when it occurs on at least this many distinct pages of its site.",
    ),
    Setting(
        "TEMPLATES_MIN_SHARE",
        0.25,
        "…and on at least this share of the site's pages seen so far (0 disables the share test).",
    ),
    Setting(
        "TEMPLATES_PATTERN_SHARE",
        0.5,
        "A pagelet differing from others only in its numbers (a dated footer, a counter) is template when that pattern is on this share of the site's pages.",
    ),
    Setting(
        "TEMPLATES_REGION_MIN_SHARE",
        0.5,
        "Inside the site's main region, a pagelet that is not navigation (most of its letters in links to the site) is template only from this share of the site's pages: one section's standing sentence stays content.",
    ),
    Setting(
        "TEMPLATES_MAIN_REGION_SHARE",
        0.8,
        "Content text is taken from the deepest element holding this share of the page's non-template text (0 keeps every non-template pagelet).",
    ),
    Setting(
        "TEMPLATES_LAYOUT",
        True,
        "Layout-aware templates: group a site's pages into layout clusters and flag blocks whose text barely varies across a cluster (Webstemmer DiffScore, 001_…; Thor, 004_…) besides exact counting.",
    ),
    Setting(
        "TEMPLATES_LAYOUT_SIMILARITY",
        0.5,
        "Cosine similarity of TF-IDF pagelet-path signatures at which a page joins a layout cluster rather than starting one.",
    ),
    Setting(
        "TEMPLATES_LAYOUT_MAX_CLUSTERS",
        12,
        "Layout clusters per site at most; past it a page joins the nearest cluster.",
    ),
    Setting(
        "TEMPLATES_LAYOUT_MAX_SITES",
        1000,
        "Sites whose layout clusters, block samples and anchor texts each process keeps; past it the least recently seen site's evidence is dropped (it starts afresh if the site returns).",
    ),
    Setting(
        "TEMPLATES_BLOCK_DIFF_MAX",
        0.4,
        "A block (tag path and rank) whose DiffScore across its layout cluster is at most this is static, i.e. template, when it lies outside the site's main region or is navigation (0: identical copies, 1: no word in common).",
    ),
    Setting(
        "TEMPLATES_BLOCK_MIN_PAGES",
        5,
        "Pages of a layout cluster a block must have been seen on before its DiffScore counts.",
    ),
    Setting(
        "TEMPLATES_BLOCK_MIN_SHARE",
        0.5,
        "…and at least this share of the cluster's pages.",
    ),
    Setting(
        "TEMPLATES_BLOCK_SAMPLES",
        6,
        "Text samples kept per block (a reservoir of its first words) to compute its DiffScore.",
    ),
    Setting(
        "TEMPLATES_BLOCK_COMPARE",
        "bits",
        "How block samples are kept and compared: 'bits' (word-offset bit signatures of 002_…, one integer per sample, compared by AND) or 'words' (the words, compared by Webstemmer's letter-weighted common subsequence).",
    ),
    Setting(
        "TEMPLATES_SITE",
        "host",
        "How pages are grouped into sites: 'host', 'domain' (registered domain) or a dotted path to a function url -> site.",
    ),
    Setting(
        "TEMPLATES_BOOTSTRAP_PAGES",
        6,
        "Cold start: when a site is first seen, fetch up to this many of its linked pages before deciding (0 disables).",
    ),
    Setting(
        "TEMPLATES_BOOTSTRAP_TIMEOUT",
        30.0,
        "Seconds the first items of a site may wait for the bootstrap sample before deciding on what is there.",
    ),
    Setting(
        "TEMPLATES_MAX_HTML_BYTES",
        5_000_000,
        "Pages larger than this are cut to this size before parsing (the reason field says so).",
    ),
    Setting(
        "TEMPLATES_MAX_TAGS",
        100_000,
        "Pages with more tags ('<' characters) than this are not partitioned; the item is flagged instead.",
    ),
    Setting(
        "TEMPLATES_PARSE_WORKERS",
        None,
        "Child processes that parse pages off the crawl's thread (the HTML goes over a pipe, the parse runs on another core); None: one when this process may use more than one CPU; 0: parse in the crawl's thread. Pages that come while a worker starts (about 0.3 s) are parsed in the crawl's thread; a worker that dies is replaced, and its pages are parsed in the crawl's thread.",
    ),
    Setting(
        "TEMPLATES_LOGSTATS_INTERVAL",
        60.0,
        "Seconds between progress log lines (pages marked, template share, URL rules in force, requests rewritten and dropped); 0 turns them off.",
    ),
    Setting(
        "TEMPLATES_SNIPPET_CHARS",
        80,
        "Length of the text snippet stored on each pagelet of the item.",
    ),
    Setting(
        "TEMPLATES_STORE",
        "memory",
        "'memory' (in-process, default) or 'redis'; a dotted path to a store class also works.",
    ),
    Setting(
        "TEMPLATES_REDIS_URL",
        None,
        "Redis URL for the shared store; falls back to scrapy-redis's REDIS_URL when unset.",
    ),
    Setting("TEMPLATES_REDIS_PREFIX", "templates", "Prefix of every Redis key the store writes."),
    Setting(
        "TEMPLATES_MAX_OWNERS",
        256,
        "Global algorithm: owner pages remembered per pagelet fingerprint and site.",
    ),
    Setting("TEMPLATES_MAX_LINKS", 200, "Global algorithm: out-links remembered per page."),
    Setting(
        "TEMPLATES_STORE_RETRY",
        5.0,
        "Seconds between attempts to reach the shared store while it is down (pages are counted in process memory meanwhile and merged when it is back).",
    ),
    Setting(
        "TEMPLATES_STORE_JOURNAL",
        200_000,
        "Writes kept for replay while the shared store is down; past it the oldest are not merged (items still flow).",
    ),
    Setting(
        "TEMPLATES_STORE_FILE",
        "scrapy-templates.json",
        "File name, inside JOBDIR, where the memory store keeps its state between runs (used only when JOBDIR is set).",
    ),
    Setting(
        "TEMPLATES_RELEARN_INTERVAL",
        60.0,
        "Seconds between relearns of the URL rules and template models of sites with new evidence (0: only on new pages and at spider close).",
    ),
    Setting(
        "TEMPLATES_RELEARN_PAGES",
        500,
        "Relearn a site's template model once this process has marked this many new pages of it (0: off).",
    ),
    Setting(
        "TEMPLATES_SYNC_INTERVAL",
        1.0,
        "Seconds between checks for rules and models that other processes published (one read of a counter).",
    ),
    Setting(
        "TEMPLATES_LOCK_TTL",
        120.0,
        "Seconds a learner's per-site lock lasts; a learner that dies frees it after this long.",
    ),
    Setting(
        "TEMPLATES_PRUNE_PAGES",
        200,
        "Delete a site's fingerprint counters that stand at 1 each time it has counted this many more pages, and at spider close (0: never).",
    ),
    Setting(
        "TEMPLATES_PRUNE_SHARE",
        0.05,
        "Pruning also deletes counters below this share of the site's pages (at most half of TEMPLATES_MIN_SHARE; 0 or a share test of 0: only counters at 1).",
    ),
    Setting(
        "TEMPLATES_URL_RULES",
        True,
        "Learn URL-normalization rules per host during the crawl and apply them to requests (003_…).",
    ),
    Setting(
        "TEMPLATES_URL_SPIDER_MIDDLEWARE_PRIORITY",
        950,
        "Priority of the spider middleware that rewrites or drops requests before they are enqueued (above DepthMiddleware's 900, so depth, URL length and referer see the rewritten URL).",
    ),
    Setting(
        "TEMPLATES_URL_DOWNLOADER_MIDDLEWARE_PRIORITY",
        50,
        "Priority of the downloader middleware that covers redirects, retries and requests queued before a rule existed.",
    ),
    Setting(
        "TEMPLATES_URL_RULES_FILE",
        None,
        "A JSON file of rule sets (from `scrapy-templates rules learn`) in force from the start of the crawl.",
    ),
    Setting(
        "TEMPLATES_URL_SAMPLE_SIZE",
        5000,
        "URL samples (URL + content fingerprints) kept per host for learning, by reservoir sampling.",
    ),
    Setting(
        "TEMPLATES_URL_MIN_SAMPLES",
        20,
        "A host's rules are first learned once this many of its pages have been sampled.",
    ),
    Setting(
        "TEMPLATES_URL_LEARN_EVERY",
        25,
        "Relearn a host's rules after at most this many new samples (after a tenth of its sample while that is fewer: at least 5 samples, or 1 while the host has no rules yet). Each relearn that leaves the rules mapping every URL as before doubles this for the host (up to 64 times); one that changes them starts over.",
    ),
    Setting(
        "TEMPLATES_URL_SIMHASH_DISTANCE",
        3,
        "Pages whose simhashes differ in at most this many bits (0-3) are duplicates for learning.",
    ),
    Setting(
        "TEMPLATES_URL_MIN_SHARE",
        0.05,
        "Pattern tree: a value stays literal (salient) only when at least this share of a node's pages have it.",
    ),
    Setting(
        "TEMPLATES_URL_O_MIN",
        0.5,
        "o_min of 003_… §5.2.1: minimum overlap of two tree nodes for a candidate rule between them.",
    ),
    Setting(
        "TEMPLATES_URL_DUP_RATE_MIN",
        0.5,
        "Minimum duplicate rate of one tree node for a rule inside it (the s = t case of §5.2.1).",
    ),
    Setting(
        "TEMPLATES_URL_SIGMA_MIN",
        0.5,
        "sigma_min of Algorithm 3: share of duplicate pairs with equal values for a key-key mapping.",
    ),
    Setting(
        "TEMPLATES_URL_FAKE_MAX",
        0.5,
        "A mapped key whose values differ between duplicates more often than this is ignored, not replaced (§5.2.2).",
    ),
    Setting(
        "TEMPLATES_URL_MIN_SUPPORT",
        1,
        "A rule needs at least this many pairs of training URLs it makes equal (support pairs).",
    ),
    Setting(
        "TEMPLATES_URL_DEFER_PRIORITY",
        0,
        "Requests no rule rewrites, of a URL form that has shown duplicates, get this much lower priority so that their rule can be learned before they are fetched (0, the default: never; no gain measured on the demo crawl yet).",
    ),
    Setting(
        "TEMPLATES_URL_DEFER_RATE",
        0.25,
        "…when the duplicate rate of the URL's form in the training URLs is at least this.",
    ),
    Setting(
        "TEMPLATES_URL_FPR_MAX",
        0.0005,
        "fpr_max of §5.2.3: candidate rules above this false-positive rate on the training set are removed.",
    ),
)

DEFAULTS: dict[str, Any] = {s.name: s.default for s in SETTINGS}


def render_markdown() -> str:
    """The settings reference page (``docs/settings.md``), generated from :data:`SETTINGS`.

    Regenerate with ``python -m scrapy_templates.settings > docs/settings.md``.
    """
    lines = [
        "# Settings",
        "",
        "Every setting of scrapy-templates, with its default. The add-on applies the defaults at",
        '"addon" priority, so a value in your project or spider settings always wins.',
        "(Generated from `scrapy_templates/settings.py`.)",
        "",
        "| setting | default | what it does |",
        "|---|---|---|",
    ]
    for s in SETTINGS:
        doc = s.doc.replace("|", "\\|")
        lines.append(f"| `{s.name}` | `{s.default!r}` | {doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
