"""Session and job references: the id patterns, and the config keys that name another job.

An id that matches its pattern whole (`fullmatch`: a trailing newline is no id) has no slash and no dot, so `root/<sid>/jobs/<jid>` stays inside the
sessions root whatever the user typed; anything else is refused before a path is built from it.
Pure code for Python 3.9.
"""

from __future__ import annotations

import os
import re

SID_PATTERN = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-z]{4,8}$")  # YYYYMMDD-HHMMSS-<4 hex>
JID_PATTERN = re.compile(r"^[a-z]+-[0-9]{3,6}$")  # <kind>-NNN
SID_FORM = "YYYYMMDD-HHMMSS-xxxx"
JID_FORM = "<kind>-NNN like train-001"
# The config keys that name another job (by id, <session>/<job id>, or an absolute path).
JOB_REF_KEYS = ("data.from", "train.resume_from", "test.from", "align.weights_from", "export.from", "numerics.from")
# Of those, the ones documented to take a checkpoint file too; and data.from a folder holding split.json.
CKPT_FILE_KEYS = ("export.from", "align.weights_from")
# Of those, the ones that take `init`: initial weights chosen explicitly (never counted for acceptance).
INIT_KEYS = ("export.from", "align.weights_from")


class BadReference(ValueError):
    """A session id, job id or job reference that does not have the allowed form."""


def check_sid(sid: str) -> str:
    """The session id itself; BadReference when it is not of the form YYYYMMDD-HHMMSS-xxxx."""
    if not isinstance(sid, str) or not SID_PATTERN.fullmatch(sid):
        raise BadReference(
            "%r is not a session id (expected %s, as `ms-workbench sessions` lists them)" % (sid, SID_FORM)
        )
    return sid


def check_jid(jid: str) -> str:
    """The job id itself; BadReference when it is not of the form <kind>-NNN."""
    if not isinstance(jid, str) or not JID_PATTERN.fullmatch(jid):
        raise BadReference("%r is not a job id (expected %s)" % (jid, JID_FORM))
    return jid


def job_ref_expected(key: str) -> str:
    """What a job-reference key accepts, in words."""
    return (
        "a job id like train-001, <session>/<job id>, or an absolute path to a job folder"
        + (" or a .ckpt file" if key in CKPT_FILE_KEYS else "")
        + (" or a folder holding split.json" if key == "data.from" else "")
        + (" or init (initial weights)" if key in INIT_KEYS else "")
    )


def check_job_ref(key: str, value: str) -> str:
    """A job reference as a config key may hold: an id, <session>/<job id>, or an absolute job folder.

    Returns the value to store (a path with ~ expanded); BadReference says why it is refused.
    """
    if JID_PATTERN.fullmatch(value) or (value == "init" and key in INIT_KEYS):
        return value
    if value.count("/") == 1 and not value.startswith(("/", "~", ".")):
        sid, jid = value.split("/")
        if SID_PATTERN.fullmatch(sid) and JID_PATTERN.fullmatch(jid):
            return value
        raise BadReference("not of the form %s/<kind>-NNN" % SID_FORM)
    path = os.path.expanduser(value)
    if not os.path.isabs(path):
        raise BadReference("a relative path or an unknown id")
    path = os.path.normpath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "job.json")):
            return path
        if key == "data.from" and os.path.isfile(os.path.join(path, "split.json")):
            return path
        raise BadReference("%s is a folder but not a job folder (no job.json)" % path)
    if os.path.isfile(path) and key in CKPT_FILE_KEYS and path.endswith(".ckpt"):
        return path
    if os.path.exists(path):
        raise BadReference("%s is not a job folder" % path)
    raise BadReference("%s does not exist" % path)
