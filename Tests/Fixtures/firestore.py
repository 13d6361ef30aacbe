"""Seed 000's Firestore and analysis worker, for backend.py (Python 3 standard library only).

Firestore REST (v1), the subset a client that creates and watches `jobs/{id}` uses, with Firestore's own shapes:
  POST /v1/projects/P/databases/(default)/documents:commit
       {"writes": [{"update": {"name", "fields"}, "updateMask"?, "updateTransforms"?: [{"fieldPath",
        "setToServerValue": "REQUEST_TIME"}], "currentDocument"?: {"exists": bool} | {"updateTime"}}]}
       -> {"writeResults": [{"updateTime", "transformResults": [{"timestampValue"}]}], "commitTime"}
  POST /v1/projects/P/databases/(default)/documents/COLLECTION?documentId=ID  {"fields"}  -> the document
  GET  /v1/projects/P/databases/(default)/documents/COLLECTION/ID              -> the document
  Documents are {"name", "fields", "createTime", "updateTime"}; values are typed ({"stringValue"}, {"integerValue":
  "0"}, {"doubleValue"}, {"booleanValue"}, {"nullValue"}, {"timestampValue"}, {"mapValue": {"fields"}},
  {"arrayValue": {"values"}}) and anything else is refused. Errors are Firestore's {"error": {"code", "message",
  "status"}}: 409 ALREADY_EXISTS "Document already exists: NAME", 404 NOT_FOUND, 400 FAILED_PRECONDITION (an
  updateTime precondition that does not match), 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED (a Bearer token other than
  --firebase-token's, e.g. an expired one).
Analysis worker: every --job-step seconds each job in `jobs` moves one step: queued -> processing (progress 30) ->
  processing (60) -> summarizing (85) -> completed (100, with "parent_summary", "coach_summary" and "result_urls":
  {"parent_summary_url", "coach_summary_url"}, GCS-style signed URLs valid --url-ttl seconds). A job whose video is not
  stored (storagePath not among the uploaded objects), or whose storagePath contains "fail", ends "failed" with an
  "error". POST /_jobs {"hold": true} stops the worker (jobs stay where they are), {"hold": false} lets it go on.
  GET /results/ID/KIND.txt?X-Goog-Expires=..&X-Goog-Date=..&X-Goog-Signature=..  serves a result text; an expired
  or wrongly signed URL gets GCS's 400 ExpiredToken / 403 SignatureDoesNotMatch XML.
State (in /_state under "firestore"): "documents" (name -> document), "commits", "creates", "gets", "results".
"""
import datetime
import hashlib
import hmac
import json
import re
import threading
import time
from urllib.parse import parse_qs, urlsplit

LOCK = threading.RLock()
STATE = {"documents": {}, "commits": 0, "creates": 0, "gets": 0, "results": 0}
CONFIG = {"token": None, "step": 0.3, "ttl": 900, "hold": False, "stored": lambda path: True, "secret": b"fs"}
ROOT = re.compile(r"/v1/(projects/[^/]+/databases/\(default\)/documents)")
TYPES = {"nullValue", "booleanValue", "integerValue", "doubleValue", "timestampValue", "stringValue", "bytesValue",
         "referenceValue", "geoPointValue", "arrayValue", "mapValue"}


class Refusal(Exception):
    def __init__(self, code, status, message):
        super().__init__(message)
        self.code, self.status, self.message = code, status, message


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def configure(token, step, ttl, stored, secret):
    """token: the Bearer token accepted (None: any); stored(path): True when the video at storagePath arrived."""
    CONFIG.update(token=token, step=step, ttl=ttl, stored=stored, secret=secret)
    threading.Thread(target=worker, daemon=True).start()


def snapshot():
    with LOCK:
        return json.loads(json.dumps(STATE))


def check_value(value, path):
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in TYPES:
        raise Refusal(400, "INVALID_ARGUMENT", "Invalid value at '%s' (type.googleapis.com/google.firestore.v1.Value)"
                      % path)
    kind, inner = next(iter(value.items()))
    if kind == "integerValue" and not (isinstance(inner, str) and re.fullmatch(r"-?\d+", inner)) \
            and not isinstance(inner, int):
        raise Refusal(400, "INVALID_ARGUMENT", "Invalid value at '%s.integer_value' (TYPE_INT64)" % path)
    if kind == "mapValue":
        check_fields(inner.get("fields", {}), path + ".map_value.fields")
    if kind == "arrayValue":
        for index, item in enumerate(inner.get("values", [])):
            check_value(item, "%s.array_value.values[%d]" % (path, index))


