"""The HTML report in a real browser (headless Chromium): what a reader sees on screen.

A probe script appended to case C's report measures, after the report's own script has run,
where the quote of the violated grounding check is and whether it is visible, focuses an
evidence highlight and presses Enter, and writes what it found into the DOM, which
``--dump-dom`` returns. Skipped, with the reason, where Chromium is not installed (CI
installs it in ``.ci/run``).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.render_cases import example
from unmask.render import html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed: browser tests skipped"
)
WIDTH, HEIGHT = 1366, 900

PROBE = """
<script>
(function () {
  var out = {};
  var check = document.querySelector('#findings article[data-check="grounding:j_cto~c_cto"]');
  var marks = check ? check.querySelectorAll("mark.q") : [];
  out.quotes = [];
  for (var i = 0; i < marks.length; i++) {
    var r = marks[i].getBoundingClientRect();
    var st = getComputedStyle(marks[i]);
    // an inline highlight may wrap: test the middle of its first line box
    var line = marks[i].getClientRects()[0];
    var hit = document.elementFromPoint(line.left + Math.min(line.width, 40) / 2,
                                        line.top + line.height / 2);
    out.quotes.push({
      text: marks[i].textContent, top: r.top, bottom: r.bottom, left: r.left, right: r.right,
      width: r.width, height: r.height, visibility: st.visibility, display: st.display,
      background: st.backgroundColor, onTop: hit === marks[i] || marks[i].contains(hit)
    });
  }
  out.viewport = [window.innerWidth, window.innerHeight];
  out.overall = document.getElementById("overall").textContent;
  var ev = document.querySelector("#src-context mark.ev");
  var panel = document.getElementById("inspector");
  out.panelHiddenBefore = panel.hidden;
  ev.focus();
  ev.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true}));
  out.focused = document.activeElement === ev;
  out.role = ev.getAttribute("role");
  out.panelHiddenAfter = panel.hidden;
  out.panelText = panel.textContent.replace(/\\s+/g, " ");
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def chromium(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        *args,
        url,
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


@pytest.fixture(scope="module")
def case_c_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    report, replay = example("case_c.json")
    path = tmp_path_factory.mktemp("html") / "case_c.html"
    path.write_text(html.render(report, replay), encoding="utf-8")
    return path


def test_violated_grounding_quote_is_visible_on_the_first_screen(case_c_page: Path, tmp_path):
    probed = tmp_path / "probed.html"
    page = case_c_page.read_text(encoding="utf-8")
    probed.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, probed.as_uri(), "--dump-dom").stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run"
    data = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert data["overall"] == "✗ VIOLATED"
    width, height = data["viewport"]
    quotes = data["quotes"]
    assert [q["text"] for q in quotes] == [
        "The context also supports that Alice is ACME's CTO, so the second claim is supported.",
        "Alice joined ACME in 2024.",
    ]
    for q in quotes:
        # on the first screen, not hidden, not covered by anything, and highlighted
        assert q["width"] > 0 and q["height"] > 0
        assert q["top"] >= 0 and q["bottom"] <= height, q
        assert q["left"] >= 0 and q["right"] <= width, q
        assert q["visibility"] == "visible" and q["display"] != "none"
        assert q["onTop"], q
        assert q["background"] not in ("rgba(0, 0, 0, 0)", "transparent")
    # keyboard: a focused highlight opens the panel with its annotations
    assert data["focused"] and data["role"] == "button"
    assert data["panelHiddenBefore"] is True and data["panelHiddenAfter"] is False
    assert "c_joined" in data["panelText"] and "c_cto" in data["panelText"]
    assert "says nothing about Alice's title" in data["panelText"]


def test_screenshot_has_the_laptop_size(case_c_page: Path, tmp_path: Path):
    shot = tmp_path / "case_c.png"
    chromium(tmp_path, case_c_page.as_uri(), f"--screenshot={shot}")
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (WIDTH, HEIGHT)


