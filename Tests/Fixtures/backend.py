#!/usr/bin/env python3
"""Fixture backend for ingest's network tests (Python 3 standard library only).

Speaks the seed APIs (the backends the pipelines/ files are written for) exactly: paths, JSON field names, status codes:
  000/001  POST /api/upload-url            -> 001's {"success", "upload_info": {"upload_url", "storage_path"}}
                                              plus 000's top-level "upload_url"/"storage_path" (a superset both
                                              clients decode)
  001      POST /api/analyze-video         -> {"success", "analysis": {"data_summary", "shots_detected", ...}}
  002      POST /upload-url                -> {"upload_url", "image_key", "bucket_name", "expires_in", "content_type"}
           POST /analyze                   -> {"success", "analysis_result": {"statusCode", "body": {...}}}
  003      POST /api/v1/visit-transcripts/audio/upload/initiate   (Bearer auth; 409 for a second recording of a
                                                                   pet on one day)
           POST /api/v1/visit-transcripts/audio/upload/complete/{visit_id}
           GET  /api/v1/visit-transcripts/audio/playback/{visit_id}  -> {"presigned_url", "expires_in", "visit_id",
                                                   "filename"} once the visit's upload was completed; 404 before
                                                   (and for an unknown visit); GET faults apply
Callbacks (001 analyze-video, 002 analyze, 003 complete) are idempotent as a real backend's "one completion per
  upload": once one was accepted (2xx) for a resource (001's storage_path, 002's image_key, 003's visit_id), a repeat
  is refused with 409 {"detail": "…already…"}. "callbacks" counts the accepted ones, "callback_repeats" the refused
  repeats (per endpoint; 003's without the visit id). With --accept-repeats the backend is one that does not refuse
  a repeat: it is answered as the first call was (200) and counted under "callback_repeats" only.
000      Firestore REST (/v1/projects/P/databases/(default)/documents…), its analysis worker and the signed result
         texts (/results/…): see firestore.py; --firebase-token TOKEN, --job-step SECONDS
Upload targets:
  PUT  /signed/<path>?expires=<epoch>&sig=<hmac>   signed with the fixture's own HMAC; 403 "Request has expired"
  PUT  /<bucket>/<key>?X-Amz-...                   with --s3: a SigV4 presigned URL (Content-Type signed when the
                                                   ticket names one) for a real S3 server; the fixture counts the PUT,
                                                   applies faults, and forwards it unchanged (Host included) to S3,
                                                   which checks signature and expiry and stores the object
  POST /s3post/<bucket>                            S3-style presigned POST form, parsed strictly (RFC 7578 CRLFs,
                                                   fields before the file, policy signature and expiry checked)
  PUT/POST/DELETE /fixture/<key>                   a minimal S3, path style, bucket "fixture" (PutObject and
                                                   multipart create/part/complete/abort); signatures are not
                                                   checked, each request's x-amz-date is recorded in "signed"
                                                   (tests see a retry signed anew)
Proxy (--upstream URL, for a real S3 server behind injected faults):
  any other path and method is forwarded to URL as received (Host kept, so SigV4 signatures still verify), after
  the faults that match it; the answer is passed back and logged in "requests".
Real S3 for 003 (--s3-post URL/BUCKET --s3-access-key K --s3-secret-key S [--s3-region R]): initiate hands out a
  presigned POST for that bucket, SigV4-signed with those keys as a real backend would, instead of the fixture's own
  /s3post/ target; complete checks the object there (curl --aws-sigv4 HEAD) rather than in "objects".
Control:
  GET /_state   counts of what arrived: each stored object's sha256/size/count, callbacks, ticket requests,
                every JSON body per endpoint ("json"), "arrived" (each PUT as its headers came in, before the body).
  POST /_faults replaces the fault list (JSON list, as --faults).
  POST /_clock  moves the fixture's clock forward, so tickets expire without a wait (see fixture_clock.py).
  ANY /echo/<status>/…  records the request target as received (see url_echo.py), in "echo".
Faults (--faults JSON list), each {"method", "path" (prefix), "times", "action", ...}:
  {"action": "status", "status": 500}                       plain error answer
  {"action": "status", "status": 429, "retry_after": "1"}   with Retry-After
  {"action": "status", "status": 200, "headers": {"ETag": ""}}  any answer with these headers (body drained)
  {"action": "answer_early", "after_bytes": 100, "status": 200, "headers": {...}}
                                                            read that much of the body, answer (Connection: close)
                                                            and close without reading the rest
  {"action": "reset", "after_bytes": 65536}                 read part of the body, then RST the connection
  {"action": "delay", "seconds": 3}                         answer late (a slow server)
  {"action": "delay", "seconds": 0.15, "max_seconds": 0.3}  handle it after a random 0.15–0.3 s (counted under
                                                            "delayed" as the wait begins)
  {"action": "throttle", "bytes_per_second": 65536}         read the body slowly (a slow link), then answer
  {"action": "expired_ticket"}                              hand out a ticket whose URL has already expired
  {"action": "conflict"}                                    409 as 003's duplicate-recording answer
  {"action": "act_then_reset"}                              process the request (counted, stored) as usual, then
                                                            RST the connection instead of answering (an answer lost
                                                            after the server acted); JSON POST routes, and
                                                            proxied requests (S3 answered: "reset after 200")
  {"action": "act_then_hang", "seconds": 30}                process it, then hold the answer that long (a client
                                                            killed meanwhile never learns it was done); proxied too
  {"action": "gate", "file": PATH}                          hold it until PATH exists (see gate.py)
  {"action": "stream", ...}, {"action": "never_answer", ...}  an answer that drips for ever, a huge or deeply
                                                            nested one, or none at all: see slow_answers.py
  {"action": "tamper", "header"|"element": NAME, "value": V}  proxied, S3's answer with that checksum replaced
                                                            (see tampered_answers.py)
  {"action": "echo", "status": 403}                         refuse with an S3/GCS-style XML error whose Message
                                                            quotes the request line and its Authorization header (as
                                                            servers quoting a signed URL back do): a leak test's bait
Signed URL styles (--url-style, for /signed/ URLs when not --s3; see signed_urls.py): "aws" (the default), "gcs"
  (Google Cloud Storage / Firebase v4), "gcs-v2", "azure" (SAS). Each is checked with the fixture's HMAC. Every
  signature handed out (as in the URL and decoded) and every POST policy and signature of seed 003's tickets is
  listed in "secrets": leak tests search ingest's outputs for them.
Start: backend.py --port-file FILE [--faults JSON] [--bearer TOKEN] [--url-ttl SECONDS] [--url-style STYLE]
                  [--upstream URL] [--accept-repeats]
                  [--s3 '{"endpoint": "http://127.0.0.1:8333", "access_key", "secret_key", "region", "bucket"}']
                  [--s3-post URL/BUCKET --s3-access-key K --s3-secret-key S [--s3-region R]] [--tls CERT KEY];
       listens on 127.0.0.1, port 0 (HTTPS with --tls).
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

import firestore
import fixture_clock
import gate
import signed_urls
import url_echo
import slow_answers
import tampered_answers

SECRET = b"fixture-signing-key"
SCHEME = "http"
UPLOADS = {}              # multipart upload id -> {"key", "parts": {number: bytes}}
LOCK = threading.RLock()
# Serialises seed 003's initiate (see helppet): its one-recording-per-pet-per-day check and the registration.
INITIATE_LOCK = threading.Lock()
STATE = {
    "objects": {},        # key -> {"sha256", "size", "count", "content_type"}
    "callbacks": {},      # endpoint -> accepted (2xx) callbacks
    "callback_repeats": {},  # endpoint -> repeats refused with 409 (the resource's callback was accepted before)
    "tickets": {},        # endpoint -> count
    "requests": [],       # [method, path, status]
    "last_json": {},      # endpoint -> last JSON body received
    "json": {},           # endpoint -> every JSON body received, in order (callbacks checked one by one)
    "arrived": [],        # [method, path] of each PUT, when its headers arrived
    "signed": [],         # [method, path, query, x-amz-date] of each /fixture/ request
    "proxied": 0,         # requests that came through as to a proxy (absolute-form request line)
    "secrets": [],        # signatures, POST policies handed out: never to appear in an output
    "delayed": {},        # fault path -> requests a "delay" fault began to hold (handled once it ends)
}
FAULTS = []
BEARER = None
UPSTREAM = None           # "host:port" of a server that unmatched requests are forwarded to
S3_POST = None            # {"endpoint", "bucket", "access_key", "secret_key", "region"} for real presigned POSTs
FIXTURE_ROUTES = ("/_state", "/_faults", "/_clock", "/signed/", "/s3post/", "/fixture/", "/api/", "/upload-url", "/analyze",
                  "/v1/", "/results/", "/_jobs")
URL_TTL = 900
URL_STYLE = "aws"         # --url-style: the query form of /signed/ URLs (aws, gcs, gcs-v2, azure)
S3 = None                 # --s3: signed URLs are SigV4 presigned PUTs forwarded to this S3 server
VISITS = {}               # visit_id -> {"pet_id", "s3_key", "filename"}
PET_DAY = {}              # (pet_id, date) -> visit_id
COMPLETED = {}            # (endpoint, resource) -> when its callback was accepted: a repeat is refused with 409
ACCEPT_REPEATS = False    # --accept-repeats: a repeated callback is accepted (200) instead, and counted


def sign(text):
    return hmac.new(SECRET, text.encode(), hashlib.sha256).hexdigest()


def signed_query(key, expires):
    """The query of a /signed/ URL in URL_STYLE's form (signed_urls.py), its signature listed in "secrets"."""
    query, secrets = signed_urls.build(URL_STYLE, expires, URL_TTL, sign("PUT\n/%s\n%d" % (key, expires)))
    with LOCK:
        STATE["secrets"] += secrets
    return query


