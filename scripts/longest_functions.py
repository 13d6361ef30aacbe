#!/usr/bin/env python3
"""Lists the longest functions (func, init, deinit, computed bodies) in Swift sources, longest first.

Usage: scripts/longest_functions.py [--most N] [--over N] [DIR ...]   (default DIR: Sources)
A function's length is the lines from its declaration to its closing brace. Strings and comments are skipped when
matching braces, so a brace inside a literal does not end a body.
"""
import argparse
import os
import re
import sys

DECL = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|open|static|class|'
                  r'final|override|mutating|nonmutating|convenience|required|nonisolated|isolated|dynamic|'
                  r'@inlinable|@usableFromInline|borrowing|consuming)\s+)*(func\s+[^\s(<]+|init[?!]?|deinit|'
                  r'subscript)\b')


def strip_code(text):
    """Replaces string and comment contents with spaces, keeping newlines, so braces can be counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == '"':
            j = i + 1
            depth = 0
            while j < n and text[j] != '\n':
                if text[j] == '\\' and j + 1 < n and text[j + 1] == '(':
                    depth += 1; j += 2; continue
                if text[j] == '\\':
                    j += 2; continue
                if depth and text[j] == ')':
                    depth -= 1
                elif not depth and text[j] == '"':
                    break
                j += 1
            out.append(' ' * (j + 1 - i)); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)


def functions(path):
    with open(path, encoding='utf-8') as f:
        text = strip_code(f.read())
    lines = text.split('\n')
    for index, line in enumerate(lines):
        match = DECL.match(line)
        if not match:
            continue
        depth, opened = 0, False
        for end in range(index, len(lines)):
            for ch in lines[end]:
                if ch == '{':
                    depth += 1; opened = True
                elif ch == '}':
                    depth -= 1
            if opened and depth <= 0:
                yield end - index + 1, index + 1, match.group(1).split('(')[0]
                break
            if not opened and end > index and lines[end].strip() and not lines[end].lstrip().startswith(('->', 'throws', 'where', 'async')) and '{' not in lines[end] and end - index > 12:
                break


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--most', type=int, default=15)
    parser.add_argument('--over', type=int, default=0)
    parser.add_argument('dirs', nargs='*', default=['Sources'])
    args = parser.parse_args()
    rows = []
    for root in args.dirs:
        for folder, _, files in os.walk(root):
            for name in files:
                if name.endswith('.swift'):
                    path = os.path.join(folder, name)
                    rows += [(length, f'{path}:{line}', decl) for length, line, decl in functions(path)]
    rows.sort(reverse=True)
    shown = [r for r in rows if r[0] > args.over] if args.over else rows[:args.most]
    for length, place, decl in shown:
        print(f'{length:5d}  {place}  {decl}')
    print(f'{len(rows)} functions; {sum(1 for r in rows if r[0] > 80)} over 80 lines; '
          f'{sum(1 for r in rows if r[0] > 60)} over 60', file=sys.stderr)


if __name__ == '__main__':
    main()
