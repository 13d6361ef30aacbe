#!/usr/bin/env python3
"""The layers as the compiler should hold them, checked before `make test` builds anything.

1. Every `import X` (plain, `@testable`, `@_exported`, `@preconcurrency`) in a Swift target's sources names a module
   that target declares in Package.swift (a target, or a product of a package dependency), or a module of the system
   or the toolchain (SYSTEM below). SwiftPM lets a target import what a dependency of a dependency built, so an
   undeclared import compiles; this check fails on it instead, naming file:line.
2. A test target named after a layer (`IngestCoreTests`) depends only on that layer and the ones below it.
3. ARCHITECTURE.md's tables ("What each target may import", "Test targets") list every Swift target of Package.swift
   with exactly its dependencies, and its layer list names every library target with its folder.
4. Inside the library, folders do not use each other's types in a circle: scripts/folder_deps.py (the Native targets
   included) finds at most MAX_MUTUAL_PAIRS mutual folder pairs.
5. The model is built without C (#32 §2): no target IngestCore is built on, directly or through another, is a C
   module (a system library or a target with C sources) or a C wrapper (`Native*`). What the model needs from C (a
   file's stat, a digest) is a plain Swift value in IngestCore that a layer above it makes.

Package.swift is read directly (a regular-expression parse of its `.target(...)` calls, as this manifest writes
them: string names, `.product(name:package:)`, `path:`), not through `swift package dump-package`, which compiles the
manifest and takes seconds. A manifest it cannot read (no targets found) fails the check rather than passing it.

Usage: check-imports.py [--root DIR]   (DIR defaults to the checkout this script is in)
       check-imports.py --self-test   (runs the check on Tests/Fixtures/ImportsCheck/*: each must fail as named)
"""
import os
import re
import subprocess
import sys

# Modules every target may import without declaring them: the platform's and the toolchain's.
SYSTEM = {
    'Swift', 'Foundation', 'FoundationEssentials', 'FoundationInternationalization', 'FoundationNetworking',
    'FoundationXML', 'Glibc', 'Musl', 'Darwin', 'os', 'Dispatch', 'Synchronization', 'Observation', 'RegexBuilder',
    'XCTest', 'Testing', '_Concurrency', '_StringProcessing', 'CoreFoundation',
}
# The products of package dependencies whose module name differs from the product's name (none today).
PRODUCT_MODULES = {}
# No two folders use each other's types, the Native targets' folders included (#32 §3).
MAX_MUTUAL_PAIRS = 0
# The targets built on no C at all, neither a C module nor a Native wrapper (#32 §2): the model and its tests.
WITHOUT_C = ('IngestCore', 'IngestCoreTests')

IMPORT = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*import\s+(?:(?:struct|class|enum|protocol|func|var|let|'
                    r'typealias)\s+)?([A-Za-z_]\w*)', re.M)
TARGET_CALL = re.compile(r'\.(target|executableTarget|testTarget|systemLibrary|macro|plugin)\s*\(')


def balanced(text, start):
    """The text from `start` (just after an opening parenthesis or bracket) to its matching closer."""
    depth, i = 1, start
    pairs = {'(': 1, '[': 1, ')': -1, ']': -1}
    while i < len(text) and depth:
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1)
        elif c in pairs:
            depth += pairs[c]
        i += 1
    return text[start:i - 1]


def strip_comments(text):
    return re.sub(r'//[^\n]*', '', text)


def read_manifest(root):
    """{name: {'kind', 'deps': [modules], 'path'}} for every target Package.swift declares."""
    text = strip_comments(open(os.path.join(root, 'Package.swift'), encoding='utf-8').read())
    targets = {}
    for m in TARGET_CALL.finditer(text):
        body = balanced(text, m.end())
        name = re.match(r'\s*name:\s*"([^"]+)"', body)
        if not name:
            continue  # `.target(name:)` inside a dependency list starts with name: too; a bare call is not a target
        kind = m.group(1)
        deps = []
        dm = re.search(r'\bdependencies:\s*\[', body)
        if dm:
            for d in re.finditer(r'\.product\(\s*name:\s*"([^"]+)"[^)]*\)|\.(?:target|byName)\(\s*name:\s*"([^"]+)"'
                                 r'[^)]*\)|"([^"]+)"', balanced(body, dm.end())):
                product, target, plain = d.groups()
                deps.append(PRODUCT_MODULES.get(product, product) if product else target or plain)
        path = re.search(r'\bpath:\s*"([^"]+)"', body)
        default = ('Tests/' if kind == 'testTarget' else 'Sources/') + name.group(1)
        targets[name.group(1)] = {'kind': kind, 'deps': deps, 'path': path.group(1) if path else default}
    return targets


