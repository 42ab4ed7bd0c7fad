"""The landing page's selector, clicked through in real headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium) against a site served on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.integration.conftest import DemoBuild, retag, wheelfarm
from tests.roots import REPO
from wheelfarm.core.commands import hash_commands, install_commands, uv_project
from wheelfarm.index.entries import Covered, WheelEntry
from wheelfarm.index.serve import served
from wheelfarm.index.site import build_site

pytestmark = [pytest.mark.integration, pytest.mark.browser]


CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


OTHER_CP = "cp312" if CP != "cp312" else "cp313"


CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if CHROMIUM is None or DRIVER is None:
        pytest.fail("chromium and chromedriver are needed (scripts/test.sh installs them with apt)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1200,1400",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def site(demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory) -> Path:
    house = tmp_path_factory.mktemp("house")
    shutil.copy(demo_build.wheel, house)
    shutil.copy(demo_build.wheel.with_name(demo_build.wheel.name + ".build.json"), house)
    retag(demo_build.wheel, house, label="cu126torch2.14", python=CP)
    retag(demo_build.wheel, house, label="cu130torch2.13", python=OTHER_CP)
    out = tmp_path_factory.mktemp("site")
    wheelfarm("index", "--wheelhouse", house, "--out", out)
    return out


def _choose(driver: object, select_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_value(value)  # type: ignore[attr-defined]


def test_selector_gives_the_exact_commands(browser: object, site: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    with served(site) as url:
        driver.get(url)  # type: ignore[attr-defined]
        WebDriverWait(driver, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
        )
        text = lambda i: driver.find_element(By.ID, i).text  # type: ignore[attr-defined]  # noqa: E731
        other_py = f"3.{OTHER_CP[3:]}"
        _choose(driver, "package", "wheelfarm-demo")
        _choose(driver, "platform", "linux_x86_64")
        _choose(driver, "python", other_py)
        torch = "https://download.pytorch.org/whl/cu130"  # torch.yaml's, through farm.js
        assert text("pip-command") == (
            f'pip install "wheelfarm-demo==0.1.0+cu130torch2.13" --extra-index-url '
            f"{url}cu130/torch2.13/ --extra-index-url {torch}"
        )
        assert "installs PyTorch's cu130 build of torch 2.13" in text("torch-note")
        here_py = f"3.{CP[3:]}"
        _choose(driver, "python", here_py)
        _choose(driver, "torch", "2.14")
        _choose(driver, "cuda", "cu126")
        # the commands `wheelfarm farm` prints, which tests/integration/test_front_door.py runs
        cell, torch = f"{url}cu126/torch2.14/", "https://download.pytorch.org/whl/cu126"
        version = "0.1.0+cu126torch2.14"
        printed = install_commands("wheelfarm-demo", version, cell, torch)
        assert text("pip-command") == printed.pip
        assert text("uv-command") == printed.uv
        # the page's uv project and hash mode are the Python ones, which
        # tests/integration/test_commands_torch.py runs
        assert text("uv-pinned") == uv_project(
            "wheelfarm-demo", version, cell, ("cu126", "2.14"), torch
        )
        assert text("hash-command") == hash_commands("wheelfarm-demo", version, cell, torch)
        link = driver.find_element(By.CSS_SELECTOR, "#direct a")  # type: ignore[attr-defined]
        assert link.get_attribute("href").startswith(
            f"{url}files/wheelfarm_demo-0.1.0%2Bcu126torch2.14-"
        )
        shot = Path(os.environ.get("WHEELFARM_SCREENSHOTS", tmp_path)) / "selector.png"
        driver.save_screenshot(str(shot))  # type: ignore[attr-defined]


def test_a_local_site_lists_its_own_cells_and_no_plan(browser: object, site: Path) -> None:
    """A wheelhouse's site: a row per cell it holds, and no chart of the farm's plan."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    with served(site) as url:
        driver.get(url)  # type: ignore[attr-defined]
        WebDriverWait(driver, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
        )
        rows = driver.find_elements(By.CSS_SELECTOR, "#held tbody tr")  # type: ignore[attr-defined]
        cells = {tuple(td.text for td in r.find_elements(By.TAG_NAME, "td")) for r in rows}
        here_py, other_py = f"3.{CP[3:]}", f"3.{OTHER_CP[3:]}"
        assert cells == {
            (
                "wheelfarm-demo",
                f"0.1.0+{label}",
                "Linux x86_64",
                py,
                label[10:],
                label[:5],
                "kernels not run on a GPU",
                "none (not from Releases)",
            )
            for label, py in (
                ("cu130torch2.14", here_py),
                ("cu126torch2.14", here_py),
                ("cu130torch2.13", other_py),
            )
        }
        assert driver.find_element(By.ID, "coverage").get_attribute("hidden") is not None  # type: ignore[attr-defined]
        assert not (site / "coverage.svg").exists()


def test_a_farm_sites_rows_link_their_attestations(browser: object, tmp_path: Path) -> None:
    """A site of Releases assets: each row links the wheel's attestation (GitHub's API, by
    sha256) and the page prints the `gh attestation verify` command."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    release = "https://github.com/octo/farm/releases/download/flash-attn-v2.8.3/"
    good = "flash_attn-2.8.3+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"
    cell = Covered(cuda="cu130", torch="2.14", python="3.12", platform="linux_x86_64")
    entries = [WheelEntry(filename=good, url=release + quote(good), sha256="ab" * 32, size=10,
                          covers=(cell,))]  # fmt: skip
    build_site(entries, tmp_path / "site", templates=REPO.templates)
    driver = browser
    with served(tmp_path / "site") as url:
        driver.get(url)  # type: ignore[attr-defined]
        WebDriverWait(driver, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
        )
        text = lambda i: driver.find_element(By.ID, i).text  # type: ignore[attr-defined]  # noqa: E731
        assert text("verify-command") == f"gh attestation verify {good} --repo octo/farm"
        api = f"https://api.github.com/repos/octo/farm/attestations/sha256:{'ab' * 32}"
        link = driver.find_element(By.CSS_SELECTOR, "#held tbody tr td a")  # type: ignore[attr-defined]
        assert link.get_attribute("href") == api and link.text == "attestation"
        assert driver.find_element(By.CSS_SELECTOR, "#attestation a").get_attribute("href") == api  # type: ignore[attr-defined]
