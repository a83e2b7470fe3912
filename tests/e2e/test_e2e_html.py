#!/usr/bin/env python3
"""The HTML picture of the verdict, loaded in a real headless Chromium (issue 15).

For ring, tree, pipeline, several communicators, two faults, a hang and a healthy job the
simulator writes data, `analyze` writes the results file and `report FILE.h5 --html` draws
the page (one scenario draws it with `analyze --html` instead). Chromium, driven through
chromedriver (Debian's chromium, chromium-driver and python3-selenium, installed by
scripts/setup.sh), loads each page from the file system and the test checks in the DOM:

- the first culprit card names the true culprit (from the simulator's ground truth);
- the root's GPU is marked as a root in the cluster map;
- clicking a victim highlights exactly its chain from the results file, ending at its root;
- a screenshot of the page is not blank.
"""
import io
import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False

try:
    from PIL import Image
    HAVE_PIL = True
except ImportError:
    HAVE_PIL = False

BROWSER_MISSING = None
if not HAVE_SELENIUM or not HAVE_PIL:
    BROWSER_MISSING = "python3-selenium and python3-pil are needed (scripts/setup.sh installs them)"
elif not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    BROWSER_MISSING = "chromium and chromium-driver are needed (scripts/setup.sh installs them)"

SCENARIOS = {
    "ring": "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_gpu:13",
    "tree": "topology=tree,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=slow_link:11-12",
    "pipeline": "topology=pipeline,nodes=4,gpus=4,seqs=3,microbatches=4,bytes=2M,fault=slow_gpu:5",
    "multicomm": "topology=ring,comms=world+dp,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=slow_consumer:14",
    "two_faults": "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,fault=slow_gpu:1,fault=slow_link:7-8",
    "hang": "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=hang:6",
    "healthy": "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,fault=none",
}


def name_of(host, pid):
    return "%s:pid %d" % (host, pid)


class Page:
    """One scenario's page and what the results file says about it."""

    def __init__(self, key, via_analyze=False):
        spec = SCENARIOS[key]
        data = u.scratch("html-data-" + key)
        r = u.run(["mock", "--out", data, "--scenario", spec])
        assert r.rc == 0, r.describe()
        with open(os.path.join(data, "ground_truth.json")) as f:
            self.truth = json.load(f)
        out = u.scratch("html-out-" + key)
        self.h5 = os.path.join(out, "r.h5")
        self.path = os.path.join(out, "page.html")
        jsn = os.path.join(out, "r.json")
        cmd = ["analyze", "--shared", data, "--output", self.h5, "--json", jsn, "--quiet"]
        if via_analyze:
            cmd += ["--html", self.path]
        r = u.run(cmd, np=2)
        assert r.rc == 0, r.describe()
        if not via_analyze:
            r = u.run(["report", self.h5, "--html", self.path])
            assert r.rc == 0, r.describe()
        with open(jsn) as f:
            self.results = json.load(f)
        self.id_of = {(p["host"], p["pid"]): p["process_id"] for p in self.results["processes"]}
        chains = {}
        for c in self.results["chains"]:
            chains.setdefault(c["victim"], []).append((c["hop"], c["process_id"]))
        self.chains = {v: [p for _, p in sorted(hops)] for v, hops in chains.items()}

    def true_roots(self):
        return [(r["host"], r["pid"]) for r in self.truth["roots"]]