def take_fault(method, path):
    with LOCK:
        for fault in FAULTS:
            if fault.get("times", 1) <= 0:
                continue
            if fault.get("method", method) != method or not path.startswith(fault.get("path", "")):
                continue
            fault["times"] = fault.get("times", 1) - 1
            return dict(fault)
    return None


def s3_signing_key(day):
    key = hmac.new(("AWS4" + S3_POST["secret_key"]).encode(), day.encode(), hashlib.sha256).digest()
    for part in (S3_POST["region"], "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def stored_size(key):
    """Size of the object at key, or None: from what the fixture stored, or by a signed HEAD to the real S3."""
    if S3_POST is None:
        with LOCK:
            entry = STATE["objects"].get(key)
        return entry["size"] if entry else None
    url = "%s/%s/%s" % (S3_POST["endpoint"], S3_POST["bucket"], key)
    head = subprocess.run(["curl", "-s", "-I", "--aws-sigv4", "aws:amz:%s:s3" % S3_POST["region"], "--user",
                           "%s:%s" % (S3_POST["access_key"], S3_POST["secret_key"]), url],
                          capture_output=True, text=True, timeout=30)
    match = re.search(r"^content-length:\s*(\d+)", head.stdout, re.I | re.M)
    return int(match.group(1)) if head.stdout.startswith("HTTP/1.1 200") and match else None


def count(kind, name):
    with LOCK:
        STATE[kind][name] = STATE[kind].get(name, 0) + 1


def accept_callback(endpoint, resource):
    """True for the first callback for resource (counted under "callbacks"); False for a repeat (counted under
    "callback_repeats"), which the caller refuses with 409 — or True for it too with --accept-repeats (a backend
    that acts twice). Checked and recorded at once, so without --accept-repeats two concurrent calls for one
    resource cannot both be accepted."""
    with LOCK:
        if (endpoint, resource) in COMPLETED:
            STATE["callback_repeats"][endpoint] = STATE["callback_repeats"].get(endpoint, 0) + 1
            return ACCEPT_REPEATS
        COMPLETED[(endpoint, resource)] = fixture_clock.now()
        STATE["callbacks"][endpoint] = STATE["callbacks"].get(endpoint, 0) + 1
        return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ingest-fixture/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # ---- plumbing ----
    act_fault = None      # an act_then_* fault: the request is processed, then its answer is lost or held

    def send(self, status, body=b"", content_type="application/json", headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        fault, self.act_fault = self.act_fault, None
        if fault and fault.get("action") == "act_then_reset":
            with LOCK:
                STATE["requests"].append([self.command, urlsplit(self.path).path, "reset after %d" % status])
            return self.abort_connection()
        if fault and fault.get("action") == "act_then_hang":
            with LOCK:
                STATE["requests"].append([self.command, urlsplit(self.path).path, "held %d" % status])
            time.sleep(fault.get("seconds", 30))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        with LOCK:
            STATE["requests"].append([self.command, urlsplit(self.path).path, status])

    def s3_error(self, status, code, message):
        xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message>"
               "<RequestId>FIXTURE</RequestId></Error>" % (code, message))
        self.send(status, xml, "application/xml")

    def body_length(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return None
        return int(self.headers.get("Content-Length", "0"))

    def read_body(self, limit=1 << 20):
        length = self.body_length()
        if length is None or length > limit:
            return None
        return self.rfile.read(length)

    def read_json(self):
        raw = self.read_body()
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    def reset(self, after_bytes):
        """Reads part of the body, then closes with RST (SO_LINGER 0) so the client sees a broken connection."""
        length = self.body_length() or 0
        remaining = min(after_bytes, length)
        while remaining > 0:
            chunk = self.rfile.read(min(65536, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
        with LOCK:
            STATE["requests"].append([self.command, urlsplit(self.path).path, "reset"])
        self.abort_connection()

    def answer_early(self, fault):
        """Reads `after_bytes` of the body, answers, and closes with the rest unread: an upload that looks
        accepted but was not received whole."""
        remaining = min(fault.get("after_bytes", 100), self.body_length() or 0)
        while remaining > 0:
            chunk = self.rfile.read(min(65536, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
        headers = dict(fault.get("headers", {}))
        headers["Connection"] = "close"
        self.send(fault.get("status", 200), fault.get("body", b""), headers=headers)
        self.wfile.flush()
        self.close_connection = True
        self.request.shutdown(socket.SHUT_WR)
        time.sleep(fault.get("linger", 0.5))  # the answer reaches the client before the close resets it

    def abort_connection(self):
        """Closes with RST (SO_LINGER 0): the client sees a broken connection and no answer."""
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.rfile.close()
            self.wfile.close()
        finally:
            self.request.close()

    def apply_fault(self, fault):
        """True when the fault answered the request."""
        if fault is None:
            return False
        action = fault.get("action")
        if action == "reset":
            self.reset(fault.get("after_bytes", 65536))
            return True
        if action == "delay":
            count("delayed", fault.get("path", ""))
            low = fault.get("seconds", 2)
            time.sleep(random.uniform(low, fault.get("max_seconds", low)))
            return False
        if action == "gate":
            gate.hold(fault, STATE, LOCK)
            return False
        if action == "throttle":
            self.throttle = fault.get("bytes_per_second", 65536)
            return False
        if action == "echo":
            self.drain()
            quoted = "%s %s with Authorization: %s" % (self.command, self.path, self.headers.get("Authorization"))
            quoted = quoted.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            self.s3_error(fault.get("status", 403), "AccessDenied", "Access denied for " + quoted)
            return True
        if action == "status":
            self.drain()
            headers = {}
            if "retry_after" in fault:
                headers["Retry-After"] = str(fault["retry_after"])
            headers.update(fault.get("headers", {}))
            body = fault.get("body", {"detail": "injected %d" % fault["status"]})
            self.send(fault["status"], body, headers=headers)
            return True
        if action == "answer_early":
            self.answer_early(fault)
            return True
        if action in slow_answers.ACTIONS:  # an answer that drips, or none at all (see slow_answers.py)
            def record(what):
                with LOCK:
                    STATE["requests"].append([self.command, urlsplit(self.path).path, what])
            slow_answers.apply(self, fault, record)
            return True
        return False

    def drain(self):
        length = self.body_length() or 0
        while length > 0:
            chunk = self.rfile.read(min(1 << 20, length))
            if not chunk:
                break
            length -= len(chunk)

    throttle = None

    def read_chunk(self, remaining):
        """Up to 1 MiB of the body, or a tenth of a second's worth when the fault throttles this request."""
        if self.throttle:
            time.sleep(0.1)
            return self.rfile.read(max(1, min(self.throttle // 10, remaining)))
        return self.rfile.read(min(1 << 20, remaining))

    def base(self):
        return "%s://%s:%d" % ((SCHEME,) + self.server.server_address[:2])

    def signed_put_url(self, key, expired=False, content_type=None):
        if S3:
            return self.presigned_s3_url(key, expired, content_type)
        expires = int(fixture_clock.now()) + (-60 if expired else URL_TTL)
        return "%s/signed/%s?%s" % (self.base(), key, signed_query(key, expires))

    def presigned_s3_url(self, key, expired, content_type):
        """A SigV4 query-signed PUT URL (as boto3's generate_presigned_url makes) on this fixture's host and port,
        which forwards it with that Host to S3: S3 verifies it as if the client had sent it directly."""
        now = datetime.datetime.utcnow() - datetime.timedelta(seconds=120 if expired else 0)
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        scope = "%s/%s/s3/aws4_request" % (amz_date[:8], S3["region"])
        host = "%s:%d" % self.server.server_address[:2]
        path = "/%s/%s" % (S3["bucket"], quote(key, safe="/-_.~"))
        headers = {"host": host}
        if content_type:
            headers["content-type"] = content_type
        signed = ";".join(sorted(headers))
        query = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": "%s/%s" % (S3["access_key"], scope),
                 "X-Amz-Date": amz_date, "X-Amz-Expires": str(60 if expired else URL_TTL),
                 "X-Amz-SignedHeaders": signed}
        canonical_query = "&".join("%s=%s" % (quote(k, safe="-_.~"), quote(v, safe="-_.~"))
                                   for k, v in sorted(query.items()))
        canonical = "\n".join(["PUT", path, canonical_query,
                               "".join("%s:%s\n" % (name, headers[name]) for name in sorted(headers)),
                               signed, "UNSIGNED-PAYLOAD"])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        signing_key = ("AWS4" + S3["secret_key"]).encode()
        for part in (amz_date[:8], S3["region"], "s3", "aws4_request"):
            signing_key = hmac.new(signing_key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
        return "http://%s%s?%s&X-Amz-Signature=%s" % (host, path, canonical_query, signature)

    def forward_to_s3(self, path):
        """Streams the PUT to S3 as received (Host, Content-Type, Content-Length, the signed query) and relays
        S3's answer; a stored object is counted like one PUT to /signed/."""
        length = self.body_length()
        if length is None:
            self.drain()
            return self.s3_error(411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
        upstream = urlsplit(S3["endpoint"])
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=120)
        connection.putrequest("PUT", self.path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", self.headers.get("Host", ""))
        for name, value in self.headers.items():
            if name.lower() in ("content-type", "content-length", "content-md5") or name.lower().startswith("x-amz-"):
                connection.putheader(name, value)
        connection.endheaders()
        digest = hashlib.sha256()
        remaining = length
        while remaining > 0:
            chunk = self.rfile.read(min(1 << 20, remaining))
            if not chunk:
                connection.close()
                return  # client went away: S3 sees a short body and stores nothing
            digest.update(chunk)
            connection.send(chunk)
            remaining -= len(chunk)
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
        if answer.status == 200:
            key = unquote(path[len("/%s/" % S3["bucket"]):])
            self.store(key, digest.hexdigest(), length, self.headers.get("Content-Type"))
        headers = {"ETag": answer.getheader("ETag")} if answer.getheader("ETag") else {}
        self.send(answer.status, body, answer.getheader("Content-Type") or "application/xml", headers)


    # ---- proxy ----
    def proxied(self):
        """True when the request was forwarded upstream (or answered by a fault on its way there)."""
        path = urlsplit(self.path).path
        if UPSTREAM is None or path.startswith(FIXTURE_ROUTES):
            return False
        fault = take_fault(self.command, path)
        if self.apply_fault(fault):
            return True
        connection = http.client.HTTPConnection(UPSTREAM, timeout=60)
        connection.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            if name.lower() not in ("connection", "expect", "keep-alive", "proxy-connection"):
                connection.putheader(name, value)
        connection.endheaders()
        remaining = self.body_length() or 0
        while remaining > 0:
            chunk = self.rfile.read(min(1 << 20, remaining))
            if not chunk:
                connection.close()
                return True
            connection.send(chunk)
            remaining -= len(chunk)
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
        headers = answer.getheaders()
        if fault and fault.get("action") == "tamper":  # see tampered_answers.py
            headers, body = tampered_answers.tamper(fault, headers, body)
        if fault and fault.get("action") in ("act_then_reset", "act_then_hang"):  # S3 acted; its answer is lost
            with LOCK:
                STATE["requests"].append([self.command, path, "%s %d" % (
                    "reset after" if fault["action"] == "act_then_reset" else "held", answer.status)])
            if fault["action"] == "act_then_reset":
                self.abort_connection()
                return True
            time.sleep(fault.get("seconds", 30))
        self.send_response(answer.status)
        for name, value in headers:
            if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                self.send_header(name, value)
        # A HEAD answer has no body but the object's length, which the client compares.
        length = answer.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length if length is not None else str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        with LOCK:
            STATE["requests"].append([self.command, path, answer.status])
        return True

    def do_HEAD(self):
        if not self.proxied():
            self.send(404, {"detail": "Not Found"})

    # ---- routes ----
    def do_GET(self):
        if url_echo.handle(self, STATE, LOCK):
            return
        if self.proxied():
            return
        path = urlsplit(self.path).path
        self.note_proxy()
        if path == "/_state":
            with LOCK:
                snapshot = json.dumps(dict(STATE, firestore=firestore.snapshot()))
            self.send(200, snapshot)
            return
        if path.startswith(("/v1/", "/results/")) and (self.apply_fault(take_fault("GET", path)) or
                                                       firestore.route(self, "GET", path, self.read_json)):
            return
        match = re.fullmatch(r"/api/v1/visit-transcripts/audio/playback/([^/]+)", path)
        if match:
            return self.playback(path, match.group(1))
        self.send(404, {"detail": "Not Found"})

    def playback(self, path, visit_id):                  # seed 003: answers for a completed visit only
        if self.apply_fault(take_fault("GET", path)):
            return
        if BEARER and self.headers.get("Authorization") != "Bearer " + BEARER:
            return self.send(401, {"detail": "Could not validate credentials"})
        with LOCK:
            visit = VISITS.get(visit_id)
            completed = ("/api/v1/visit-transcripts/audio/upload/complete", visit_id) in COMPLETED
        if visit is None:
            return self.send(404, {"detail": "Visit not found"})
        if not completed:
            return self.send(404, {"detail": "No audio recording found for visit %s" % visit_id})
        expires = int(fixture_clock.now()) + 900
        url = "%s/signed/%s?expires=%d&X-Amz-Signature=%s" % (
            self.base(), visit["s3_key"], expires, sign("GET\n/%s\n%d" % (visit["s3_key"], expires)))
        return self.send(200, {"presigned_url": url, "expires_in": 900, "visit_id": visit_id,
                               "filename": visit["filename"]})

    def do_PUT(self):
        if url_echo.handle(self, STATE, LOCK):
            return
        if self.proxied():
            return
        parts = urlsplit(self.path)
        self.note_proxy()
        with LOCK:
            STATE["arrived"].append(["PUT", parts.path])
        if S3 and parts.path.startswith("/%s/" % S3["bucket"]):
            if self.apply_fault(take_fault("PUT", parts.path)):
                return
            return self.forward_to_s3(parts.path)
        if parts.path.startswith("/fixture/"):
            return self.s3_put(parts)
        if not parts.path.startswith("/signed/"):
            self.drain()
            return self.send(404, {"detail": "Not Found"})
        if self.apply_fault(take_fault("PUT", parts.path)):
            return
        key = parts.path[len("/signed/"):]
        query = parse_qs(parts.query)
        length = self.body_length()
        if length is None:
            self.drain()
            return self.s3_error(411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
        try:
            expires, signature = signed_urls.parse(query)
        except (KeyError, ValueError):
            self.drain()
            return self.s3_error(403, "AccessDenied", "Query-string authentication requires an expiry and a signature")
        if not hmac.compare_digest(signature, sign("PUT\n/%s\n%d" % (key, expires))):
            self.drain()
            return self.s3_error(403, "SignatureDoesNotMatch", "The request signature we calculated does not match")
        if expires < fixture_clock.now():
            self.drain()
            return self.s3_error(403, "AccessDenied", "Request has expired")
        digest = hashlib.sha256()
        remaining = length
        while remaining > 0:
            chunk = self.read_chunk(remaining)
            if not chunk:
                return  # client went away: nothing is stored
            digest.update(chunk)
            remaining -= len(chunk)
        self.store(key, digest.hexdigest(), length, self.headers.get("Content-Type"))
        self.send(200, b"", headers={"ETag": '"%s"' % digest.hexdigest()[:32]})

    def store(self, key, sha, size, content_type):
        with LOCK:
            entry = STATE["objects"].setdefault(key, {"count": 0})
            entry.update({"sha256": sha, "size": size, "content_type": content_type})
            entry["count"] += 1

    # ---- a minimal S3 under /fixture/ (enough for method: s3; signatures are recorded, not checked) ----
    def record_signed(self, parts):
        with LOCK:
            STATE["signed"].append([self.command, parts.path, parts.query, self.headers.get("x-amz-date")])

    def s3_put(self, parts):
        self.record_signed(parts)
        if self.apply_fault(take_fault("PUT", parts.path)):
            return
        key = parts.path[len("/fixture/"):]
        query = parse_qs(parts.query)
        length = self.body_length() or 0
        digest = hashlib.sha256()
        md5 = hashlib.md5()
        data = bytearray()
        remaining = length
        while remaining > 0:
            chunk = self.read_chunk(remaining)
            if not chunk:
                return
            digest.update(chunk)
            md5.update(chunk)
            if "uploadId" in query:
                data += chunk
            remaining -= len(chunk)
        etag = '"%s"' % md5.hexdigest()  # S3's ETag of a part or a single PUT (unencrypted) is its MD5
        if "uploadId" in query:
            with LOCK:
                upload = UPLOADS.get(query["uploadId"][0])
                if upload is None:
                    return self.s3_error(404, "NoSuchUpload", "The specified upload does not exist.")
                upload["parts"][int(query["partNumber"][0])] = bytes(data)
        else:
            self.store(key, digest.hexdigest(), length, self.headers.get("Content-Type"))
        self.send(200, b"", headers={"ETag": etag})

    def s3_post_object(self, parts):
        self.record_signed(parts)
        self.drain()
        key = parts.path[len("/fixture/"):]
        query = parse_qs(parts.query, keep_blank_values=True)
        if "uploads" in query:
            upload_id = uuid.uuid4().hex
            with LOCK:
                UPLOADS[upload_id] = {"key": key, "parts": {}}
            return self.send(200, "<InitiateMultipartUploadResult><Key>%s</Key><UploadId>%s</UploadId>"
                             "</InitiateMultipartUploadResult>" % (key, upload_id), "application/xml")
        with LOCK:
            upload = UPLOADS.pop(query.get("uploadId", [""])[0], None)
        if upload is None:
            return self.s3_error(404, "NoSuchUpload", "The specified upload does not exist.")
        whole = b"".join(upload["parts"][number] for number in sorted(upload["parts"]))
        self.store(key, hashlib.sha256(whole).hexdigest(), len(whole), None)
        self.send(200, "<CompleteMultipartUploadResult><ETag>\"%s-%d\"</ETag></CompleteMultipartUploadResult>"
                  % (hashlib.md5(whole).hexdigest(), len(upload["parts"])), "application/xml")

    def do_DELETE(self):
        if self.proxied():
            return
        parts = urlsplit(self.path)
        if not parts.path.startswith("/fixture/"):
            return self.send(404, {"detail": "Not Found"})
        self.record_signed(parts)
        self.apply_fault(take_fault("DELETE", parts.path))
        with LOCK:
            found = UPLOADS.pop(parse_qs(parts.query).get("uploadId", [""])[0], None)
            STATE["callbacks"]["abort"] = STATE["callbacks"].get("abort", 0) + (1 if found else 0)
        self.send(204 if found else 404, b"")

    def note_proxy(self):
        """A request line in absolute form (`POST http://host/path`) is what a client sends to its proxy."""
        if self.path.startswith("http://"):
            with LOCK:
                STATE["proxied"] += 1

    def do_POST(self):
        if url_echo.handle(self, STATE, LOCK) or fixture_clock.handle(self):
            return
        if self.proxied():
            return
        self.note_proxy()
        path = urlsplit(self.path).path
        if path == "/_faults":
            global FAULTS
            faults = self.read_json()
            with LOCK:
                FAULTS = faults if isinstance(faults, list) else []
            return self.send(200, {"faults": len(FAULTS)})
        if path.startswith("/fixture/"):
            return self.s3_post_object(urlsplit(self.path))
        if path.startswith("/s3post/"):
            return self.s3_post(path[len("/s3post/"):])
        if path.startswith(("/v1/", "/_jobs")):                # seed 000's Firestore (firestore.py)
            fault = take_fault("POST", path)
            if fault and fault.get("action") in ("act_then_reset", "act_then_hang"):
                self.act_fault = fault
            elif self.apply_fault(fault):
                return
            if firestore.route(self, "POST", path, self.read_json):
                return
        fault = take_fault("POST", path)
        if fault and fault.get("action") == "conflict":
            self.drain()
            return self.send(409, {"detail": "Audio recording already exists for pet injected today. Visit ID: %s"
                                   % uuid.uuid4()})
        expired = bool(fault and fault.get("action") == "expired_ticket")
        if fault and fault.get("action") in ("act_then_reset", "act_then_hang"):
            self.act_fault = fault
        elif not expired and self.apply_fault(fault):
            return
        body = self.read_json()
        if body is None:
            return self.send(400, {"detail": "body is not JSON"})
        with LOCK:
            STATE["last_json"][path] = body
            STATE["json"].setdefault(path, []).append(body)
        if path == "/api/upload-url":                       # seeds 000 (option B) and 001
            count("tickets", path)
            if not isinstance(body.get("user_id"), str):
                return self.send(422, {"detail": "user_id is required"})
            # 000 sends the file's name, 001 the content type ("video/mov"); each sends one of them.
            if not isinstance(body.get("filename", body.get("content_type")), str):
                return self.send(422, {"detail": "filename or content_type is required"})
            name = body.get("filename") or "%s.mov" % uuid.uuid4()
            storage_path = "users/%s/%s" % (body["user_id"], name)
            url = self.signed_put_url(storage_path, expired, body.get("content_type"))
            return self.send(200, {"success": True, "upload_url": url, "storage_path": storage_path,
                                   "upload_info": {"upload_url": url, "storage_path": storage_path}})
        if path == "/api/analyze-video":                    # seed 001
            storage_path = body.get("storage_path")
            with LOCK:
                stored = STATE["objects"].get(storage_path)
            if stored is None:
                return self.send(404, {"detail": "no video at %s" % storage_path})
            if not accept_callback(path, storage_path):
                return self.send(409, {"detail": "Video %s was already submitted for analysis" % storage_path})
            return self.send(200, {"success": True, "analysis": {
                "data_summary": "2 shots detected", "shots_detected": 2, "video_duration": 12.5,
                "data_analysis": None}})
        if path == "/upload-url":                           # seed 002
            count("tickets", path)
            ext = str(body.get("file_extension", "")).lower()
            if ext not in ("jpg", "jpeg", "png", "heic", "heif"):
                return self.send(400, {"error": "Invalid file extension. Allowed: jpg, jpeg, png, heic, heif"})
            key = "uploads/%s.%s" % (uuid.uuid4(), ext)
            return self.send(200, {"upload_url": self.signed_put_url(key, expired, "image/jpeg"), "image_key": key,
                                   "bucket_name": S3["bucket"] if S3 else "image-discerner-dev", "expires_in": URL_TTL,
                                   "content_type": "image/jpeg"})
        if path == "/analyze":                              # seed 002
            with LOCK:
                stored = STATE["objects"].get(body.get("image_key"))
            if stored is None or body.get("bucket_name") != (S3["bucket"] if S3 else "image-discerner-dev"):
                return self.send(404, {"error": "image not found"})
            if not accept_callback(path, body.get("image_key")):
                return self.send(409, {"detail": "Image %s was already analyzed" % body.get("image_key")})
            return self.send(200, {"success": True, "analysis_result": {"statusCode": 200, "body": {
                "analysis_complete": True, "timestamp": datetime.datetime.utcnow().isoformat() + "Z",
                "primary_subject": {"category": "commercial_vehicle", "subcategory": "delivery_van",
                                    "operator": "UPS", "fleet_id": "1Z2345", "confidence": 0.91,
                                    "additional_details": {"license_plate": "BRN123",
                                                           "text_identifiers": ["1Z2345", "UPS"],
                                                           "description": "UPS delivery vehicle"}},
                "processing_metadata": {"total_processing_time_ms": 12, "response_format_version": "2.0"}}}})
        if path.startswith("/api/v1/visit-transcripts/audio/upload/"):
            return self.helppet(path, body, expired)
        return self.send(404, {"detail": "Not Found"})

    def helppet(self, path, body, expired):              # seed 003
        if BEARER and self.headers.get("Authorization") != "Bearer " + BEARER:
            return self.send(401, {"detail": "Could not validate credentials"})
        if path.endswith("/initiate"):
            # Check and register as one step, like the real backend's unique (pet, day) row: two initiates
            # racing for one pet and day must not both get a ticket.
            with INITIATE_LOCK:
                status, answer = self.helppet_initiate(path, body, expired)
            return self.send(status, answer)
        match = re.fullmatch(r"/api/v1/visit-transcripts/audio/upload/complete/([^/]+)", path)
        if match:
            visit = VISITS.get(match.group(1))
            if visit is None:
                return self.send(404, {"detail": "Visit not found"})
            stored = stored_size(visit["s3_key"])
            if stored is None:
                return self.send(400, {"detail": "no audio uploaded for this visit"})
            size = body.get("file_size_bytes")
            if size is not None and size != stored:
                return self.send(400, {"detail": "file_size_bytes %r does not match %d" % (size, stored)})
            if not accept_callback("/api/v1/visit-transcripts/audio/upload/complete", match.group(1)):
                return self.send(409, {"detail": "Upload for visit %s was already completed" % match.group(1)})
            return self.send(200, {
                "uuid": match.group(1), "pet_id": visit["pet_id"], "visit_date": int(fixture_clock.now()), "full_text": "",
                "audio_transcript_url": "https://helppetai-visit-recordings.s3.amazonaws.com/" + visit["s3_key"],
                "state": "processing", "metadata": {
                    "s3_key": visit["s3_key"], "s3_bucket": "helppetai-visit-recordings",
                    "filename": visit["filename"],
                    "upload_completed_at": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "file_size_bytes": size, "duration_seconds": body.get("duration_seconds")}})
        return self.send(404, {"detail": "Not Found"})

    def helppet_initiate(self, path, body, expired):  # seed 003: POST …/initiate
        """The initiate's answer as (status, body), decided and registered under INITIATE_LOCK by the caller;
        sent after it is released, so a fault that holds the answer back does not hold other initiates."""
        count("tickets", path)
        pet_id = body.get("pet_id")
        if not isinstance(pet_id, str) or not isinstance(body.get("filename"), str):
            return (422, {"detail": "pet_id and filename are required"})
        if body.get("content_type") != "audio/m4a":
            return (422, {"detail": "content_type must be audio/m4a"})
        duration = body.get("estimated_duration_seconds")
        if duration is not None and not isinstance(duration, (int, float)):
            return (422, {"detail": "estimated_duration_seconds must be a number"})
        day = fixture_clock.today().isoformat()
        # One recording per pet per day: a second initiate is refused while the first ticket is live or its
        # recording arrived; after the ticket expired unused, initiating again renews it (seed 003's advice).
        with LOCK:
            existing = PET_DAY.get((pet_id, day))
            live = existing and VISITS[existing]["expires_at"] > fixture_clock.now()
        blocking = existing and (live or stored_size(VISITS[existing]["s3_key"]) is not None)
        if blocking:
            return (409, {"detail": "Audio recording already exists for pet %s today. Visit ID: %s"
                                   % (pet_id, existing)})
        visit_id = existing or str(uuid.uuid4())
        now = fixture_clock.utcnow()
        key = "visit-recordings/%s/%s/%s.m4a" % (now.strftime("%Y/%m/%d"), pet_id, uuid.uuid4())
        expiration = now + datetime.timedelta(seconds=-60 if expired else URL_TTL)
        bucket = S3_POST["bucket"] if S3_POST else "helppetai-visit-recordings"
        credential = "%s/%s/%s/s3/aws4_request" % (
            S3_POST["access_key"] if S3_POST else "AKIAFIXTURE", now.strftime("%Y%m%d"),
            S3_POST["region"] if S3_POST else "us-east-1")
        policy_doc = {"expiration": expiration.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "conditions": [
            {"bucket": bucket}, {"key": key}, {"Content-Type": "audio/m4a"},
            ["content-length-range", 1, 100 * 1024 * 1024],
            {"x-amz-credential": credential},
            {"x-amz-algorithm": "AWS4-HMAC-SHA256"}, {"x-amz-date": now.strftime("%Y%m%dT%H%M%SZ")}]}
        policy = base64.b64encode(json.dumps(policy_doc).encode()).decode()
        if S3_POST:
            signature = hmac.new(s3_signing_key(now.strftime("%Y%m%d")), policy.encode(), hashlib.sha256).hexdigest()
            upload_url = "%s/%s" % (S3_POST["endpoint"], bucket)
        else:
            signature = sign(policy)
            upload_url = "%s/s3post/%s" % (self.base(), bucket)
        with LOCK:
            STATE["secrets"] += [policy, signature]
            PET_DAY[(pet_id, day)] = visit_id
            VISITS[visit_id] = {"pet_id": pet_id, "s3_key": key, "filename": body["filename"],
                                "expires_at": fixture_clock.now() + (-60 if expired else URL_TTL)}
        return (200, {
            "visit_id": visit_id,
            "upload_url": upload_url,
            "upload_fields": {
                "key": key, "Content-Type": "audio/m4a", "policy": policy,
                "x-amz-credential": policy_doc["conditions"][4]["x-amz-credential"],
                "x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-date": policy_doc["conditions"][6]["x-amz-date"],
                "x-amz-signature": signature},
            "s3_key": key, "bucket": bucket, "expires_in": URL_TTL})

    def s3_post(self, bucket):
        """An S3 presigned POST target that checks the form's shape as strictly as S3 does, and more: every line
        break must be CRLF, every field must precede the file part, and the boundary must not occur in a value."""
        fault = take_fault("POST", "/s3post/" + bucket)
        if self.apply_fault(fault):
            return
        match = re.match(r'multipart/form-data;\s*boundary="?([^";]+)"?$', self.headers.get("Content-Type", ""))
        length = self.body_length()
        if not match or length is None:
            self.drain()
            return self.s3_error(400, "MalformedPOSTRequest", "The body of your POST request is not well-formed "
                                 "multipart/form-data.")
        boundary = match.group(1).encode()
        delimiter = b"--" + boundary
        # Read the head (fields + file part headers) line by line, then stream the file part.
        fields = []
        first = self.rfile.readline()
        consumed = len(first)
        if first != delimiter + b"\r\n":
            self.drain_rest(length - consumed)
            return self.s3_error(400, "MalformedPOSTRequest", "body does not start with the boundary and CRLF")
        file_info = None
        while file_info is None:
            headers = {}
            while True:
                line = self.rfile.readline(65536)
                consumed += len(line)
                if not line.endswith(b"\r\n"):
                    self.drain_rest(length - consumed)
                    return self.s3_error(400, "MalformedPOSTRequest", "a part header line does not end in CRLF")
                if line == b"\r\n":
                    break
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            disposition = headers.get("content-disposition", "")
            name_match = re.search(r'\bname="([^"]*)"', disposition)
            if not disposition.startswith("form-data") or not name_match:
                self.drain_rest(length - consumed)
                return self.s3_error(400, "MalformedPOSTRequest", "a part has no form-data name")
            name = name_match.group(1)
            file_match = re.search(r'\bfilename="([^"]*)"', disposition)
            if name == "file":
                file_info = {"filename": file_match.group(1) if file_match else None,
                             "content_type": headers.get("content-type")}
                break
            value = b""
            while True:
                line = self.rfile.readline(1 << 20)
                consumed += len(line)
                if not line:
                    return
                if line == delimiter + b"\r\n":
                    break
                value += line
            if not value.endswith(b"\r\n"):
                self.drain_rest(length - consumed)
                return self.s3_error(400, "MalformedPOSTRequest", "field %s does not end in CRLF" % name)
            fields.append([name, value[:-2].decode()])
        tail = b"\r\n" + delimiter + b"--\r\n"
        file_size = length - consumed - len(tail)
        if file_size < 0:
            self.drain_rest(length - consumed)
            return self.s3_error(400, "MalformedPOSTRequest", "body too short for the file part")
        digest = hashlib.sha256()
        remaining = file_size
        while remaining > 0:
            chunk = self.rfile.read(min(1 << 20, remaining))
            if not chunk:
                return
            digest.update(chunk)
            remaining -= len(chunk)
        if self.rfile.read(len(tail)) != tail:
            return self.s3_error(400, "MalformedPOSTRequest", "the file part is not followed by the closing boundary")
        with LOCK:
            STATE["last_json"]["/s3post/" + bucket] = {"fields": fields, "file": file_info, "size": file_size}
        values = dict(fields)
        for name, value in fields:
            if boundary in value.encode():
                return self.s3_error(400, "MalformedPOSTRequest", "the boundary occurs inside field %s" % name)
        policy = values.get("policy", "")
        if not hmac.compare_digest(values.get("x-amz-signature", ""), sign(policy)):
            return self.s3_error(403, "SignatureDoesNotMatch", "The request signature we calculated does not match")
        try:
            document = json.loads(base64.b64decode(policy))
            expiration = datetime.datetime.strptime(document["expiration"], "%Y-%m-%dT%H:%M:%S.%fZ")
        except (ValueError, KeyError):
            return self.s3_error(400, "InvalidPolicyDocument", "Invalid Policy: Invalid JSON.")
        if expiration < fixture_clock.utcnow():
            return self.s3_error(403, "AccessDenied", "Invalid according to Policy: Policy expired.")
        for condition in document["conditions"]:
            if isinstance(condition, dict):
                for name, expected in condition.items():
                    if name != "bucket" and values.get(name) != expected:
                        return self.s3_error(403, "AccessDenied",
                                             "Invalid according to Policy: Policy Condition failed: "
                                             "[\"eq\", \"$%s\", \"%s\"]" % (name, expected))
            elif condition[0] == "content-length-range" and not condition[1] <= file_size <= condition[2]:
                return self.s3_error(400, "EntityTooLarge" if file_size > condition[2] else "EntityTooSmall",
                                     "Your proposed upload exceeds the maximum allowed size")
        key = values.get("key", "").replace("${filename}", file_info["filename"] or "")
        self.store(key, digest.hexdigest(), file_size, values.get("Content-Type"))
        status = int(values.get("success_action_status", "204"))
        if status == 201:
            location = "%s/s3post/%s/%s" % (self.base(), bucket, key)
            xml = ("<PostResponse><Location>%s</Location><Bucket>%s</Bucket><Key>%s</Key><ETag>\"%s\"</ETag>"
                   "</PostResponse>" % (location, bucket, key, digest.hexdigest()[:32]))
            return self.send(201, xml, "application/xml", {"Location": location})
        self.send(status if status in (200, 204) else 204, b"", headers={"ETag": '"%s"' % digest.hexdigest()[:32]})

    def drain_rest(self, remaining):
        while remaining > 0:
            chunk = self.rfile.read(min(1 << 20, remaining))
            if not chunk:
                break
            remaining -= len(chunk)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):  # a reset we caused is not news
        pass


def main():
    global FAULTS, BEARER, URL_TTL, URL_STYLE, UPSTREAM, S3_POST, S3, SCHEME, ACCEPT_REPEATS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--faults", default="[]")
    parser.add_argument("--bearer")
    parser.add_argument("--url-ttl", type=int, default=900)
    parser.add_argument("--accept-repeats", action="store_true",
                        help="accept a repeated callback (200, counted) instead of refusing it with 409")
    parser.add_argument("--url-style", choices=signed_urls.STYLES, default="aws")
    parser.add_argument("--s3", help="JSON: endpoint, access_key, secret_key, region, bucket")
    parser.add_argument("--upstream", help="http://host:port that requests outside the fixture's routes go to")
    parser.add_argument("--s3-post", help="http://host:port/BUCKET of a real S3 that seed 003's tickets point at")
    parser.add_argument("--s3-access-key")
    parser.add_argument("--s3-secret-key")
    parser.add_argument("--s3-region", default="us-east-1")
    parser.add_argument("--firebase-token", help="seed 000's Firestore accepts only this Bearer token")
    parser.add_argument("--job-step", type=float, default=0.3, help="seconds between two steps of an analysis job")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve HTTPS with this PEM cert and key")
    args = parser.parse_args()
    # A test process may spawn us from a thread that blocks signals (libdispatch does); unblock them so SIGTERM
    # stops us, and leave when the parent is gone so a crashed test leaves no server behind.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    FAULTS = json.loads(args.faults)
    BEARER = args.bearer
    URL_TTL = args.url_ttl
    ACCEPT_REPEATS = args.accept_repeats
    URL_STYLE = args.url_style
    S3 = json.loads(args.s3) if args.s3 else None
    UPSTREAM = urlsplit(args.upstream).netloc if args.upstream else None
    if args.s3_post:
        endpoint, _, bucket = args.s3_post.rstrip("/").rpartition("/")
        S3_POST = {"endpoint": endpoint, "bucket": bucket, "access_key": args.s3_access_key,
                   "secret_key": args.s3_secret_key, "region": args.s3_region}
    server = Server(("127.0.0.1", 0), Handler)
    if args.tls:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        SCHEME = "https"
    temporary = args.port_file + ".tmp"
    with open(temporary, "w") as handle:
        handle.write(str(server.server_address[1]))
    os.rename(temporary, args.port_file)
    firestore.CONFIG["base"] = "%s://127.0.0.1:%d" % (SCHEME, server.server_address[1])
    firestore.configure(args.firebase_token, args.job_step, URL_TTL, lambda path: stored_size(path) is not None,
                        SECRET)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
