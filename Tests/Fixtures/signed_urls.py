"""Signed-URL query strings in the forms real object stores use, for Tests/Fixtures/backend.py's /signed/ uploads.

Every style carries the same secret, the fixture's HMAC of "PUT\\n/<key>\\n<expires>", in its own parameter and
encoding, so ingest's redaction can be tested against each:
  aws     expires=<epoch>&X-Amz-Signature=<hex>
  gcs     Google Cloud Storage / Firebase v4: X-Goog-Algorithm, X-Goog-Credential, X-Goog-Date, X-Goog-Expires,
          X-Goog-SignedHeaders, X-Goog-Signature=<hex>
  gcs-v2  GoogleAccessId, Expires=<epoch>, Signature=<base64, URL-encoded>
  azure   SAS: sv, se=<ISO 8601 expiry>, sr, sp, sig=<base64, URL-encoded>
"""
import base64
import datetime
from urllib.parse import quote

STYLES = ("aws", "gcs", "gcs-v2", "azure")
ACCOUNT = "fixture@project.iam.gserviceaccount.com"


def build(style, expires, ttl, digest):
    """(query, secrets): the query of a URL expiring at `expires` (epoch) signed with `digest` (hex), and the
    signature as it appears in the URL and decoded (what must never be shown)."""
    value = base64.b64encode(bytes.fromhex(digest)).decode() if style in ("gcs-v2", "azure") else digest
    encoded = quote(value, safe="")
    secrets = [encoded] if encoded == value else [encoded, value]
    if style == "gcs":
        start = datetime.datetime.utcfromtimestamp(expires - ttl)
        credential = quote("%s/%s/auto/storage/goog4_request" % (ACCOUNT, start.strftime("%Y%m%d")), safe="")
        query = ("X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=%s&X-Goog-Date=%s&X-Goog-Expires=%d"
                 "&X-Goog-SignedHeaders=host&X-Goog-Signature=%s") % (
                     credential, start.strftime("%Y%m%dT%H%M%SZ"), ttl, encoded)
    elif style == "gcs-v2":
        query = "GoogleAccessId=%s&Expires=%d&Signature=%s" % (quote(ACCOUNT, safe=""), expires, encoded)
    elif style == "azure":
        stamp = datetime.datetime.utcfromtimestamp(expires).strftime("%Y-%m-%dT%H:%M:%SZ")
        query = "sv=2022-11-02&se=%s&sr=b&sp=cw&sig=%s" % (quote(stamp, safe=""), encoded)
    else:
        query = "expires=%d&X-Amz-Signature=%s" % (expires, encoded)
    return query, secrets


def parse(query):
    """(expires epoch, hex signature) from a parsed query (parse_qs) in any style; KeyError when one is missing."""
    if "X-Goog-Signature" in query:
        start = datetime.datetime.strptime(query["X-Goog-Date"][0], "%Y%m%dT%H%M%SZ")
        return epoch(start) + int(query["X-Goog-Expires"][0]), query["X-Goog-Signature"][0]
    if "GoogleAccessId" in query:
        return int(query["Expires"][0]), base64.b64decode(query["Signature"][0]).hex()
    if "sig" in query:
        end = datetime.datetime.strptime(query["se"][0], "%Y-%m-%dT%H:%M:%SZ")
        return epoch(end), base64.b64decode(query["sig"][0]).hex()
    return int(query["expires"][0]), query["X-Amz-Signature"][0]


def epoch(moment):
    return int((moment - datetime.datetime(1970, 1, 1)).total_seconds())
