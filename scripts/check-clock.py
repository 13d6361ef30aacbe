#!/usr/bin/env python3
"""Every "now" and every sleep of the library goes through one clock the tests can drive (#32 §6).

The run's clock is `WaitClock` (`Sources/IngestCore/Clock/`): `now` for elapsed times and deadlines, `date` for what
is stated as a date (a log line's time, a journal row's, a SigV4 signature's), `sleep` for every wait. Tests put a
`ManualClock` or a `DrivenClock` there. This check fails on a read of the real clock, or a real sleep, anywhere else
in `Sources/`, naming file:line, so one cannot creep back in:
    Date(), Date.now, Date(timeIntervalSinceNow:), .timeIntervalSinceNow, DispatchTime.now(), DispatchWallTime.now(),
    `.now() +` (a Dispatch deadline), ProcessInfo's systemUptime, clock_gettime, gettimeofday, time(nil),
    CFAbsoluteTimeGetCurrent, Thread.sleep, usleep, nanosleep, Task.sleep, ContinuousClock, SuspendingClock.
Comments and string literals are ignored. `Sources/IngestCore/Clock/` is where the real clock lives (`SystemClock`,
and the real-time deadlines of the few waits that do not follow the run's clock: see `RealTime.swift` there).

Usage: check-clock.py [--root DIR]   (DIR defaults to the checkout this script is in)
       check-clock.py --self-test   (checks that each pattern is caught, and that comments and strings are not)
"""
import os
import re
import sys

ALLOWED = ('Sources/IngestCore/Clock/',)
PATTERNS = [
    (re.compile(r'\bDate\(\s*\)'), 'Date()'),
    (re.compile(r'\bDate\.now\b'), 'Date.now'),
    (re.compile(r'\bDate\(\s*timeIntervalSinceNow:'), 'Date(timeIntervalSinceNow:)'),
    (re.compile(r'\.timeIntervalSinceNow\b'), '.timeIntervalSinceNow'),
    (re.compile(r'\bDispatch(?:Wall)?Time\.now\(\)'), 'DispatchTime.now()'),
    (re.compile(r'(?<![\w.])\.now\(\)\s*[+-]'), 'a Dispatch deadline (.now() + …)'),
    (re.compile(r'\bsystemUptime\b'), 'systemUptime'),
    (re.compile(r'\b(?:clock_gettime|gettimeofday|CFAbsoluteTimeGetCurrent)\s*\('), 'a C clock'),
    (re.compile(r'\btime\(\s*nil\s*\)'), 'time(nil)'),
    (re.compile(r'\b(?:Thread\.sleep|usleep|nanosleep|Task\.sleep)\b'), 'a real sleep'),
    (re.compile(r'\b(?:ContinuousClock|SuspendingClock)\b'), 'a Swift clock'),
]


def code_only(text):
    """`text` with comments and string literals blanked (line numbers kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                j += 2 if text[j] == '\\' else 1
            out.append(' ' * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return ''.join(out)


def problems_in(text, name):
    found = []
    for number, line in enumerate(code_only(text).split('\n'), 1):
        for pattern, what in PATTERNS:
            if pattern.search(line):
                found.append(f'{name}:{number}: {what} outside the clock: read the run\'s clock (WaitClock: now, '
                             f'date, sleep) instead')
    return found


def check(root):
    problems = []
    sources = os.path.join(root, 'Sources')
    for folder, _, files in sorted(os.walk(sources)):
        for file in sorted(files):
            if not file.endswith('.swift'):
                continue
            path = os.path.join(folder, file)
            relative = os.path.relpath(path, root)
            if relative.startswith(ALLOWED):
                continue
            problems += problems_in(open(path, encoding='utf-8').read(), relative)
    return problems


def self_test():
    caught = [
        'let t = Date()', 'let t = Date.now', 'x = Date(timeIntervalSinceNow: 1)', 'd.timeIntervalSinceNow',
        'DispatchTime.now()', 'sem.wait(timeout: .now() + 1)', 'ProcessInfo.processInfo.systemUptime',
        'clock_gettime(CLOCK_REALTIME, &t)', 'time(nil)', 'Thread.sleep(forTimeInterval: 1)', 'usleep(10)',
        'try await Task.sleep(for: .seconds(1))', 'let c = ContinuousClock()',
    ]
    ignored = ['// Date() in a comment', 'let s = "Date() in a string"', '/* usleep(1) */', 'clock.now',
               'Date(timeIntervalSince1970: 0)', 'settings.clock.date', 'let t = """\nDate()\n"""']
    failed = [c for c in caught if not problems_in(c, 'sample')]
    failed += [c for c in ignored if problems_in(c, 'sample')]
    for c in failed:
        print(f'check-clock self-test: wrong verdict on {c!r}', file=sys.stderr)
    return not failed


def main():
    args = sys.argv[1:]
    if args == ['--self-test']:
        sys.exit(0 if self_test() else 1)
    root = args[1] if args[:1] == ['--root'] else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f'check-clock: {len(problems)} read(s) of the real clock outside Sources/IngestCore/Clock/',
              file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
