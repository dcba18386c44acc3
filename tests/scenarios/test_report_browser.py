"""The HTML report as a person sees it: built by the real playbooks from stand-in venvs, opened in headless Chromium.

1. repair.yml with cuda_venv_report_dir on three hosts: `gutted` (repaired by a swap), `partial` (its wheelhouse lacks
   nvidia-nccl-cu12: batch 2 is rolled back) and `no-venv` (a path with no venv: failed). Graphs by Graphviz dot.
2. The built-in layout: the gutted venv's facts from cuda_venv_facts, the report from cuda_venv_html_report with
   layout builtin (check mode first: nothing written).
Each asserts on the DOM Chromium rendered, and keeps the report and screenshots under build/report-test/ for people
to look at.
"""

import glob
import json
import os
import shutil

import pytest

from browser_tools import dump_dom, parse, screenshot
from scenario_tools import ROOT, run_module
from test_playbooks import CACHE, run_playbook, write_inventory
from tests.standin import build_scenario

KEEP = os.path.join(ROOT, "build", "report-test")
CUDNN_MESSAGE = "libcudnn.so.9: cannot open shared object file: No such file or directory"


def keep(report_dir, name):
    """Copy the report under build/report-test/NAME, for people to open."""
    dest = os.path.join(KEEP, name)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(str(report_dir), dest)
    return dest


def broken_edges(svg):
    """{soname: text} of the edges drawn broken (dashed) in one graph."""
    found = {}
    for edge in svg.find_all("g", classes=("edge", "broken")):
        paths = edge.find_all("path")
        assert paths and all("stroke-dasharray" in p.attrs for p in paths), edge.attrs
        # the built-in drawing names the soname in data-soname, dot in the link's tooltip ("X needs SONAME: ...")
        title = " ".join(a.attrs.get("xlink:title", "") for a in edge.find_all("a"))
        soname = edge.attrs.get("data-soname") or title.split(" needs ", 1)[1].split(":", 1)[0]
        found[soname] = drawn_text(edge)
    return found


def graph_of(dom, section):
    """The <svg> drawn under the heading with id SECTION (before / after)."""
    svgs = [s for s in dom.find_all("svg") if s.attrs.get("id") == section]
    assert len(svgs) == 1, [s.attrs.get("id") for s in dom.find_all("svg")]
    return svgs[0]


def drawn_text(element):
    """The text drawn inside an SVG element (its <text> elements; not the tooltips)."""
    return " ".join(t.text() for t in element.find_all("text"))


def missing_boxes(svg):
    return sorted(drawn_text(n) for n in svg.find_all("g", classes=("node", "missing")))