def check_fields(fields, path="document.fields"):
    if not isinstance(fields, dict):
        raise Refusal(400, "INVALID_ARGUMENT", "Invalid value at '%s'" % path)
    for key, value in fields.items():
        check_value(value, "%s[%s]" % (path, key))


def set_path(fields, dotted, value):
    parts = dotted.split(".")
    for part in parts[:-1]:
        fields = fields.setdefault(part, {"mapValue": {"fields": {}}})["mapValue"].setdefault("fields", {})
    fields[parts[-1]] = value


def apply_write(write, root, stamp):
    """One write of a commit, checked against its precondition; the write result."""
    update = write.get("update")
    if not isinstance(update, dict) or not str(update.get("name", "")).startswith(root + "/"):
        raise Refusal(400, "INVALID_ARGUMENT", "Document name \"%s\" lacks \"%s\"" % (
            (update or {}).get("name"), root))
    name = update["name"]
    if len(name[len(root) + 1:].split("/")) % 2:
        raise Refusal(400, "INVALID_ARGUMENT", "Document name \"%s\" has odd number of segments" % name)
    check_fields(update.get("fields", {}))
    existing = STATE["documents"].get(name)
    condition = write.get("currentDocument") or {}
    if condition.get("exists") is False and existing:
        raise Refusal(409, "ALREADY_EXISTS", "Document already exists: %s" % name)
    if condition.get("exists") is True and not existing:
        raise Refusal(404, "NOT_FOUND", "No document to update: %s" % name)
    if "updateTime" in condition and (not existing or existing["updateTime"] != condition["updateTime"]):
        raise Refusal(400, "FAILED_PRECONDITION", "the stored version (%s) does not match the required base version "
                      "(%s)" % (existing and existing["updateTime"], condition["updateTime"]))
    fields = json.loads(json.dumps(existing["fields"])) if existing and "updateMask" in write else {}
    for key, value in update.get("fields", {}).items():
        if "updateMask" not in write or key in write["updateMask"].get("fieldPaths", []):
            fields[key] = value
    results = []
    for transform in write.get("updateTransforms", []):
        if transform.get("setToServerValue") != "REQUEST_TIME" or not transform.get("fieldPath"):
            raise Refusal(400, "INVALID_ARGUMENT", "Invalid transform: %s" % json.dumps(transform))
        set_path(fields, transform["fieldPath"], {"timestampValue": stamp})
        results.append({"timestampValue": stamp})
    return name, fields, existing, {"updateTime": stamp, "transformResults": results} if results else \
        {"updateTime": stamp}


def commit(body, root):
    writes = body.get("writes") if isinstance(body, dict) else None
    if not isinstance(writes, list) or not writes:
        raise Refusal(400, "INVALID_ARGUMENT", "Invalid JSON payload received. \"writes\" is required")
    stamp = now()
    with LOCK:
        planned = [apply_write(write, root, stamp) for write in writes]   # all checked before any is applied
        for name, fields, existing, _ in planned:
            STATE["documents"][name] = {"name": name, "fields": fields,
                                        "createTime": existing["createTime"] if existing else stamp,
                                        "updateTime": stamp}
        STATE["commits"] += 1
    return {"writeResults": [result for *_, result in planned], "commitTime": stamp}


def create(body, root, rest, query):
    ids = query.get("documentId", [])
    if not ids or "/" in rest:
        raise Refusal(400, "INVALID_ARGUMENT", "a collection and a documentId are required")
    name = "%s/%s/%s" % (root, rest, ids[0])
    fields = (body or {}).get("fields", {})
    check_fields(fields)
    stamp = now()
    with LOCK:
        if name in STATE["documents"]:
            raise Refusal(409, "ALREADY_EXISTS", "Document already exists: %s" % name)
        STATE["documents"][name] = document = {"name": name, "fields": fields, "createTime": stamp,
                                               "updateTime": stamp}
        STATE["creates"] += 1
    return document


def route(handler, method, path, read_json):
    """Answers a Firestore or result-text request; False for any other path."""
    if path.startswith("/results/") and method == "GET":
        result_text(handler, path)
        return True
    if path == "/_jobs" and method == "POST":
        CONFIG["hold"] = bool((read_json() or {}).get("hold"))
        handler.send(200, {"hold": CONFIG["hold"]})
        return True
    match = ROOT.match(path)
    if not match:
        return False
    root, rest = match.group(1), path[match.end():]
    try:
        token = CONFIG["token"]
        if token and handler.headers.get("Authorization") != "Bearer " + token:
            raise Refusal(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 "
                          "access token, login cookie or other valid authentication credential. See "
                          "https://developers.google.com/identity/sign-in/web/devconsole-project.")
        if method == "POST" and rest == ":commit":
            handler.send(200, commit(read_json(), root))
        elif method == "POST" and rest.startswith("/"):
            handler.send(200, create(read_json(), root, rest[1:], parse_qs(urlsplit(handler.path).query)))
        elif method == "GET" and rest.startswith("/"):
            with LOCK:
                STATE["gets"] += 1
                document = STATE["documents"].get(root + rest)
            if document is None:
                raise Refusal(404, "NOT_FOUND", "Document \"%s%s\" not found." % (root, rest))
            handler.send(200, document)
        else:
            raise Refusal(404, "NOT_FOUND", "Method not found.")
    except Refusal as refusal:
        handler.send(refusal.code, {"error": {"code": refusal.code, "message": refusal.message,
                                              "status": refusal.status}})
    return True