INDEX_PROBE = """
<script>
(function () {
  var out = {};
  function ids() {
    var r = document.querySelectorAll("#replay-table tbody tr");
    var v = [];
    for (var i = 0; i < r.length; i++) { if (!r[i].hidden) { v.push(r[i].cells[0].textContent); } }
    return v;
  }
  out.filtersShown = !document.getElementById("filters").hidden;
  out.before = ids();
  var head = document.querySelector("#replay-table thead th button");
  head.click();
  out.ascending = ids();
  out.sortState = document.querySelector("#replay-table thead th").getAttribute("aria-sort");
  head.click();
  out.descending = ids();
  var sel = document.getElementById("f-overall");
  sel.value = "VIOLATED";
  sel.dispatchEvent(new Event("change"));
  out.violated = ids();
  var text = document.getElementById("f-text");
  text.value = "-c";
  text.dispatchEvent(new Event("input"));
  out.both = ids();
  out.count = document.getElementById("f-count").textContent;
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def test_index_table_sorts_and_filters(tmp_path: Path):
    ok4 = dict.fromkeys(("verdict", "procedure", "coverage", "grounding"), "OK")
    rows = [
        {"id": i, "overall": o, "dimensions": ok4, "href": f"{i}.html"}
        for i, o in (("case-b", "VIOLATED"), ("case-a", "SATISFIED"), ("case-c", "VIOLATED"))
    ]
    page = html.render_index({"title": "t"}, rows).replace("</body>", INDEX_PROBE + "</body>")
    path = tmp_path / "index.html"
    path.write_text(page, encoding="utf-8")
    dom = chromium(tmp_path, path.as_uri(), "--dump-dom").stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run"
    data = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert data["filtersShown"] is True
    assert data["before"] == ["case-b", "case-a", "case-c"]
    assert data["ascending"] == ["case-a", "case-b", "case-c"]
    assert data["sortState"] == "ascending"
    assert data["descending"] == ["case-c", "case-b", "case-a"]
    assert data["violated"] == ["case-c", "case-b"]
    assert data["both"] == ["case-c"]
    assert data["count"] == "1 of 3 shown"


MEMBERS_PROBE = """
<script>
(function () {
  var out = {};
  var check = document.querySelector(
    '#findings article[data-check="grounding:cites(opened, p3)~>backs(p3, opened)"]');
  var dl = check ? check.querySelector("dl.members") : null;
  out.found = !!dl;
  if (dl) {
    var r = dl.getBoundingClientRect();
    var terms = dl.querySelectorAll("dt"), defs = dl.querySelectorAll("dd");
    out.pairs = [];
    for (var i = 0; i < terms.length; i++) {
      out.pairs.push([terms[i].textContent.replace(/\\s+/g, " "), defs[i].textContent]);
    }
    out.box = [r.top, r.bottom, r.left, r.right];
    out.visible = getComputedStyle(dl).visibility === "visible" && r.height > 0;
  }
  out.viewport = [window.innerWidth, window.innerHeight];
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""

CHECKS_PROBE = """
<script>
(function () {
  var out = {rows: {}};
  var rows = document.querySelectorAll("#checks-requirements tbody tr, #checks-grounding tbody tr");
  for (var i = 0; i < rows.length; i++) {
    var cells = rows[i].querySelectorAll("td");
    var v = [];
    for (var j = 0; j < cells.length; j++) {
      var links = cells[j].querySelectorAll("a");
      var ids = [];
      for (var k = 0; k < links.length; k++) { ids.push(links[k].textContent); }
      v.push(ids);
    }
    out.rows[rows[i].querySelector("th").textContent] = v;
  }
  var sec = document.getElementById("checks");
  out.visible = !!sec && sec.getBoundingClientRect().height > 0;
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _probe(tmp_path: Path, page: str, probe: str) -> dict:
    path = tmp_path / "probed.html"
    path.write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, path.as_uri(), "--dump-dom").stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run"
    import html as markup

    return json.loads(markup.unescape(found.group(1)))


@pytest.fixture(scope="module")
def cited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/rag/citations.jsonl imported and audited, with an HTML folder."""
    from click.testing import CliRunner

    from unmask.cli.main import main

    root = Path(__file__).resolve().parents[2] / "examples" / "rag"
    work = tmp_path_factory.mktemp("cited")
    run = CliRunner().invoke
    res = run(
        main,
        [
            "import",
            "structured",
            str(root / "citations.jsonl"),
            "--protocol",
            str(root / "citations.proto"),
            "--out",
            str(work / "replays"),
        ],
    )
    assert res.exit_code == 0, res.output
    res = run(
        main,
        [
            "audit",
            str(work / "replays"),
            "--out",
            str(work / "results.jsonl"),
            "--html",
            str(work / "report"),
        ],
    )
    assert res.exit_code in (0, 1, 3), res.output
    return work


def test_a_finding_shows_the_claim_and_passage_it_names_on_the_first_screen(
    cited: Path, tmp_path: Path
):
    from unmask.api import load

    replay = load(cited / "replays" / "c2.json")
    from unmask import check

    page = html.render(check(replay), replay)
    data = _probe(tmp_path, page, MEMBERS_PROBE)
    assert data["found"], "the grounding finding lost its members"
    assert data["pairs"] == [
        ["opened claim", "The bridge opened in 1932."],
        ["p3 passage", "Sydney is the capital of New South Wales."],
    ]
    top, bottom, left, right = data["box"]
    width, height = data["viewport"]
    assert data["visible"] and top >= 0 and bottom <= height and left >= 0 and right <= width


def test_the_index_has_a_table_per_requirement_and_grounding_family(cited: Path, tmp_path):
    page = (cited / "report" / "index.html").read_text(encoding="utf-8")
    data = _probe(tmp_path, page, CHECKS_PROBE)
    assert data["visible"]
    # violated, open, satisfied: each replay a link
    assert data["rows"]["passages_only"] == [[], [], ["c1", "c2"]]
    assert data["rows"]["cites(*,*) ~> backs(*,*)"] == [[], ["c1", "c2"], []]


NAMES_PROBE = """
<script>
(function () {
  var out = {lines: {}};
  var names = document.querySelectorAll("#checks-requirements tbody th code");
  for (var i = 0; i < names.length; i++) {
    // one line box per line the name takes
    out.lines[names[i].textContent] = names[i].getClientRects().length;
  }
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def test_a_requirement_name_is_not_broken_inside_its_column(tmp_path: Path):
    # promptfoo's long row ids fill the other columns; `score_agrees(a0)` broke before `)`
    from click.testing import CliRunner

    from tests.helpers import TEST_DATA
    from unmask.cli.main import main

    run = CliRunner().invoke
    src = TEST_DATA / "importers" / "promptfoo-0.121.20" / "results.json"
    res = run(main, ["import", "promptfoo", str(src), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    out = ["--out", str(tmp_path / "r.jsonl"), "--html", str(tmp_path / "h"), "--quiet"]
    assert run(main, ["audit", str(tmp_path / "r"), *out]).exit_code == 0
    page = (tmp_path / "h" / "index.html").read_text(encoding="utf-8")
    lines = _probe(tmp_path, page, NAMES_PROBE)["lines"]
    assert set(lines) == {f"score_agrees(a{i})" for i in range(4)}
    assert set(lines.values()) == {1}, lines