@unittest.skipIf(BROWSER_MISSING, BROWSER_MISSING or "")
class HtmlPageInChromium(unittest.TestCase):
    driver = None

    @classmethod
    def setUpClass(cls):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1000", "--hide-scrollbars", "--allow-file-access-from-files"):
            options.add_argument(arg)
        cls.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        cls.driver.set_page_load_timeout(60)

    @classmethod
    def tearDownClass(cls):
        if cls.driver:
            cls.driver.quit()

    def load(self, page):
        self.driver.get("file://" + page.path)
        ready = self.driver.execute_script("return document.body.dataset.ready")
        self.assertEqual(ready, "1", "the page's script did not finish: %s" % self.browser_errors())

    def browser_errors(self):
        try:
            return [e["message"] for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]
        except Exception:  # noqa: BLE001 - logs are a diagnostic only
            return []

    def first_card_name(self):
        return self.driver.find_element(By.CSS_SELECTOR, "#card-0 .name").text

    def assert_root_marked(self, page, host, pid):
        pid_id = page.id_of[(host, pid)]
        cell = self.driver.find_element(By.ID, "gpu-%d" % pid_id)
        self.assertIn("role-root", cell.get_attribute("class"))

    def assert_chain_highlight(self, page):
        # The victim with the longest chain: a click on its GPU highlights that chain.
        victim = max(page.chains, key=lambda v: (len(page.chains[v]), -v))
        chain = page.chains[victim]
        self.assertGreaterEqual(len(chain), 2)
        self.driver.find_element(By.CSS_SELECTOR, "#gpu-%d rect" % victim).click()
        shown = self.driver.execute_script("return document.body.dataset.selectedChain")
        self.assertEqual([int(x) for x in shown.split(",")], chain)
        marked = {int(e.get_attribute("data-pid")) for e in self.driver.find_elements(By.CSS_SELECTOR, "#map .gpu.on-chain")}
        self.assertEqual(marked, set(chain))
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#map polyline.chain.selected")), 1)
        info = self.driver.find_element(By.ID, "chain-info").text
        root = [p for p in page.results["processes"] if p["process_id"] == chain[-1]][0]
        self.assertTrue(info.endswith(name_of(root["host"], root["pid"]) + " (root)"), info)

    def assert_not_blank(self):
        image = Image.open(io.BytesIO(self.driver.get_screenshot_as_png())).convert("RGB")
        small = image.resize((200, 140))
        colours = set(small.getdata())
        not_white = sum(1 for px in small.getdata() if sum(px) < 3 * 235)
        self.assertGreater(len(colours), 20, "the screenshot has almost no colours")
        self.assertGreater(not_white / (200 * 140), 0.05, "the screenshot is almost all white")
        red = sum(1 for r, g, b in small.getdata() if r > 170 and g < 90 and b < 90)
        return red

    def check_faulty(self, key, via_analyze=False):
        page = Page(key, via_analyze)
        self.load(page)
        roots = page.true_roots()
        self.assertTrue(roots)
        first = self.first_card_name()
        self.assertIn(first, [name_of(h, p) for h, p in roots], "first card names %s, truth %s" % (first, roots))
        named = [(h, p) for h, p in roots if name_of(h, p) == first]
        self.assert_root_marked(page, *named[0])
        self.assert_chain_highlight(page)
        self.assertGreater(self.assert_not_blank(), 0, "no red (root) pixel in the screenshot")
        return page

    def test_ring_slow_gpu_drawn_by_analyze(self):
        page = self.check_faulty("ring", via_analyze=True)
        card = self.driver.find_element(By.ID, "card-0")
        self.assertEqual(card.get_attribute("data-class"), "gpu_producer")
        self.assertIn("nccl-culprit analyze --shared", card.text)  # the command that reproduces it
        self.assertNotEqual(card.find_element(By.CSS_SELECTOR, ".job-share").text, "?")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#edges tbody tr")
        self.assertEqual(len(rows), len(page.results["edges"]))

    def test_tree_slow_link(self):
        self.check_faulty("tree")
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#map .culprit-wire")), 1)

    def test_pipeline_slow_gpu(self):
        self.check_faulty("pipeline")

    def test_several_communicators(self):
        self.check_faulty("multicomm")

    def test_two_faults_both_named(self):
        page = self.check_faulty("two_faults")
        names = [e.text for e in self.driver.find_elements(By.CSS_SELECTOR, ".card .name")][:2]
        self.assertEqual(sorted(names), sorted(name_of(h, p) for h, p in page.true_roots()))

    def test_hang(self):
        self.check_faulty("hang")
        self.assertEqual(self.driver.find_element(By.ID, "card-0").get_attribute("data-class"), "hang")

    def test_healthy_job_names_nobody(self):
        page = Page("healthy")
        self.load(page)
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, ".card:not(.none)"), [])
        self.assertIn("No culprit", self.driver.find_element(By.ID, "no-culprit").text)
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "#map .gpu.role-root"), [])
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#map .gpu")), len(page.results["processes"]))
        self.assert_not_blank()

    def test_table_sorts_by_a_phase(self):
        page = Page("ring")
        self.load(page)
        header = self.driver.find_elements(By.CSS_SELECTOR, "#edges thead th")[10]  # RecvWait
        self.assertEqual(header.text, "RecvWait")
        header.click()
        values = [float(td.get_attribute("data-v")) for td in
                  self.driver.find_elements(By.CSS_SELECTOR, "#edges tbody tr td:nth-child(11)")]
        self.assertEqual(values, sorted(values))
        header.click()
        values = [float(td.get_attribute("data-v")) for td in
                  self.driver.find_elements(By.CSS_SELECTOR, "#edges tbody tr td:nth-child(11)")]
        self.assertEqual(values, sorted(values, reverse=True))


class HtmlPageFile(unittest.TestCase):
    """What holds without a browser: one file, nothing fetched, the same page either way."""

    def test_self_contained_and_same_from_analyze_and_report(self):
        page = Page("ring", via_analyze=True)
        with open(page.path, encoding="utf-8") as f:
            text = f.read()
        for external in ("src=\"http", "href=\"http", "<link ", "@import", "url(http"):
            self.assertNotIn(external, text)
        again = os.path.join(os.path.dirname(page.path), "again.html")
        r = u.run(["report", page.h5, "--html", again])
        self.assertEqual(r.rc, 0, r.describe())
        with open(again, encoding="utf-8") as f:
            self.assertEqual(f.read(), text)

    def test_unwritable_path_is_one_line_naming_it(self):
        page = Page("healthy")
        target = os.path.join(u.scratch("html-bad"), "no-such-dir", "page.html")
        r = u.run(["report", page.h5, "--html", target])
        self.assertEqual(r.rc, 1, r.describe())
        lines = u.product_stderr_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.describe())
        self.assertIn(target, lines[0])


if __name__ == "__main__":
    sys.exit(u.main())
