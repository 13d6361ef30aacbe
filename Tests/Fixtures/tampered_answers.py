"""A proxy fault (backend.py --upstream): the request goes to the real S3 server, and its answer comes back with a
checksum that is not the one S3 gave, as from a store that holds other bytes than the client sent.

  {"action": "tamper", "header": "x-amz-checksum-crc32c", "value": "AAAAAA=="}   that response header's value replaced
  {"action": "tamper", "element": "ChecksumCRC32C", "value": "AAAAAA=="}        that XML element's text replaced
                                                                                 (CompleteMultipartUpload's answer)
  {"action": "tamper", "element": "ETag", "occurrence": 2, ...}                   only the 2nd such element (1-based):
                                                                                 ListParts' part 2 as another part
An answer without the header or element is passed on as it came.
"""
import re


def tamper(fault, headers, body):
    """The answer's headers (a list of (name, value)) and body, with the fault's replacement made."""
    value = fault.get("value", "AAAAAA==")
    if "header" in fault:
        name = fault["header"].lower()
        headers = [(key, value if key.lower() == name else old) for key, old in headers]
    if "element" in fault:
        element = re.escape(fault["element"])
        pattern = re.compile(rb"(<" + element.encode() + rb">)[^<]*(</" + element.encode() + rb">)")
        seen = [0]

        def replace(match):
            seen[0] += 1
            if fault.get("occurrence", seen[0]) != seen[0]:
                return match.group(0)
            return match.group(1) + value.encode() + match.group(2)

        body = pattern.sub(replace, body)
    return headers, body
