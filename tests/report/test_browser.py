"""The report opened in headless Chromium (Debian's ``chromium``) from ``file://``: the key
elements render, navigation works without script, and script injected by a crawled page
never runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Dialog, Page, sync_playwright

from scrapy_templates.report.html import render_report, write_report
from scrapy_templates.report.items import record_from_item, summarise
from tests.report.sample_items import HOSTILE, marked, shop_items

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("chromium is not installed (Debian: apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def dialogs() -> list[str]:
    """Messages of every alert, confirm or prompt the page opened."""
    return []


@pytest.fixture
def page(browser: Browser, dialogs: list[str]) -> Iterator[Page]:
    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("dialog", dismiss)
    yield page
    page.close()


@pytest.fixture
def report(tmp_path: Path) -> Path:
    hostile = marked("http://shop.test/evil", HOSTILE, title=HOSTILE, share=0.6)
    hostile["pagelets"][1]["path"] = 'body/main/p"><img src=x onerror="alert(3)">'
    items = [*shop_items(), hostile]
    records = [record_from_item(item, n) for n, item in enumerate(items, 1)]
    path = tmp_path / "report.html"
    write_report(path, render_report(summarise(records), source="items.jsonl"))
    return path


def test_the_browser_here_does_run_inline_handlers(
    page: Page, dialogs: list[str], tmp_path: Path
) -> None:
    """The control for the test below: the same payloads in a page without escaping or
    Content-Security-Policy do run, so their absence in the report means something."""
    control = tmp_path / "control.html"
    body = HOSTILE + '<img src=y onerror="alert(3)">'
    control.write_text(f"<html><head><title>control</title></head><body>{body}</body></html>")
    page.goto(control.as_uri())
    page.wait_for_function("document.title !== 'control'")
    page.wait_for_timeout(300)
    assert page.title() in ("pwned", "1") and dialogs == ["3"]


def test_report_renders_navigates_and_runs_nothing(
    page: Page, dialogs: list[str], report: Path, tmp_path: Path
) -> None:
    page.goto(report.as_uri())
    index = page.locator("#index")
    assert index.is_visible()
    assert page.locator("#index tr").count() == 3  # header, shop.test, blog.test
    page.screenshot(path=str(tmp_path / "index.png"))

    page.click("#index >> text=shop.test")
    site = page.locator("#site-0")
    assert site.is_visible() and not index.is_visible()
    assert site.locator(".chart svg rect").count() == 4
    assert site.locator("table.templates").is_visible()
    assert "Shop Home Cart" in site.locator("table.templates").inner_text()

    page.click("#site-0 >> text=http://shop.test/evil")
    view = page.locator(".view.page:target")
    assert view.is_visible() and not site.is_visible()
    shaded = view.locator(".pagelet.template")
    assert shaded.count() == 2
    assert shaded.first.evaluate("e => getComputedStyle(e).backgroundColor") != "rgb(255, 255, 255)"
    assert '<script>document.title="pwned"</script>' in view.locator("h1").inner_text()
    assert 'onerror="alert(3)"' in view.inner_text()
    screenshot = tmp_path / "page-view.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    page.wait_for_timeout(300)  # an error handler of a broken image would have fired by now
    assert page.evaluate("document.querySelectorAll('script, img, iframe').length") == 0
    assert page.title().startswith("scrapy-templates report")
    assert dialogs == []

    page.click(".view.page:target >> text=shop.test")
    assert site.is_visible()
