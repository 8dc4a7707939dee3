#!/usr/bin/env python3
"""The source gates of tools/lint.sh (STYLE.md points 10 and 11), over every C/C++ file under
src/, tests/, bench/ and tools/ (*.h, *.cc, *.cu, *.cuh, *.inc, *.def):

  - a file over 800 lines fails ("a file past 800 lines is a design smell to fix");
  - a file that does not open with a comment (its purpose) fails;
  - every function (or TEST body) over 100 lines is listed, as a report: it does not fail.

Generated files (first line "// GENERATED ...") are exempt from the length limit and the report.
The function scanner is a small brace matcher, not a C++ parser: comments, string and character
literals (raw strings too) and preprocessor lines are blanked first; a `{` at namespace or class
scope whose head (the text since the previous `;`, `{` or `}`) ends in a parameter list, possibly
followed by qualifiers or a constructor's initializer list, opens a function, which ends at the
matching `}`. Lambdas and blocks inside a function count towards that function.

Usage: tools/check_sources.py [--root DIR] [FILE...]
  DIR: the repository root (default: this checkout). FILEs are relative to DIR; without them,
  the files git tracks there, or every matching file when DIR is not a git checkout.
Output: one line per failure, then one line per long function, then a summary line:
  src/a.cc: 812 lines (the limit is 800)
  src/b.cc:1: does not open with a comment on its purpose
  long function: src/c.cc:40: Foo::Bar (132 lines)
Exit status 1 if any file failed, else 0. Deterministic (sorted), standard library only.
"""
import argparse
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100
FOLDERS = ("src/", "tests/", "bench/", "tools/")
SUFFIXES = (".h", ".cc", ".cu", ".cuh", ".inc", ".def")

# After a parameter list: cv/ref qualifiers, noexcept(...), override/final, a trailing return
# type, then optionally a constructor's initializer list (checked separately).
QUALIFIERS = re.compile(
    r"\)\s*(?:(?:const|volatile|mutable|noexcept(?:\s*\([^()]*\))?|override|final|&&|&)\s*)*"
    r"(?:->\s*[\w:<>,\s*&]+)?$")
INIT_LIST = re.compile(r"\)\s*(?:(?:const|noexcept)\s*)*:\s*[\w:]")
NOT_FUNCTION = re.compile(r"^(?:if|for|while|switch|catch|return|else|do|sizeof|alignof|decltype|"
                          r"static_assert|requires)\b")
SCOPE = re.compile(r"(?:^|\s)(?:namespace|class|struct|union|enum)\b|extern\s*$")
TEST_MACRO = re.compile(r"^(?:TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|BENCHMARK)$")


def Blank(text):
    """`text` with comments, string/char literals and preprocessor lines replaced by spaces;
    newlines are kept, so offsets map to the same lines."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True

    def Clear(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            Clear(i, j)
            i = j
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            Clear(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            Clear(i, j)
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or
                                                                       text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            Clear(i, j)
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            Clear(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


def FunctionName(head):
    """The name of the function whose head (signature) is `head`, which ends in `)` + qualifiers."""
    close = head.rfind(")")
    depth = 0
    for k in range(close, -1, -1):
        if head[k] == ")":
            depth += 1
        elif head[k] == "(":
            depth -= 1
            if depth == 0:
                break
    else:
        return "?"
    m = re.search(r"(~?[\w:]+(?:<[^<>]*>)?)\s*$", head[:k])
    if not m:
        return "?"
    name = m.group(1)
    if TEST_MACRO.match(name):
        name += "(" + " ".join(head[k + 1:close].split()) + ")"
    return name


def Functions(text):
    """[(first line, line count, name)] of the functions in `text` (its code, blanked)."""
    code = Blank(text)
    found = []
    stack = []  # one entry per open brace: "scope", "function", "block", "init" or "other"
    head_start = 0  # offset where the current head begins
    fn_start = None  # (offset of the head, name) of the open function
    for i, c in enumerate(code):
        if c == ";":
            if not any(k in ("function", "init", "other") for k in stack):
                head_start = i + 1
        elif c == "{":
            if any(k in ("function", "init", "other") for k in stack):
                stack.append("block")  # inside a body or an initializer
                continue
            head = code[head_start:i].strip()
            init = INIT_LIST.search(head)
            if init and re.search(r"[\w>]$", head):
                stack.append("init")  # a member initialized with braces: a_{1}
            elif SCOPE.search(head) and not head.endswith(")"):
                stack.append("scope")
                head_start = i + 1
            elif (QUALIFIERS.search(head) or init) and not NOT_FUNCTION.match(head):
                stack.append("function")
                offset = head_start + (len(code[head_start:i]) - len(code[head_start:i].lstrip()))
                fn_start = (offset, FunctionName(head[:init.start() + 1] if init else head))
            else:
                stack.append("other")
        elif c == "}":
            kind = stack.pop() if stack else "other"
            if kind == "function" and fn_start is not None:
                first = code.count("\n", 0, fn_start[0]) + 1
                last = code.count("\n", 0, i) + 1
                found.append((first, last - first + 1, fn_start[1]))
                fn_start = None
            if kind != "init" and not any(k in ("function", "init", "other") for k in stack):
                head_start = i + 1
    return found


def TrackedFiles(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", *FOLDERS], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        out = ""
    files = [f for f in out.splitlines() if f.endswith(SUFFIXES)]
    if files:
        return files
    found = []
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for name in filenames:
                if name.endswith(SUFFIXES):
                    found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def Check(root, files):
    """(failures, long functions): lines to print."""
    failures, long_functions = [], []
    for rel in sorted(set(files)):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.splitlines()
        first = next((l.strip() for l in lines if l.strip()), "")
        if not (first.startswith("//") or first.startswith("/*")):
            failures.append(f"{rel}:1: does not open with a comment on its purpose")
        if first.startswith("// GENERATED"):
            continue
        if len(lines) > MAX_FILE_LINES:
            failures.append(f"{rel}: {len(lines)} lines (the limit is {MAX_FILE_LINES})")
        if rel.endswith(".def"):
            continue  # X-macro tables: no function bodies
        for line, count, name in Functions(text):
            if count > MAX_FUNCTION_LINES:
                long_functions.append(f"long function: {rel}:{line}: {name} ({count} lines)")
    return failures, long_functions


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))))
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = args.files or TrackedFiles(args.root)
    files = [f for f in files if f.startswith(FOLDERS) and f.endswith(SUFFIXES)]
    failures, long_functions = Check(args.root, files)
    for line in failures + long_functions:
        print(line)
    print(f"check_sources: {len(files)} files, {len(failures)} failing (over {MAX_FILE_LINES} "
          f"lines or no purpose comment); {len(long_functions)} functions over "
          f"{MAX_FUNCTION_LINES} lines (listed, not a failure)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
