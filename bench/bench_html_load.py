#!/usr/bin/env python3
"""Load time of the HTML page in headless Chromium: what a user waits for after opening it.

    bench/bench_html_load.py PAGE.html [PAGE.html ...]     (e.g. the page bench_html writes)

For each page, best of 3 loads: the wall time of the load (chromedriver returns after the
load event), the browser's own navigation timing (loadEventEnd) and the moment the page's
script had drawn the chains and was ready (its "culprit-ready" performance mark). Needs
Debian's chromium, chromium-driver and python3-selenium (scripts/setup.sh installs them).
"""
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def main(pages):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        for page in pages:
            best = None
            for _ in range(3):
                driver.get("about:blank")
                started = time.perf_counter()
                driver.get("file://" + os.path.abspath(page))
                wall = time.perf_counter() - started
                load, ready = driver.execute_script(
                    "var n = performance.getEntriesByType('navigation')[0];"
                    "var m = performance.getEntriesByName('culprit-ready');"
                    "return [n ? n.loadEventEnd : -1, m.length ? m[0].startTime : -1];")
                if best is None or wall < best[0]:
                    best = (wall, load / 1000, ready / 1000)
            print("bench_html_load: %s (%.2f MB): load %.2f s wall, loadEventEnd %.2f s, script ready %.2f s"
                  % (page, os.path.getsize(page) / 1e6, best[0], best[1], best[2]))
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
