"""The report in a real browser: headless Chromium (the distribution's package) driven by
Playwright, offline. Skips, saying why, only where no Chromium or no Playwright can be had."""

from __future__ import annotations

import shutil

import pytest

from termrl.report import write_report

SECTIONS = ("headline", "rewards", "compute", "hacking", "failures", "behaviour", "trajectories")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine: apt-get install -y chromium (scripts/setup.sh does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: pip install playwright (termrl's dev extra has it)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def open_report(browser, path):
    context = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    problems = []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: problems.append(f"request: {r.url}") if not r.url.startswith(("file:", "data:", "blob:")) else None)
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=60000)
    return page, problems


@pytest.mark.parametrize("which", [["oracle", "nop"], ["train"], ["quickstart"], ["audit", "hacky"]])
def test_reports_render_offline_with_every_section(browser, runs, tmp_path, which):
    path = write_report([runs[w] for w in which], tmp_path / "report.html")
    page, problems = open_report(browser, path)
    assert all(page.is_visible(f"section#{s}") for s in SECTIONS)
    plots = page.eval_on_selector_all(".plot", "els => els.map(e => !!e.querySelector('.main-svg'))")
    assert plots and all(plots)  # every plotly figure drew
    page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
    assert problems == []


def test_a_trajectory_opens_on_click_and_filters_narrow_the_table(browser, runs, tmp_path):
    path = write_report([runs["oracle"], runs["nop"]], tmp_path / "report.html")
    page, problems = open_report(browser, path)
    assert page.inner_text("#f-count") == "8 of 8 episodes"
    first = page.locator("#episodes tbody tr").first
    episode = first.locator("td").nth(3).inner_text()
    first.click()
    assert page.inner_text("#episode-title") == episode
    detail = page.inner_text("#episode-detail")
    assert "instruction" in detail and "step 1" in detail and "reward breakdown" in detail
    page.select_option("#f-status", "passed")
    assert page.inner_text("#f-count") == "4 of 8 episodes" and page.locator("#episodes tbody tr").count() == 4
    page.select_option("#f-status", "all")
    page.fill("#f-text", "zzz-no-such-text")
    assert page.inner_text("#f-count") == "0 of 8 episodes"
    page.fill("#f-text", "")
    # an example link elsewhere in the page opens its episode in the viewer
    page.locator("#failures a.ep").first.click()
    assert page.inner_text("#episode-title").startswith(("py-", "shell-", "data-", "build-", "c-", "debug-", "git-"))
    page.screenshot(path=str(tmp_path / "trajectory.png"))
    assert problems == []