# ---- the analysis worker and its result texts ----

def sign(path, date, expires):
    return hmac.new(CONFIG["secret"], ("GET\n%s\n%s\n%s" % (path, date, expires)).encode(), hashlib.sha256).hexdigest()


def signed_result_url(base, job_id, kind):
    path = "/results/%s/%s.txt" % (job_id, kind)
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    expires = str(CONFIG["ttl"])
    return "%s%s?X-Goog-Algorithm=GOOG4-HMAC-SHA256&X-Goog-Credential=analysis%%40puck-buddy.iam.gserviceaccount.com" \
           "&X-Goog-Date=%s&X-Goog-Expires=%s&X-Goog-SignedHeaders=host&X-Goog-Signature=%s" % (
               base, path, date, expires, sign(path, date, expires))


def result_text(handler, path):
    query = parse_qs(urlsplit(handler.path).query)
    date, expires = query.get("X-Goog-Date", [""])[0], query.get("X-Goog-Expires", ["0"])[0]
    if not hmac.compare_digest(query.get("X-Goog-Signature", [""])[0], sign(path, date, expires)):
        return handler.s3_error(403, "SignatureDoesNotMatch", "Access denied.")
    issued = datetime.datetime.strptime(date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if time.time() > issued + int(expires):
        return handler.s3_error(400, "ExpiredToken", "Invalid argument.")
    match = re.fullmatch(r"/results/([^/]+)/(parent|coach)\.txt", path)
    with LOCK:
        job = next((doc for name, doc in STATE["documents"].items() if match and name.endswith("/jobs/" + match.group(1))),
                   None)
        STATE["results"] += 1
    if job is None:
        return handler.s3_error(404, "NoSuchKey", "The specified key does not exist.")
    field = "parent_summary" if match.group(2) == "parent" else "coach_summary"
    handler.send(200, job["fields"][field]["stringValue"], "text/plain; charset=utf-8")


STEPS = [("processing", 30), ("processing", 60), ("summarizing", 85), ("completed", 100)]


def advance(name, job, base):
    fields = job["fields"]
    status = fields.get("status", {}).get("stringValue")
    if status in ("completed", "failed"):
        return
    storage = fields.get("storagePath", {}).get("stringValue", "")
    stamp = now()
    if "fail" in storage or not CONFIG["stored"](storage):
        why = "no video stored at %s" % storage if not CONFIG["stored"](storage) else \
            "Could not detect a player in the video (too dark?)"
        fields.update(status={"stringValue": "failed"}, error={"stringValue": why})
    else:
        index = next((i for i, (s, p) in enumerate(STEPS) if s == status and
                      int(fields.get("progress", {}).get("integerValue", 0)) == p), -1) + 1
        step, progress = STEPS[index]
        fields.update(status={"stringValue": step}, progress={"integerValue": str(progress)})
        if step == "completed":
            job_id = name.rsplit("/", 1)[1]
            clip = storage.rsplit("/", 1)[-1]
            fields["parent_summary"] = {"stringValue": "Great effort in %s: 3 shots, 2 on target." % clip}
            fields["coach_summary"] = {"stringValue": "What went well:\n- Quick release\n\nWhat to work on:\n- "
                                                      "Follow-through on %s" % clip}
            fields["result_urls"] = {"mapValue": {"fields": {
                "parent_summary_url": {"stringValue": signed_result_url(base, job_id, "parent")},
                "coach_summary_url": {"stringValue": signed_result_url(base, job_id, "coach")}}}}
    fields["updatedAt"] = {"timestampValue": stamp}
    job["updateTime"] = stamp


def worker():
    while True:
        time.sleep(CONFIG["step"])
        if CONFIG["hold"]:
            continue
        with LOCK:
            for name, job in STATE["documents"].items():
                if "/documents/jobs/" in name:
                    advance(name, job, CONFIG.get("base", ""))