def blank(text):
    """Block comments and multi-line string literals (Python in a test's fixture, say) as blank lines."""
    def keep_lines(m):
        return '\n' * m.group(0).count('\n')
    return re.sub(r'/\*.*?\*/|(#*)"""(?:.|\n)*?"""\1', keep_lines, text)


def swift_files(top):
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for f in sorted(files):
            if f.endswith('.swift'):
                yield os.path.join(d, f)


def undeclared_imports(root, targets):
    problems = []
    for name, t in sorted(targets.items()):
        if t['kind'] == 'systemLibrary':
            continue
        allowed = set(t['deps']) | SYSTEM | {name}
        for path in swift_files(os.path.join(root, t['path'])):
            text = blank(open(path, encoding='utf-8', errors='replace').read())
            for m in IMPORT.finditer(text):
                module = m.group(1)
                if module not in allowed:
                    line = text.count('\n', 0, m.start(1)) + 1
                    rel = os.path.relpath(path, root)
                    problems.append(f'{rel}:{line}: imports {module}, which Package.swift does not give target '
                                    f'{name} (its dependencies: {", ".join(t["deps"]) or "none"})')
    return problems


def closure(targets, name):
    """The targets `name` is built on, directly or through others (products of other packages left out)."""
    seen, todo = set(), list(targets.get(name, {}).get('deps', []))
    while todo:
        d = todo.pop()
        if d in targets and d not in seen:
            seen.add(d)
            todo += targets[d]['deps']
    return seen


def layer_problems(targets):
    """A test target named after a layer (`IngestCoreTests`) depends only on that layer and the ones below it; the
    test-support targets it uses count as their own dependencies. A support target that starts the tests' servers
    may talk to them over a C wrapper (IngestTestSupport over NativeCurl): that lends the test no layer of the
    library, so only the Ingest* targets a support target is built on are held to the layer."""
    problems = []
    for name, t in sorted(targets.items()):
        layer = name[:-len('Tests')]
        if t['kind'] != 'testTarget' or layer not in targets:
            continue
        allowed = closure(targets, layer) | {layer}
        for dep in t['deps']:
            if dep not in targets:
                continue
            support = dep.endswith('TestSupport')
            above = sorted(d for d in closure(targets, dep) | {dep}
                           if d not in allowed and not d.endswith('TestSupport')
                           and not (support and not d.startswith('Ingest')))
            if above:
                problems.append(f'Package.swift: {name} depends on {dep}, which brings {", ".join(above)}: above '
                                f'its layer {layer}')
    return problems


def has_c_sources(root, path):
    for _, _, files in os.walk(os.path.join(root, path)):
        if any(f.endswith(('.c', '.h', '.cpp', '.modulemap')) for f in files):
            return True
    return False


def c_problems(root, targets):
    """A target of WITHOUT_C built on a C module or a Native wrapper, named with the chain that brings it."""
    problems = []
    for name in WITHOUT_C:
        if name not in targets:
            continue
        for dep in sorted(closure(targets, name)):
            t = targets[dep]
            if t['kind'] == 'systemLibrary' or dep.startswith('Native') or has_c_sources(root, t['path']):
                via = sorted(d for d in targets[name]['deps'] if d in targets and dep in closure(targets, d))
                how = f'through {", ".join(via)}' if via else 'directly'
                problems.append(f'Package.swift: {name} is built on {dep} ({how}), a C module or '
                                f'wrapper: {name} is built without C; what it needs from C is a plain value in it, '
                                f'made by a layer above')
    return problems


