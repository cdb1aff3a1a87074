"""Finding every copy of a package on a search path, without importing it."""

from __future__ import annotations

from pathlib import Path

from workbench.analysis.pkgscan import (
    duplicates_text,
    find_origin,
    label_entry,
    numpy_abi_verdict,
    package_report,
    scan_entry,
    version_tuple,
)


def layout(site: Path, name: str, version: str, package: bool = True, dist: bool = True) -> None:
    """Files an install leaves in a site directory (the package refuses import)."""
    site.mkdir(parents=True, exist_ok=True)
    if dist:
        info = site / ("%s-%s.dist-info" % (name, version))
        info.mkdir()
        (info / "METADATA").write_text("Name: %s\nVersion: %s\nRequires-Dist: numpy>=1.20\n" % (name, version))
    if package:
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("raise ImportError('layout only')\n")
        (site / name / "version.py").write_text("__version__ = '%s'\n" % version)


def test_user_site_copy_wins_over_conda_copy_and_both_are_listed(tmp_path):
    user, conda = tmp_path / "user-site", tmp_path / "conda-site"
    layout(user, "mindspore", "2.4.10")
    layout(conda, "mindspore", "2.3.1")
    paths = [str(user), str(conda)]
    labels = {str(user): "user site", str(conda): "site-packages"}
    rep = package_report("mindspore", paths, labels, find_origin("mindspore", paths), "2.4.10")
    assert (rep["found"], rep["version"], rep["label"], rep["duplicates"]) == (True, "2.4.10", "user site", True)
    assert rep["path"] == str(user / "mindspore")
    assert [(c["label"], c["wins"], [d["version"] for d in c["dists"]]) for c in rep["copies"]] == [
        ("user site", True, ["2.4.10"]),
        ("site-packages", False, ["2.3.1"]),
    ]
    assert rep["requires"] == ["numpy>=1.20"]
    text = duplicates_text(rep)
    assert text.startswith("WINS: 2.4.10 (package, user site)") and "2.3.1 (package, site-packages)" in text


def test_stale_dist_info_first_on_the_path_does_not_decide_the_version(tmp_path):
    stale, real = tmp_path / "stale", tmp_path / "real"
    layout(stale, "mindspore", "2.3.1", package=False)
    layout(real, "mindspore", "2.4.10")
    paths = [str(stale), str(real)]
    rep = package_report("mindspore", paths, {}, find_origin("mindspore", paths), "2.3.1")
    assert rep["version"] == "2.4.10" and rep["metadata_version"] == "2.3.1" and rep["duplicates"]
    assert [c["wins"] for c in rep["copies"]] == [False, True]


def test_package_without_dist_info_takes_its_version_from_version_py(tmp_path):
    site = tmp_path / "src"
    layout(site, "mindnlp", "0.4.1", dist=False)
    rep = package_report("mindnlp", [str(site)], {}, find_origin("mindnlp", [str(site)]))
    assert rep["version"] == "0.4.1" and rep["version_from"].endswith("version.py") and not rep["duplicates"]


def test_missing_package_and_lookalike_names(tmp_path):
    site = tmp_path / "site"
    layout(site, "textual_serve", "1.1.3")
    assert scan_entry(str(site), "textual") == {"entry": str(site), "module": None, "dists": []}
    rep = package_report("textual", [str(site)], {}, find_origin("textual", [str(site)]))
    assert (rep["found"], rep["version"], rep["copies"], rep["duplicates"]) == (False, None, [], False)
    assert scan_entry(str(tmp_path / "absent"), "numpy")["dists"] == []


def test_single_module_file_and_normalised_dist_name(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "mindspore_lite.py").write_text("")
    info = site / "MindSpore_Lite-2.2.11.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Version: 2.2.11\n")
    found = scan_entry(str(site), "mindspore_lite")
    assert found["module"] == str(site / "mindspore_lite.py") and found["dists"][0]["version"] == "2.2.11"


def test_labels():
    assert label_entry("/u", "/u", ["/s"], ["/p"]) == "user site"
    assert label_entry("/p", "/u", ["/s"], ["/p"]) == "PYTHONPATH"
    assert label_entry("/s/", None, ["/s"], []) == "site-packages"
    assert label_entry("/x", None, [], []) == "other"


def test_numpy_rule():
    fail = numpy_abi_verdict("2.4.10", "2.1.0", "/usr/bin/python3.9")
    assert fail["status"] == "observed-fail" and fail["hint"] == "/usr/bin/python3.9 -m pip install 'numpy<2'"
    assert numpy_abi_verdict("2.10.0", "2.0.0")["status"] == "observed-fail"
    assert numpy_abi_verdict("2.10.0", "1.26.4")["status"] == "observed-pass"
    assert numpy_abi_verdict("2.11.0", "2.1.0")["status"] == "not-run"  # not known yet: the probes decide
    assert numpy_abi_verdict(None, "2.1.0")["status"] == "not-run"
    assert numpy_abi_verdict("2.4.10", None)["status"] == "observed-fail"
    assert version_tuple("2.6.0rc1") == (2, 6, 0) and version_tuple("x") is None


def test_a_mindspore_dev_build_is_the_mindspore_package(tmp_path):
    site = tmp_path / "site"
    layout(site, "mindspore", "2.5.0.dev20250202", dist=False)
    info = site / "mindspore_dev-2.5.0.dev20250202.dist-info"  # as pip installs mindspore-dev
    info.mkdir()
    (info / "METADATA").write_text("Name: mindspore-dev\nVersion: 2.5.0.dev20250202\n")
    found = scan_entry(str(site), "mindspore")
    assert found["module"] == str(site / "mindspore")
    assert [d["version"] for d in found["dists"]] == ["2.5.0.dev20250202"]
    assert scan_entry(str(site), "numpy")["dists"] == []  # the alias is MindSpore's only