@pytest.mark.slow
def test_repair_playbook_writes_the_report_chromium_renders(tmp_path):
    gutted = build_scenario("gutted", tmp_path / "gutted", cache=CACHE)
    partial = build_scenario("partial-restore", tmp_path / "partial", cache=CACHE)
    [nccl] = glob.glob(os.path.join(str(partial.wheelhouse), "nvidia_nccl_cu12-*.whl"))
    os.unlink(nccl)
    inventory = write_inventory(tmp_path, {"gutted": gutted, "partial": partial})
    with open(inventory, encoding="utf-8") as handle:
        data = json.load(handle)
    data["all"]["hosts"]["no-venv"] = dict(data["all"]["hosts"]["gutted"], venv_repair_path=str(tmp_path / "nothing"))
    with open(inventory, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    report = tmp_path / "report"

    rc, output, recap, _stats = run_playbook(tmp_path, inventory, "-e", "cuda_venv_report_dir=%s" % report)
    assert rc == 2, output
    assert {h: line.split(" - ")[0] for h, line in recap.items()} == {
        "gutted": "swapped", "partial": "rolled back", "no-venv": "failed"}, recap
    assert "HTML report: %s/index.html (Graphs laid out by Graphviz dot.)" % report in output
    assert sorted(os.listdir(str(report))) == ["host-gutted.html", "host-no-venv.html", "host-partial.html", "index.html"]
    kept = keep(report, "repair-playbook")
    profile = tmp_path / "chromium"

    # The fleet page: every host, its outcome, a link to its page that exists.
    fleet = parse(dump_dom(os.path.join(kept, "index.html"), profile))
    rows = {r.attrs["data-host"]: r for r in fleet.find_all("tr", classes=("host",))}
    assert {h: r.attrs["data-status"] for h, r in rows.items()} == {
        "gutted": "swapped", "partial": "rolled back", "no-venv": "failed"}
    for host, row in rows.items():
        [link] = row.find_all("a")
        assert link.attrs["href"] == "host-%s.html" % host and link.text() == host
        assert os.path.isfile(os.path.join(kept, link.attrs["href"]))
    assert "12" == rows["gutted"].find_all("td")[2].text()  # CUDA 12 only, after the repair
    assert rows["gutted"].find_all("td")[4].text() == "9.10.2 / ==9.10.2.21"  # the cuDNN torch pins, loaded
    assert "No matching distribution found for nvidia-nccl-cu12==2.27.5" in rows["partial"].text()
    assert rows["gutted"].find_all("td")[5].text() == "-"  # no lock declared
    assert rows["gutted"].find_all("td")[7].text().startswith("broken: 10 error(s): RECORD_MISSING_FILES, SONAME_UNRESOLVED")
    assert rows["no-venv"].find_all("td")[7].text() == "-"  # never diagnosed
    screenshot(os.path.join(kept, "index.html"), os.path.join(KEEP, "fleet.png"), profile, size="1400,500")

    # The gutted host's page: before the repair, libcudnn.so.9's edge is broken with the loader's message.
    page = parse(dump_dom(os.path.join(kept, "host-gutted.html"), profile))
    before = graph_of(page, "before")
    assert "dot" in before.classes
    broken = broken_edges(before)
    assert sorted(broken) == ["libcudnn.so.9", "libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"]
    assert broken["libcudnn.so.9"] == CUDNN_MESSAGE
    assert missing_boxes(before) == [
        "libcudnn.so.9 NOT FOUND should come from nvidia-cudnn-cu12",
        "libcusparseLt.so.0 NOT FOUND should come from nvidia-cusparselt-cu12",
        "libnccl.so.2 NOT FOUND should come from nvidia-nccl-cu12",
        "libnvshmem_host.so.3 NOT FOUND should come from nvidia-nvshmem-cu12"]
    after = graph_of(page, "after")
    assert broken_edges(after) == {} and missing_boxes(after) == []
    batches = [(r.attrs["data-result"], r.find_all("td")[1].text()) for r in page.find_all("tr", classes=("batch",))]
    assert batches == [("committed", "remove contaminants nothing kept needs"),
                       ("committed", "remove colliding wheels, then reinstall what they overwrote or deleted")]
    [compare] = [t for t in page.find_all("table") if t.attrs.get("id") == "compare"]
    rows = {r.find_all("th")[0].text(): [d.text() for d in r.find_all("td")] for r in compare.find_all("tr")[1:]}
    assert rows["verdict"][1] == "healthy" and rows["verdict"][0].startswith("broken: 10 error(s)")
    assert rows["CUDA"] == ["12 + 13 (mixed)", "12"]
    assert rows["cuDNN loaded / pinned"] == ["none / ==9.10.2.21", "9.10.2 / ==9.10.2.21"]
    assert rows["import"][0] == "fails: ImportError: " + CUDNN_MESSAGE
    screenshot(os.path.join(kept, "host-gutted.html"), os.path.join(KEEP, "host-gutted.png"), profile)

    # The rolled-back host's page: the failed batch, with why (strategy swap: the copy with the batch before it
    # is discarded whole, so the live venv is as it was and the page shows the batch that failed).
    page = parse(dump_dom(os.path.join(kept, "host-partial.html"), profile))
    results = [r.attrs["data-result"] for r in page.find_all("tr", classes=("batch",))]
    assert results == ["rolled back"]
    assert "libnccl.so.2" in broken_edges(graph_of(page, "before"))
    assert [s.attrs.get("id") for s in page.find_all("svg") if s.attrs.get("id") in ("before", "after")] == ["before"]


@pytest.mark.slow
def test_builtin_layout_report_of_the_gutted_venv(tmp_path):
    gutted = build_scenario("gutted", tmp_path / "gutted", cache=CACHE)
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", {"path": str(gutted.venv), "gpu": False})
    assert rc == 0, output
    facts = result["ansible_facts"]["cuda_venv"]
    record = {"host": "gutted", "path": str(gutted.venv), "outcome": {"status": "needs repair", "reason": facts["summary"]},
              "before": facts, "plan": None, "batches": [], "after": None}
    report = tmp_path / "report"
    args = {"dest": str(report), "reports": {"gutted": record, "<b>odd & host</b>": {}}, "layout": "builtin",
            "title": "stand-in <fleet>"}

    # bad input: named, nothing written
    for dest, message in (("relative/report", "dest must be an absolute path on the controller, got 'relative/report'"),
                          (str(tmp_path / "gutted" / "venv" / "pyvenv.cfg"),
                           "dest %s exists and is not a folder" % (tmp_path / "gutted" / "venv" / "pyvenv.cfg"))):
        rc, result, output = run_module(tmp_path, "cuda_venv_html_report", dict(args, dest=dest))
        assert rc != 0 and result["msg"] == message, output
    rc, result, output = run_module(tmp_path, "cuda_venv_html_report", dict(args, layout="fancy"))
    assert rc != 0 and "layout" in result["msg"] and "fancy" in result["msg"], output

    rc, result, output = run_module(tmp_path, "cuda_venv_html_report", args, check=True)
    assert rc == 0 and result["changed"] is True, output
    assert not report.exists()
    rc, result, output = run_module(tmp_path, "cuda_venv_html_report", args)
    assert rc == 0 and result["changed"] is True, output
    assert result["layout"] == "Graphs laid out by the built-in layered layout (layout builtin asked for)."
    assert result["pages"] == ["host-_b_odd___host__b_.html", "host-gutted.html", "index.html"]
    rc, result, output = run_module(tmp_path, "cuda_venv_html_report", args)
    assert rc == 0 and result["changed"] is False, output
    kept = keep(report, "builtin-layout")
    profile = tmp_path / "chromium"

    fleet = parse(dump_dom(os.path.join(kept, "index.html"), profile))
    assert fleet.find_all("h1")[0].text() == "stand-in <fleet>"
    rows = {r.attrs["data-host"]: r.attrs["data-status"] for r in fleet.find_all("tr", classes=("host",))}
    assert rows == {"gutted": "needs repair", "<b>odd & host</b>": "not run"}
    assert not fleet.find_all("b") or all(b.parent.tag == "p" for b in fleet.find_all("b"))  # no markup from names

    page = parse(dump_dom(os.path.join(kept, "host-gutted.html"), profile))
    before = graph_of(page, "before")
    assert "layered" in before.classes
    broken = broken_edges(before)
    assert broken["libcudnn.so.9"] == CUDNN_MESSAGE
    assert sorted(broken) == ["libcudnn.so.9", "libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"]
    codes = {r.attrs["data-code"] for r in page.find_all("tr", classes=("finding",))}
    assert codes == {f["code"] for f in facts["findings"]}
    screenshot(os.path.join(kept, "host-gutted.html"), os.path.join(KEEP, "host-gutted-builtin.png"), profile)
