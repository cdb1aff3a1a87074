"""The Reproduce and Files sections of report.md."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from workbench.record.markdown import appendix as ax
from workbench.record.markdown.tables import table

PACKAGE = "reproduce"
LOCK = "reproduce/requirements.lock"
REVISION = "reproduce/revision.json"
COMMANDS = "reproduce/commands.sh"
MANIFEST_BASE = (
    "`manifest.sha256` lists every file of this folder (the archive and the manifest itself excepted) "
    "with paths relative to the folder it sits in: run `sha256sum -c manifest.sha256` here, or in "
    "`<sid>/export/` of the unpacked archive. `session.sha256` lists the session's files as packed "
    "in the archive (secrets masked), relative to the session folder: run "
    "`sha256sum -c export/session.sha256` in `<sid>/` of the unpacked archive."
)


def _revision_text(rev: Dict[str, Any]) -> str:
    git = rev.get("git")
    if git:
        where = "git commit `%s`%s%s" % (
            git["commit"],
            " on branch %s" % git["branch"] if git.get("branch") else "",
            " with uncommitted changes (**dirty**: %s)" % ", ".join(git["changed_files"][:5])
            if git.get("dirty")
            else ", clean",
        )
    else:
        where = "not a git checkout (%s)" % (rev.get("git_unavailable") or "no git")
    return "%s; workbench %s; source tree SHA-256 `%s` over %d files of %s." % (
        where,
        rev.get("version"),
        rev.get("source_tree_sha256"),
        rev.get("source_files_hashed") or 0,
        rev.get("source_root"),
    )


def reproduce_lines(rep: Optional[Dict[str, Any]], files: Dict[str, Any]) -> List[str]:
    """Code revision, host, the jobs interpreter and its lock file, the allow-listed environment and the commands."""
    if not rep:
        return ["Not collected (the record was rendered without the export step that gathers it).", ""]
    host, interp = rep["host"], rep["interpreter"]
    lines = [
        "- Code: %s" % _revision_text(rep["revision"]),
        "- Host: %s, kernel %s (%s), CPU %s × %s."
        % (
            host.get("os"),
            host.get("kernel"),
            host.get("machine"),
            host.get("cpu_count"),
            host.get("cpu_model") or "model unknown",
        ),
        "- Jobs interpreter: `%s`, Python %s; %s"
        % (
            interp.get("python"),
            interp.get("version") or "?",
            ("%d packages pinned in [%s](%s)." % (interp["packages"], LOCK, LOCK))
            if not interp.get("error")
            else "packages not listed (%s)." % interp["error"],
        ),
        "- Working directory of the export: `%s`; %s."
        % (host.get("working_directory"), rep.get("job_working_directory")),
        "- Model code: %s; reference inputs with their expected outputs: %s."
        % (
            ", ".join("[%s](%s)" % (p, p) for p in files.get("model_code") or []) or "not copied",
            ", ".join(
                "`%s` (%s)" % (p, (files.get("reference_about") or {}).get(p.split("/")[2], "subject not recorded"))
                for p in files.get("reference") or []
            )
            or "none (no export job wrote a reference set)",
        ),
        "",
    ]
    env = rep.get("environment") or {}
    if env:
        lines += ["Allow-listed environment of the jobs (as the runner passed it, secrets masked):", ""]
        lines += table(["variable", "value"], sorted(env.items()))
    lines += [
        "`sh %s [SESSIONS_ROOT]` re-runs the candidate's lineage (data, train, test, export) from this record's "
        "effective configs in a new session and compares split hash, per-epoch losses, checkpoint hash, test "
        "metrics and exported outputs (`ms-workbench reproduce`); it names no session id, so it works in any "
        "sessions root. The commands as each job ran, for reading (ids and paths are this session's):" % COMMANDS,
        "",
        "```sh",
    ]
    lines += ["%s" % c["as_run"] for c in rep.get("commands") or []] + ["```", ""]
    return lines


def files_lines(report: Dict[str, Any], files: Dict[str, Any]) -> List[str]:
    """What each file of the record holds, and how to verify them."""
    lines = [
        "- `report.json`: this report, machine-readable.",
        "- Appendix: %s."
        % ", ".join(
            "[%s](%s)" % (p, p) for p in (ax.ACCEPTANCE, ax.CHECKS, ax.TENSORS, ax.TIMING, ax.CLASSES, ax.CONFIG)
        ),
        "- `metrics/`: %s (per-step losses and times are in `metrics/steps.csv`)."
        % (", ".join("`%s`" % m for m in files.get("metrics") or []) or "none"),
        "- `%s/`: the revision, the package lock, the model code, the reference set and the commands." % PACKAGE,
        "- %s" % MANIFEST_BASE,
        "- `%s.tar.gz`: the session folder with this export in `export/`." % report["session"]["id"],
    ]
    masked = files.get("masked") or []
    if masked:
        lines.append(
            "- Masked copies: secrets were masked in the archive's copy of %d file(s), so `session.sha256` "
            "verifies them only in the unpacked archive (the session folder keeps the originals): %s."
            % (len(masked), ", ".join("`%s`" % m for m in masked))
        )
    shots = files.get("screenshots") or {}
    if shots.get("error"):
        lines.append(
            "- Screenshots: %s (%s)." % ("some not rendered" if shots.get("files") else "not rendered", shots["error"])
        )
    if shots.get("files"):
        lines += ["- Screenshots: %s." % ", ".join("[%s](%s)" % (p.rsplit("/", 1)[-1], p) for p in shots["files"])]
    return lines + [""]