def doc_tables(doc):
    """{target: [modules]} from every Markdown table whose first column is a `target` in backticks."""
    rows = {}
    for m in re.finditer(r'^\|\s*`([^`]+)`\s*\|([^|\n]*)\|', doc, re.M):
        cell = re.sub(r'\([^)]*\)', '', m.group(2))  # "(a {{probe.…}} probes on demand)" explains, does not list
        rows[m.group(1)] = [w.strip() for w in cell.split(',') if w.strip() and w.strip() != '—']
    return rows


def architecture_problems(root, targets):
    path = os.path.join(root, 'ARCHITECTURE.md')
    if not os.path.exists(path):
        return []
    doc = open(path, encoding='utf-8').read()
    rows = doc_tables(doc)
    problems = []
    swift = {n: t for n, t in targets.items() if t['kind'] != 'systemLibrary'}
    for name, t in sorted(swift.items()):
        if name not in rows:
            problems.append(f'ARCHITECTURE.md: no row for target `{name}` (Package.swift: {", ".join(t["deps"])})')
        elif sorted(rows[name]) != sorted(t['deps']):
            problems.append(f'ARCHITECTURE.md: `{name}` imports {", ".join(rows[name]) or "nothing"}; Package.swift '
                            f'gives it {", ".join(t["deps"]) or "nothing"}')
    for name in sorted(set(rows) - set(swift)):
        problems.append(f'ARCHITECTURE.md: a row for `{name}`, which Package.swift does not declare')
    listed = dict(re.findall(r'^(\S+)\s+((?:Sources|Tests)/\S*?)/?\s', doc, re.M))
    for name, t in sorted(swift.items()):
        if t['kind'] in ('target', 'executableTarget') and t['path'].startswith('Sources/'):
            if listed.get(name) != t['path']:
                problems.append(f'ARCHITECTURE.md: the layer list has {name} at {listed.get(name)}; Package.swift '
                                f'at {t["path"]}')
    return problems


def mutual_pairs(root):
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'folder_deps.py')
    env = dict(os.environ, FOLDER_DEPS_EXCLUDE='ingest,IngestFuzz')
    out = subprocess.run([sys.executable, tool], cwd=root, env=env, capture_output=True, text=True, check=True).stdout
    last = out.strip().splitlines()[-1]
    count = int(re.match(r'mutual folder pairs: (\d+)', last).group(1))
    if count > MAX_MUTUAL_PAIRS:
        return [f'scripts/folder_deps.py: {last} (at most {MAX_MUTUAL_PAIRS} expected)']
    return []


def check(root):
    targets = read_manifest(root)
    if not any(t['kind'] != 'systemLibrary' for t in targets.values()):
        return [f'{root}/Package.swift: no Swift targets found (a manifest this script cannot read)']
    problems = undeclared_imports(root, targets) + layer_problems(targets) + c_problems(root, targets)
    problems += architecture_problems(root, targets)
    if os.path.isdir(os.path.join(root, 'Sources')) and os.path.exists(os.path.join(root, 'ARCHITECTURE.md')):
        problems += mutual_pairs(root)
    return problems


def self_test(root):
    """Each fixture under Tests/Fixtures/ImportsCheck must report exactly the problems its `expected` file lists (the
    start of each message): two of them must fail, so this check cannot pass by finding nothing."""
    base = os.path.join(root, 'Tests', 'Fixtures', 'ImportsCheck')
    failures = 0
    for case in sorted(c for c in os.listdir(base) if os.path.isdir(os.path.join(base, c))):
        expected = open(os.path.join(base, case, 'expected'), encoding='utf-8').read().strip().splitlines()
        found = check(os.path.join(base, case))
        missing = [e for e in expected if not any(p.startswith(e) for p in found)]
        unexpected = [p for p in found if not any(p.startswith(e) for e in expected)]
        if missing or unexpected:
            failures += 1
            print(f'self-test {case}: not reported {missing}; reported, not expected {unexpected}', file=sys.stderr)
    return failures


def main():
    args = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args[:1] == ['--root']:
        root = args[1]
    if args[:1] == ['--self-test']:
        sys.exit(1 if self_test(root) else 0)
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(f'check-imports: {len(problems)} problem(s)')


main()
