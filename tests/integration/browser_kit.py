"""What the dashboard's browser tests share: Debian's chromium driven by selenium through
/usr/bin/chromedriver (Selenium Manager kept offline), a free port, the page-ready wait and the
console's severe errors.

Importing this module skips the importing test module, with the reason, when chromium, chromedriver,
selenium or starlette is absent, except under CI=true, where CI installs them all
(scripts/install-system-deps.sh and the test extra) and an absence is an error.
"""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM, DRIVER = shutil.which("chromium") or "/usr/bin/chromium", "/usr/bin/chromedriver"
if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
    if os.environ.get("CI") == "true":  # CI installs both (install.sh test): absent there is a failure
        raise RuntimeError("CI=true but chromium / chromedriver are missing: run scripts/install-system-deps.sh")
    pytest.skip("no chromium / chromedriver (apt-get install chromium chromium-driver, or "
                "bash scripts/install-system-deps.sh)", allow_module_level=True)
pytest.importorskip("selenium", reason="selenium is in the test extra: pip install -e '.[test]'")
pytest.importorskip("starlette", reason="the dashboard extra is not installed")
os.environ["SE_OFFLINE"] = "true"  # never let Selenium Manager fetch a driver
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browser(offline: bool = False):
    """Headless chromium, 1400 x 1100, its console log kept. `offline`: every request that is not
    file:// goes to a dead proxy and the network is emulated offline (an exported page must need
    nothing from outside)."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1100"):
        opts.add_argument(a)
    if offline:
        opts.add_argument("--proxy-server=http://127.0.0.1:9")
        opts.add_argument("--proxy-bypass-list=<-loopback>")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    if offline:
        d.execute_cdp_cmd("Network.enable", {})
        d.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                              "downloadThroughput": 0, "uploadThroughput": 0})
    return d


def ready(d, timeout=30):
    """Wait until the page's app has drawn (app.js sets body[data-ready] = 1)."""
    WebDriverWait(d, timeout).until(lambda x: x.execute_script("return document.body.dataset.ready === '1'"))


def severe(d) -> list[str]:
    """The SEVERE messages of the browser console since it was last read."""
    return [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]


@contextlib.contextmanager
def served(root, env: dict):
    """`dashboard.py ROOT` on a free port with `env`, a headless browser beside it: yields
    (url, port, driver); the browser quits and the server stops on exit. A server that exits before
    it answers fails the test with its output."""
    port = free_port()
    srv = subprocess.Popen([sys.executable, str(ROOT / "dashboard.py"), str(root), "--port", str(port)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(url + "api/version", timeout=1)
                break
            except OSError:
                if srv.poll() is not None:
                    pytest.fail("dashboard.py exited: " + srv.stdout.read())
                time.sleep(0.2)
        d = browser()
        try:
            yield url, port, d
        finally:
            d.quit()
    finally:
        srv.terminate()
        srv.wait(10)
